"""Every judging URL refuses people without the role: anonymous visitors go to the login
page; strangers and holders of another role get 404, so nobody learns which sets exist."""

import pytest
from django.urls import reverse

from goldenset.models import Judgment, Membership
from goldenset.services import membership_grant
from labeling.models import JudgingTask
from tests.labeling.judging.judging_data import pooled_set

pytestmark = pytest.mark.django_db

JUDGING_URLS = [
    ("get", "judging_screen", False),
    ("get", "judging_next", False),
    ("post", "judging_judge", True),
    ("post", "judging_skip", True),
    ("post", "judging_undo", False),
]


@pytest.fixture
def task(pool):
    return JudgingTask.objects.filter(pool=pool).order_by("position").first()


def url_of(name: str, golden_set, task, with_task: bool) -> str:
    return reverse(name, args=[golden_set.slug, task.pk] if with_task else [golden_set.slug])


def call(client, method: str, url: str):
    return client.post(url, {"grade": "1"}) if method == "post" else client.get(url)


@pytest.mark.parametrize("method,name,with_task", JUDGING_URLS)
def test_anonymous_visitors_are_sent_to_log_in(client, golden_set, task, method, name, with_task):
    url = url_of(name, golden_set, task, with_task)
    response = call(client, method, url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("method,name,with_task", JUDGING_URLS)
def test_strangers_get_404(client, golden_set, task, stranger, method, name, with_task):
    client.force_login(stranger)
    assert call(client, method, url_of(name, golden_set, task, with_task)).status_code == 404
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("role", [Membership.Role.MANAGER, Membership.Role.ADJUDICATOR])
@pytest.mark.parametrize("method,name,with_task", [url for url in JUDGING_URLS if url[1] != "judging_screen"])
def test_other_roles_than_annotator_get_404(client, golden_set, task, teammate, role, method, name, with_task):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    assert call(client, method, url_of(name, golden_set, task, with_task)).status_code == 404
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("method,name,with_task", JUDGING_URLS)
def test_an_annotator_of_another_set_gets_404(client, golden_set, task, teammate, method, name, with_task):
    other = pooled_set("other-set").golden_set
    membership_grant(user=teammate, golden_set=other, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    assert call(client, method, url_of(name, golden_set, task, with_task)).status_code == 404
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("role", [Membership.Role.MANAGER, Membership.Role.ADJUDICATOR])
def test_managers_and_adjudicators_preview_the_screen_without_a_lease_or_a_form(client, golden_set, task, teammate, role):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Preview: this is the judging screen" in body and task.query.text in body
    assert "<form" not in body.split('id="pair"')[1]  # nothing to send: no grade, skip or undo
    assert not JudgingTask.objects.filter(leased_to__isnull=False).exists()
    assert not Judgment.objects.exists()


def test_the_judging_list_needs_a_login(client):
    response = client.get(reverse("judging_home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_judging_list_of_a_stranger_is_empty(client, golden_set, stranger):
    client.force_login(stranger)
    response = client.get(reverse("judging_home"))
    assert response.status_code == 200
    assert golden_set.slug not in response.content.decode()
