"""The set's prompt-cost figures on the settings page and their service: who may change
them, what is refused (naming the field) and that nothing is half written."""

from decimal import Decimal

import pytest
from django.urls import reverse

from goldenset.models import GoldenSet, Membership
from goldenset.prompt_cost import golden_set_prompt_cost_update
from goldenset.services import membership_grant
from lib.errors import GoldsetError

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("alerting", factory="alerting_set", manager="owner")]

GOOD = {"monthly_queries": "250000", "price_per_million_input": "0.15", "tokens_per_page": "300", "context_token_budget": "1200"}


def post(client, slug="alerting", **changes):
    return client.post(reverse("prompt_cost_settings", kwargs={"slug": slug}), {**GOOD, **changes})


def figures(slug="alerting") -> tuple:
    golden_set = GoldenSet.objects.get(slug=slug)
    return golden_set.monthly_queries, golden_set.price_per_million_input, golden_set.tokens_per_page, golden_set.context_token_budget


def test_the_settings_page_shows_the_seeds_figures_by_default(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("evaluation_settings", kwargs={"slug": "alerting"})).content.decode()
    assert 'name="monthly_queries" value="1000000"' in body
    assert 'name="price_per_million_input" value="3.0000"' in body
    assert 'name="tokens_per_page" value="400"' in body
    assert 'name="context_token_budget"' in body and "Empty means k_final whole pages" in body


def test_a_manager_saves_the_figures(client, golden_set, owner):
    client.force_login(owner)
    response = post(client)
    assert response.status_code == 302 and response["Location"] == reverse("evaluation_settings", kwargs={"slug": "alerting"})
    assert figures() == (250_000, Decimal("0.15"), 300, 1200)
    # An empty budget means k_final whole pages.
    post(client, context_token_budget="")
    assert figures()[3] is None


def test_anonymous_visitors_are_sent_to_log_in_and_nothing_changes(client, golden_set):
    response = post(client)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert figures() == (1_000_000, Decimal(3), 400, None)


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
def test_annotators_and_adjudicators_get_not_found_and_nothing_changes(client, golden_set, teammate, role):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    assert post(client).status_code == 404
    assert figures() == (1_000_000, Decimal(3), 400, None)


def test_a_stranger_gets_not_found_and_another_sets_manager_cannot_reach_this_one(client, golden_set, stranger):
    client.force_login(stranger)
    assert post(client).status_code == 404
    assert post(client, slug="nope").status_code == 404
    assert figures() == (1_000_000, Decimal(3), 400, None)


def test_the_page_only_takes_a_post(client, golden_set, owner):
    client.force_login(owner)
    assert client.get(reverse("prompt_cost_settings", kwargs={"slug": "alerting"})).status_code == 405


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("monthly_queries", "-1", "greater than or equal to 0"),
        ("price_per_million_input", "abc", "Enter a number"),
        ("price_per_million_input", "0.00001", "decimal places"),
        ("tokens_per_page", "0", "greater than or equal to 1"),
        ("context_token_budget", "100", "holds no page of 300 tokens"),
    ],
)
def test_bad_figures_are_refused_beside_their_field_and_nothing_is_written(client, golden_set, owner, field, value, words):
    client.force_login(owner)
    response = post(client, **{field: value})
    assert response.status_code == 200
    body = response.content.decode()
    assert words in body
    # The message sits in the field's own block.
    block = body[body.index(f'name="{field}"') :]
    assert words in block[: block.index("</div>")]
    assert figures() == (1_000_000, Decimal(3), 400, None)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"monthly_queries": "many"}, "monthly_queries", "whole number"),
        ({"monthly_queries": 10**13}, "monthly_queries", "from 0 to"),
        ({"tokens_per_page": True}, "tokens_per_page", "whole number"),
        ({"price_per_million_input": "NaN"}, "price_per_million_input", "a number of dollars"),
        ({"price_per_million_input": -1}, "price_per_million_input", "from 0 to"),
        ({"context_token_budget": 0}, "context_token_budget", "from 1 to"),
    ],
)
def test_the_service_names_the_field_at_fault_and_writes_nothing(golden_set, changes, field, words):
    values = {"monthly_queries": 5, "price_per_million_input": "1", "tokens_per_page": 100, "context_token_budget": None, **changes}
    with pytest.raises(GoldsetError) as raised:
        golden_set_prompt_cost_update(golden_set=golden_set, **values)
    assert raised.value.field == field and words in raised.value.message
    assert figures() == (1_000_000, Decimal(3), 400, None)
