"""The audit trail through the API: managers' tokens (and staff) list the set's records,
filtered and paged as the other lists; nobody else reads them; no method writes."""

import pytest
from django.db import transaction

from goldenset.models import Membership, Organisation
from goldenset.services import membership_grant, membership_revoke
from goldenset.teams import organisation_member_set, team_create
from tests.api import SLUG, assert_error, client_for, make_set

pytestmark = pytest.mark.django_db

URL = f"/api/v1/golden-sets/{SLUG}/audit/"


@pytest.fixture
def trail(golden_set, manager, make_user):
    someone = make_user("someone")
    membership_grant(user=someone, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=manager)
    membership_revoke(user=someone, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=manager)
    return golden_set


def test_a_managers_token_lists_the_records_newest_first_paged(trail, token):
    body = client_for(token("read", trail)).get(URL, {"limit": 2}).json()
    assert body["count"] == 4  # the manager's grant as the set was made, the grant, the revoke, the token
    assert [record["action"] for record in body["results"]] == ["token.create", "member.revoke"]
    newest = body["results"][1]
    assert newest["user"] == "manager"
    assert newest["object"]["label"] == "someone (annotator)" and newest["before"] == {"user": "someone", "role": "annotator"}


def test_records_are_filtered_by_action_and_user(trail, token):
    client = client_for(token("read", trail))
    assert [r["action"] for r in client.get(URL, {"action": "member", "user": "manager"}).json()["results"]] == [
        "member.revoke",
        "member.grant",
    ]
    assert client.get(URL, {"user": "nobody"}).json()["count"] == 0


def test_a_bad_day_is_refused_naming_the_field(trail, token):
    error = assert_error(client_for(token("read", trail)).get(URL, {"until": "soon"}), 400)
    assert error["field"] == "until"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_no_method_writes_a_record(trail, token, method):
    response = getattr(client_for(token("write", trail)), method)(URL, {"action": "x"}, format="json")
    assert response.status_code == 405


def test_anonymous_callers_read_nothing(trail):
    assert_error(client_for().get(URL), 401)


def test_an_annotator_finds_nothing(trail, token, annotator):
    assert_error(client_for(token("write", owner=annotator)).get(URL), 404)


def test_an_adjudicator_may_not_read_the_trail(trail, token, adjudicator):
    assert_error(client_for(token("read", owner=adjudicator)).get(URL), 403)


def test_the_manager_of_another_set_finds_nothing(trail, token, make_user):
    stranger = make_user("stranger")
    make_set("theirs", stranger)
    assert_error(client_for(token("write", owner=stranger)).get(URL), 404)


ORGANISATION_URL = "/api/v1/organisations/default/audit/"


def test_an_organisation_admins_token_lists_its_records_with_their_sets(trail, token, manager, make_user):
    organisation = Organisation.objects.get(slug="default")
    with transaction.atomic():
        organisation_member_set(organisation=organisation, user=manager, role="admin")
        team_create(organisation=organisation, slug="ads", name="Ads", by=manager)
    body = client_for(token("read")).get(ORGANISATION_URL, {"limit": 3}).json()
    assert [(r["action"], r["golden_set"]) for r in body["results"]] == [
        ("team.create", ""),
        ("organisation.member", ""),
        ("member.revoke", SLUG),
    ]
    everything = client_for(token("read")).get(ORGANISATION_URL, {"action": "member"}).json()["results"]
    assert [r["action"] for r in everything] == ["member.revoke", "member.grant", "member.grant"]
    assert {r["golden_set"] for r in everything} == {SLUG}


def test_an_organisations_trail_is_hidden_from_members_set_tokens_and_outsiders(trail, token, manager, make_user):
    # The set's manager is a member of the organisation, not its admin.
    assert_error(client_for(token("read")).get(ORGANISATION_URL), 404)
    assert_error(client_for(token("read")).get("/api/v1/organisations/nope/audit/"), 404)
    organisation_member_set(organisation=Organisation.objects.get(slug="default"), user=manager, role="admin")
    # A token restricted to one set reaches only that set, even an admin's.
    assert_error(client_for(token("read", trail)).get(ORGANISATION_URL), 404)
    assert client_for(token("read")).get(ORGANISATION_URL).status_code == 200
    assert_error(client_for(token("write")).post(ORGANISATION_URL, {}), 405)
