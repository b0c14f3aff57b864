"""Incidents through the API: list (?state=), one with its alerts, and PATCH of its state and
owner; every operation against every kind of caller. An incident is made by storing an
alert of the tiny set and adding it through incident_alert_add, as the rules do."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.alerts.incidents import incident_alert_add
from evaluation.models import Alert, Incident
from goldenset.models import Membership
from goldenset.services import membership_grant
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/incidents/"


@pytest.fixture
def incident(golden_set, version, run) -> Incident:
    alert = Alert.objects.create(
        golden_set=golden_set, version=version, run=run, kind=Alert.Kind.SLICE_UNDER_FLOOR, metric="recall@10",
        slice="query:lang=de", value=0.5, reference=0.75, message="recall@10 in slice query:lang=de is 0.500",
    )  # fmt: skip
    return incident_alert_add(alert)


def test_a_reader_lists_incidents_and_reads_one_with_its_alerts(token, golden_set, incident):
    api = client_for(token("read", golden_set))
    [listed] = api.get(BASE).json()["results"]
    assert (listed["id"], listed["state"], listed["alert_count"], listed["owner"]) == (incident.pk, "open", 1, None)
    detail = api.get(f"{BASE}{incident.pk}/").json()
    [alert] = detail["alerts"]
    assert (alert["kind"], alert["slice"], alert["value"], alert["reference"], alert["sent"]) == (
        "slice_under_floor", "query:lang=de", 0.5, 0.75, True,
    )  # fmt: skip
    assert api.get(BASE, {"state": "resolved"}).json()["results"] == []


def test_a_manager_acknowledges_mutes_assigns_and_resolves(token, golden_set, incident, manager):
    api = client_for(token("write", golden_set))
    answer = api.patch(f"{BASE}{incident.pk}/", {"state": "acknowledged"}, format="json")
    assert answer.status_code == 200 and answer.json()["state"] == "acknowledged" and answer.json()["owner"] == "manager"
    until = timezone.now() + timedelta(hours=3)
    answer = api.patch(f"{BASE}{incident.pk}/", {"state": "muted", "muted_until": until.isoformat()}, format="json")
    assert answer.json()["state"] == "muted"
    assert api.patch(f"{BASE}{incident.pk}/", {"owner": ""}, format="json").json()["owner"] is None
    assert api.patch(f"{BASE}{incident.pk}/", {"state": "resolved"}, format="json").json()["state"] == "resolved"
    assert api.patch(f"{BASE}{incident.pk}/", {"state": "open"}, format="json").json()["state"] == "open"


def test_bad_input_is_named_by_its_field(token, golden_set, incident):
    api = client_for(token("write", golden_set))
    assert assert_error(api.patch(f"{BASE}{incident.pk}/", {"state": "muted"}, format="json"), 422)["field"] == "muted_until"
    assert assert_error(api.patch(f"{BASE}{incident.pk}/", {"owner": "nobody"}, format="json"), 422)["field"] == "owner"
    assert assert_error(api.patch(f"{BASE}{incident.pk}/", {}, format="json"), 422)["field"] == "state"
    assert "state" in str(assert_error(api.patch(f"{BASE}{incident.pk}/", {"state": "gone"}, format="json"), 400))
    assert_error(api.get(BASE, {"state": "sleeping"}), 400)
    assert_error(api.get(f"{BASE}999999/"), 404)


def test_anonymous_callers_cannot_read(incident):
    assert client_for().get(BASE).status_code == 401
    assert client_for().get(f"{BASE}{incident.pk}/").status_code == 401


def test_a_read_token_cannot_change_an_incident(token, golden_set, incident):
    api = client_for(token("read", golden_set))
    assert_error(api.patch(f"{BASE}{incident.pk}/", {"state": "resolved"}, format="json"), 403)
    assert Incident.objects.get().state == "open"


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
def test_annotators_and_adjudicators_cannot_change_an_incident(token, golden_set, incident, make_user, role):
    person = make_user(f"person-{role}")
    membership_grant(user=person, golden_set=golden_set, role=role)
    api = client_for(token("write", owner=person))  # not bound to the set: its roles decide
    answer = api.patch(f"{BASE}{incident.pk}/", {"state": "resolved"}, format="json")
    assert answer.status_code in (403, 404)
    assert Incident.objects.get().state == "open"


def test_the_manager_of_another_set_cannot_read_or_change_it(token, incident, make_user):
    from tests.api import make_set

    stranger = make_user("stranger")
    make_set("theirs", stranger)
    api = client_for(token("write", owner=stranger))
    assert_error(api.get(BASE), 404)
    assert_error(api.patch(f"{BASE}{incident.pk}/", {"state": "resolved"}, format="json"), 404)
    assert Incident.objects.get().state == "open"


def test_the_list_costs_the_same_queries_for_many_incidents(token, golden_set, version, run, incident, django_assert_max_num_queries):
    api = client_for(token("read", golden_set))
    with django_assert_max_num_queries(20) as one:
        api.get(BASE)
    for n in range(5):
        alert = Alert.objects.create(
            golden_set=golden_set, version=version, run=run, kind=Alert.Kind.DROP_VS_RUN, metric=f"recall@{n + 1}",
            value=0.5, reference=0.75, message=f"drop {n}",
        )  # fmt: skip
        incident_alert_add(alert, kind=Incident.Kind.NIGHT, subject=f"endpoint {n}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert len(api.get(BASE).json()["results"]) == 6
