"""The groups claim mapped to team roles and organisation admins (OIDC_GROUP_ROLES), people
made and updated from their claims, and local passwords switched off. No provider needed:
the backend's user steps are called with the claims a provider would send."""

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory
from django.urls import reverse

from goldenset.models import OrganisationMembership, TeamMembership
from goldenset.selectors import golden_sets_for
from goldenset.teams import organisation_member_set, team_grant
from goldset.settings import oidc_group_roles
from goldset.sso import SignOnBackend, SignOnRefused, unique_username

from .conftest import GROUP_ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def sso(settings):
    settings.OIDC_RP_CLIENT_ID = "goldset"
    settings.SSO_ENABLED = True
    settings.OIDC_GROUP_ROLES = oidc_group_roles(GROUP_ROLES)
    return SignOnBackend()


def claims(**extra):
    return {"sub": "ada", "email": "ada@example.com", "preferred_username": "ada", **extra}


def roles(user) -> set[tuple[str, str, bool]]:
    return {(f"{m.team.organisation.slug}/{m.team.slug}", m.role, m.from_sso) for m in TeamMembership.objects.filter(user=user)}


def sign_in(backend, claim_set):
    """What the backend does with a provider's verified claims."""
    users = backend.filter_users_by_claims(claim_set)
    backend.verify_claims(claim_set)
    return backend.update_user(users[0], claim_set) if users else backend.create_user(claim_set)


def test_the_first_sign_in_makes_the_user_from_the_claims_with_their_team_roles(sso, acme):
    user = sign_in(sso, claims(given_name="Ada", family_name="Lovelace", groups=["search-eng", "search-judges"]))
    assert (user.username, user.email, user.first_name, user.last_name) == ("ada", "ada@example.com", "Ada", "Lovelace")
    assert not user.has_usable_password()
    assert roles(user) == {("acme/search", "manager", True), ("acme/search", "annotator", True)}
    assert [s.slug for s in golden_sets_for(user)] == ["search-set"]


def test_each_sign_in_updates_the_user_and_takes_back_what_the_claims_stop_naming(sso, acme):
    user = sign_in(sso, claims(groups=["search-eng", "ads-eng"]))
    assert {team for team, _, _ in roles(user)} == {"acme/search", "acme/ads"}
    again = sign_in(sso, claims(given_name="Ada B.", groups=["ads-eng"]))
    assert again.pk == user.pk and again.first_name == "Ada B."
    assert roles(again) == {("acme/ads", "manager", True)}
    assert [s.slug for s in golden_sets_for(again)] == ["ads-set"]


def test_roles_granted_by_hand_stay_when_the_claims_drop_a_group(sso, acme):
    _, teams = acme
    user = sign_in(sso, claims(groups=["search-eng"]))
    team_grant(team=teams["ads"], user=user, role="annotator")
    sign_in(sso, claims(groups=[]))
    assert roles(user) == {("acme/ads", "annotator", False)}


def test_a_user_whose_claims_name_no_mapped_group_gets_no_role(sso, acme):
    user = sign_in(sso, claims(groups=["marketing", "staff"]))
    assert roles(user) == set()
    assert list(golden_sets_for(user)) == []
    nothing = sign_in(sso, claims(sub="bob", email="bob@example.com", preferred_username="bob"))  # no groups claim at all
    assert roles(nothing) == set()


def test_a_group_may_be_a_string_and_the_claim_is_configurable(sso, acme, settings):
    settings.OIDC_GROUPS_CLAIM = "roles"
    user = sign_in(sso, claims(roles="search-judges  other"))
    assert roles(user) == {("acme/search", "annotator", True)}


def test_an_admin_group_makes_an_organisation_admin_and_losing_it_a_member(sso, acme):
    organisation, _ = acme
    user = sign_in(sso, claims(groups=["acme-admins"]))
    membership = OrganisationMembership.objects.get(user=user, organisation=organisation)
    assert membership.role == "admin"
    assert {s.slug for s in golden_sets_for(user)} == {"search-set", "ads-set"}
    sign_in(sso, claims(groups=[]))
    membership.refresh_from_db()
    assert membership.role == "member"
    assert list(golden_sets_for(user)) == []


