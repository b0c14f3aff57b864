"""Single sign-on's settings at start: off without a client id, and a half-made configuration
stops the start naming what is missing (manage.py in a fresh process, as a deployment runs it)."""

import pytest

from tests.test_deployment import run_manage

ENDPOINTS = {
    "OIDC_OP_ISSUER": "https://id.example.com",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://id.example.com/auth",
    "OIDC_OP_TOKEN_ENDPOINT": "https://id.example.com/token",
    "OIDC_OP_USER_ENDPOINT": "https://id.example.com/me",
    "OIDC_OP_JWKS_ENDPOINT": "https://id.example.com/jwks",
}


def test_a_client_id_without_the_rest_stops_the_start_naming_what_is_missing():
    done = run_manage("check", OIDC_RP_CLIENT_ID="goldset", OIDC_OP_ISSUER="https://id.example.com")
    assert done.returncode != 0
    assert (
        "single sign-on needs OIDC_RP_CLIENT_SECRET, OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, "
        "OIDC_OP_USER_ENDPOINT, OIDC_OP_JWKS_ENDPOINT too"
    ) in done.stderr


def test_passwords_off_without_single_sign_on_stops_the_start():
    done = run_manage("check", GOLDSET_LOCAL_PASSWORDS="false")
    assert done.returncode != 0 and "GOLDSET_LOCAL_PASSWORDS=false needs single sign-on" in done.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OIDC_RP_SIGN_ALGO": "HS256"}, "Goldset verifies RS256 id tokens only"),
        ({"OIDC_GROUP_ROLES": "search-eng=acme/search:owner"}, "OIDC_GROUP_ROLES: 'search-eng=acme/search:owner'"),
    ],
)
def test_a_bad_value_stops_the_start_naming_it(env, message):
    done = run_manage("check", OIDC_RP_CLIENT_ID="goldset", OIDC_RP_CLIENT_SECRET="s", **ENDPOINTS, **env)
    assert done.returncode != 0 and message in done.stderr


def test_a_whole_configuration_starts_with_the_sign_on_backend():
    script = "from django.conf import settings; print(settings.AUTHENTICATION_BACKENDS[-1], settings.SSO_ENABLED)"
    done = run_manage("shell", "-c", script, OIDC_RP_CLIENT_ID="goldset", OIDC_RP_CLIENT_SECRET="s", **ENDPOINTS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["goldset.sso.SignOnBackend", "True"]


@pytest.mark.django_db
def test_password_pages_answer_404_while_passwords_are_off(client, settings, django_user_model):
    """With single sign-on on and local passwords off, a password set on a reset page could
    sign nobody in: the pages are gone, and the header offers no Password link."""
    settings.SSO_ENABLED, settings.GOLDSET_LOCAL_PASSWORDS = True, False
    for url in ("/accounts/password/", "/accounts/password/reset/", "/accounts/password/reset/done/"):
        assert client.get(url).status_code in (302, 404), url  # the change page asks for a sign-in first
    user = django_user_model.objects.create_user(username="sso-user")
    user.set_unusable_password()
    user.save()
    client.force_login(user)
    assert client.get("/accounts/password/").status_code == 404
    assert b">Password</a>" not in client.get("/orgs/").content
    settings.GOLDSET_LOCAL_PASSWORDS = True
    assert client.get("/accounts/password/reset/").status_code == 200
