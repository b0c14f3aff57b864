"""Sign-ins through a real OpenID Connect provider (tests/support/oidc/provider.mjs), driven
with requests as a browser would follow them: Goldset's start, the provider's login page,
its redirect back to Goldset's callback. A wrong issuer, a bad signature, an expired token,
a provider error and a cancelled sign-in are each refused: nobody is signed in, and the
failure page says why."""

import re
import socket
from urllib.parse import urljoin

import pytest
import requests
from django.contrib.auth import get_user_model

from goldenset.models import TeamMembership

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(live_server, login: str = "ada", *, cancel: bool = False) -> tuple[requests.Session, requests.Response]:
    """Press "Sign in with ...", fill the provider's login form (or cancel it); the session
    and the last response, at Goldset again."""
    session = requests.Session()
    form = session.get(f"{live_server.url}/oidc/authenticate/", timeout=10)
    assert form.status_code == 200 and 'name="login"' in form.text, form.text[:500]
    if cancel:
        abort = re.search(r'href="([^"]*/abort)"', form.text).group(1)
        return session, session.get(urljoin(form.url, abort), timeout=10)
    action = re.search(r'<form[^>]*action="([^"]+)"', form.text).group(1)
    done = session.post(urljoin(form.url, action), data={"prompt": "login", "login": login, "password": "any"}, timeout=10)
    return session, done


def signed_in(session: requests.Session, live_server) -> bool:
    home = session.get(f"{live_server.url}/", timeout=10, allow_redirects=False)
    return home.status_code == 200


def assert_refused(session, response, live_server, headline: str, reason: str):
    assert response.url == f"{live_server.url}/accounts/sign-on-failed/"
    assert response.status_code == 403
    page = response.text
    assert headline in page and f"<code>{reason}</code>" in page and "Back to sign in" in page
    assert "Traceback" not in page
    assert not signed_in(session, live_server)
    assert not get_user_model().objects.filter(email="ada@example.com").exists()


def test_a_sign_in_lands_signed_in_and_placed_in_its_team(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider)
    session, done = sign_in(live_server)
    assert done.url == f"{live_server.url}/" and done.status_code == 200
    assert "Search set" in done.text and "Ads set" not in done.text
    user = get_user_model().objects.get(email="ada@example.com")
    assert (user.username, user.first_name) == ("ada", "Ada")
    assert set(TeamMembership.objects.filter(user=user).values_list("team__slug", "role", "from_sso")) == {("search", "manager", True)}


def test_a_wrong_issuer_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider, OIDC_OP_ISSUER="https://id.example.com")
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in came from an unexpected provider", "issuer")
    assert f"the id token&#x27;s issuer is &#x27;{provider.issuer}&#x27;" in done.text


def test_a_token_that_the_published_keys_do_not_verify_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/", foreign_jwks=True)
    sign_on_settings(provider)
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in could not be verified", "signature")


def test_a_token_signed_by_another_provider_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    """The JWKS of a second provider, with keys of its own (and the same key id)."""
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    other = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider, OIDC_OP_JWKS_ENDPOINT=other.discovery["jwks_uri"])
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in could not be verified", "signature")


def test_an_expired_token_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    """The provider's clock runs two hours behind: its one-hour id tokens arrive expired."""
    provider = oidc_provider(f"{live_server.url}/oidc/callback/", clock_offset=-7200)
    sign_on_settings(provider)
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in had already expired", "expired")


def test_a_token_from_the_future_is_refused_beyond_the_leeway_only(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/", clock_offset=30)
    sign_on_settings(provider)
    session, done = sign_in(live_server)
    assert done.url == f"{live_server.url}/"  # 30 s ahead: within the 60 s leeway
    sign_on_settings(provider, OIDC_CLOCK_LEEWAY=5)
    session, done = sign_in(live_server)
    assert done.url.endswith("/accounts/sign-on-failed/") and "<code>expired</code>" in done.text


def test_an_error_of_the_provider_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    """Goldset holds the wrong client secret: the token endpoint answers 401."""
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider, OIDC_RP_CLIENT_SECRET="not-the-secret")
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in provider did not answer as expected", "provider")
    assert f"{provider.discovery['token_endpoint']} answered 401" in done.text
    assert "not-the-secret" not in done.text


def test_a_provider_that_does_not_answer_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    """The token endpoint is a port nobody listens on."""
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/token"
    sign_on_settings(provider, OIDC_OP_TOKEN_ENDPOINT=dead)
    session, done = sign_in(live_server)
    assert_refused(session, done, live_server, "The sign-in provider did not answer as expected", "provider")
    assert f"{dead} did not answer (ConnectionError)" in done.text


def test_a_cancelled_sign_in_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider)
    session, done = sign_in(live_server, cancel=True)
    assert_refused(session, done, live_server, "You cancelled the sign-in", "denied")


def test_a_callback_this_session_did_not_start_is_refused(live_server, oidc_provider, sign_on_settings, acme):
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider)
    session = requests.Session()
    done = session.get(f"{live_server.url}/oidc/callback/?code=stolen&state=guessed", timeout=10)
    assert_refused(session, done, live_server, "The sign-in started somewhere else or too long ago", "state")


def test_refused_sign_ins_lock_nobody_out(live_server, oidc_provider, sign_on_settings, acme):
    """Six refusals from one address, then the right configuration: the sign-in works."""
    provider = oidc_provider(f"{live_server.url}/oidc/callback/")
    sign_on_settings(provider, OIDC_OP_ISSUER="https://id.example.com")
    for _ in range(6):
        sign_in(live_server)
    sign_on_settings(provider)
    session, done = sign_in(live_server)
    assert done.url == f"{live_server.url}/"