def test_a_team_the_mapping_names_that_does_not_exist_is_skipped_and_logged(sso, acme, settings, caplog):
    settings.OIDC_GROUP_ROLES = oidc_group_roles("search-eng=acme/search:manager,search-eng=acme/gone:manager,x=nowhere:admin")
    user = sign_in(sso, claims(groups=["search-eng", "x"]))
    assert roles(user) == {("acme/search", "manager", True)}
    assert "'acme/gone', which does not exist" in caplog.text
    assert "organisation 'nowhere', which does not exist" in caplog.text


def test_usernames_come_from_the_claim_or_the_email_and_are_made_unique(sso, make_user):
    make_user("ada")
    make_user("ada-2")
    assert unique_username(claims()) == "ada-3"
    assert unique_username({"email": "grace.hopper@example.com"}) == "grace.hopper"
    assert unique_username({"email": "x@example.com", "preferred_username": "Grace Hopper!"}) == "Grace-Hopper"


def test_the_user_is_found_by_email_and_keeps_their_username(sso, make_user):
    existing = make_user("a.lovelace", email="ADA@example.com")
    assert sign_in(sso, claims()).pk == existing.pk
    existing.refresh_from_db()
    assert existing.username == "a.lovelace" and existing.email == "ada@example.com"


@pytest.mark.parametrize(
    ("claim_set", "reason"),
    [
        ({"sub": "ada"}, "email"),
        ({"sub": "ada", "email": "ada@example.com", "email_verified": False}, "email"),
    ],
)
def test_claims_without_a_verified_email_are_refused(sso, claim_set, reason):
    with pytest.raises(SignOnRefused) as refused:
        sso.verify_claims(claim_set)
    assert refused.value.reason == reason


def test_an_inactive_user_is_refused(sso, make_user):
    make_user("ada", email="ada@example.com", is_active=False)
    with pytest.raises(SignOnRefused) as refused:
        sign_in(sso, claims())
    assert refused.value.reason == "inactive"


def test_local_passwords_off_refuses_a_password_and_hides_the_form(sso, settings, make_user):
    make_user("carol")
    request = RequestFactory().post("/accounts/login/")
    assert authenticate(request, username="carol", password="pw-carol") is not None
    settings.GOLDSET_LOCAL_PASSWORDS = False
    assert authenticate(request, username="carol", password="pw-carol") is None
    client = Client()
    refused = client.post(reverse("login"), {"username": "carol", "password": "pw-carol"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    page = client.get(reverse("login")).content.decode()
    assert 'name="password"' not in page and "Sign in with single sign-on" in page


def test_with_single_sign_on_off_the_login_page_is_as_before_and_its_urls_are_404(make_user, settings):
    settings.SSO_ENABLED = False
    page = Client().get(reverse("login")).content.decode()
    assert 'name="password"' in page and "Sign in with" not in page
    assert Client().get(reverse("oidc_authentication_init")).status_code == 404
    assert Client().get(reverse("oidc_authentication_callback")).status_code == 404


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("search-eng", "is not GROUP=ORG/TEAM:ROLE"),
        ("g=acme/search:owner", "a team role is"),
        ("g=acme:manager", "takes the role admin only"),
        ("g=acme/a/b:manager", "a team role is"),
    ],
)
def test_a_malformed_mapping_stops_the_start_naming_the_entry(raw, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        oidc_group_roles(raw)


def test_the_mapping_reads_team_roles_and_admins():
    assert oidc_group_roles(GROUP_ROLES + ", ,search-eng=acme/ads:annotator") == [
        ("search-eng", "acme/search", "manager"),
        ("search-judges", "acme/search", "annotator"),
        ("ads-eng", "acme/ads", "manager"),
        ("acme-admins", "acme", "admin"),
        ("search-eng", "acme/ads", "annotator"),
    ]


def test_the_failure_page_without_a_reason_says_so_plainly(db):
    page = Client().get(reverse("sso_failed"))
    assert page.status_code == 200 and "The sign-in did not work" in page.content.decode()


def test_an_admin_made_by_hand_stays_admin_when_the_groups_do_not_name_it(sso, acme):
    organisation, _ = acme
    user = sign_in(sso, claims(groups=[]))
    organisation_member_set(organisation=organisation, user=user, role="admin")
    sign_in(sso, claims(groups=["search-eng"]))
    assert OrganisationMembership.objects.get(user=user, organisation=organisation).role == "admin"
