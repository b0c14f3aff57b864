"""The draw page (who may open it and draw, what it does) and the coverage page's traffic
columns (share of traffic beside share of the set, far and underpowered slices)."""

import pytest
from django.urls import reverse

from goldenset.models import Membership, Query
from goldenset.services import membership_grant
from tests.support import factories
from tests.support.factories import sliced_set
from tests.traffic.test_sampling import make_log
from traffic.coverage import traffic_coverage
from traffic.models import LoggedQuery, QueryDraw, QueryLog
from traffic.normalizing import query_merge_key
from traffic.sampling import draw_queries

pytestmark = pytest.mark.django_db

PAGES = ["query_draws"]
ACTIONS = ["query_draw_create", "query_draw_top_up"]
DRAW = {"log": "prod", "design": "stratified", "size": 10, "strata": "lang", "allocation": "queries", "seed": 4}


@pytest.fixture
def golden_set(owner):
    golden_set = factories.golden_set(manager=owner)
    make_log(golden_set)
    return golden_set


def url(name: str, slug: str = "tiny") -> str:
    return reverse(name, kwargs={"slug": slug})


def visit(client, name, data=None):
    return client.post(url(name), data or DRAW) if name in ACTIONS else client.get(url(name))


# --- permissions --------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_anonymous_visitors_are_sent_to_log_in(client, golden_set, name):
    response = visit(client, name)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_annotators_and_adjudicators_get_not_found_and_draw_nothing(client, golden_set, teammate, role, name):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    assert visit(client, name).status_code == 404
    assert not QueryDraw.objects.exists()


@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_a_manager_of_another_set_gets_not_found(client, golden_set, stranger, name):
    factories.golden_set("other", manager=stranger)
    client.force_login(stranger)
    assert visit(client, name).status_code == 404
    assert not QueryDraw.objects.exists()


# --- drawing from the page ----------------------------------------------------------


def test_a_manager_draws_and_tops_up_from_the_page_and_sees_the_draws(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(url("query_draw_create"), DRAW, follow=True)
    assert "Drew 10 queries from prod" in response.content.decode()
    response = client.post(url("query_draw_top_up"), {"log": "prod", "stratum": "de", "to": 8, "seed": 1}, follow=True)
    body = response.content.decode()
    assert "Drew 4 more queries of stratum de: it holds 8 now." in body
    assert body.count("data-draw=") == 2 and "top-up of de to 8" in body
    assert QueryDraw.objects.get(target__stratum="de").created_by == owner


def test_bad_input_on_the_page_is_named_and_draws_nothing(client, golden_set, owner):
    client.force_login(owner)
    body = client.post(url("query_draw_create"), {**DRAW, "strata": "country"}, follow=True).content.decode()
    assert "Not drawn: strata: log &#x27;prod&#x27; has no field &#x27;country&#x27;" in body
    body = client.post(url("query_draw_create"), {**DRAW, "size": 0}, follow=True).content.decode()
    assert "Not drawn: size:" in body
    assert not QueryDraw.objects.exists()


def test_log_text_on_the_page_is_escaped(client, owner):
    golden_set = factories.golden_set(manager=owner)
    log = make_log(golden_set, name="<b>x</b>", queries=3)
    LoggedQuery.objects.filter(log=log).update(fields={"lang": "<script>alert(1)</script>"})
    client.force_login(owner)
    client.post(url("query_draw_create"), {**DRAW, "log": log.name, "size": 2}, follow=True)
    body = client.get(url("query_draws")).content.decode()
    assert "<b>x</b>" not in body and "&lt;b&gt;x&lt;/b&gt;" in body and "<script>alert(1)" not in body


# --- coverage of the traffic ----------------------------------------------------------


def sliced_log(golden_set, shares: dict[str, int]):
    """A log whose `lang` values have these event counts, spread over a few queries each."""
    log = QueryLog.objects.create(golden_set=golden_set, name="prod", fields=["lang"])
    rows = []
    for lang, events in shares.items():
        for n in range(4):
            text = f"{lang} query {n}"
            rows.append(LoggedQuery(log=log, normalized=query_merge_key(text), text=text, count=events // 4, fields={"lang": lang}))
    LoggedQuery.objects.bulk_create(rows)
    return log


def test_traffic_coverage_sets_each_slice_share_of_traffic_beside_its_share_of_the_set(owner):
    golden_set = sliced_set(manager=owner, queries=30, langs=3)
    version = golden_set.latest_version()
    langs = sorted({q.metadata["lang"] for q in Query.objects.filter(golden_set=golden_set)})
    # The set has a third of its queries in each language; the traffic 80/18/2 and a fourth, absent from the set.
    sliced_log(golden_set, {langs[0]: 8000, langs[1]: 1800, langs[2]: 200, "xx": 400})
    coverage = traffic_coverage(golden_set, version)
    rows = {one.value: one for one in coverage.slices}
    assert rows[langs[0]].traffic_share == pytest.approx(8000 / 10400) and rows[langs[0]].set_share == pytest.approx(1 / 3)
    assert rows[langs[0]].flags[:1] == ["under-represented"]
    assert not rows[langs[1]].far
    assert rows[langs[2]].flags[:1] == ["over-represented"]
    assert rows["xx"].set_queries == 0 and rows["xx"].flags[:1] == ["under-represented"]
    assert coverage.evaluation is not None
    assert all(one.underpowered is not None for one in coverage.slices if one.value != "xx")


def test_the_coverage_page_shows_the_traffic_table_only_when_the_set_has_a_log(client, owner):
    golden_set = sliced_set(manager=owner, queries=12, langs=2)
    client.force_login(owner)
    assert "Coverage of the traffic" not in client.get(reverse("coverage", kwargs={"slug": golden_set.slug})).content.decode()
    langs = sorted({q.metadata["lang"] for q in Query.objects.filter(golden_set=golden_set)})
    sliced_log(golden_set, {langs[0]: 9000, langs[1]: 1000})
    body = client.get(reverse("coverage", kwargs={"slug": golden_set.slug})).content.decode()
    assert "Coverage of the traffic" in body and f'data-traffic-slice="lang={langs[0]}"' in body
    assert "over-represented" in body  # 0.5 of the set, 0.1 of the traffic


def test_the_draws_page_costs_the_same_few_queries_however_many_draws(client, golden_set, owner, django_assert_max_num_queries):
    client.force_login(owner)
    draw_queries(golden_set=golden_set, log_name="prod", size=3, design="srs", seed=1)
    with django_assert_max_num_queries(12) as one:
        assert client.get(url("query_draws")).status_code == 200
    for seed in range(2, 7):
        draw_queries(golden_set=golden_set, log_name="prod", size=3, design="srs", seed=seed, user=owner)
    with django_assert_max_num_queries(len(one.captured_queries)):
        body = client.get(url("query_draws")).content.decode()
    assert body.count("data-draw=") == 6
