"""Single sign-on in a real browser against a real OpenID Connect provider: "Sign in with
Acme ID", the provider's own login page, back in Goldset signed in and placed in the search
team by the groups claim (its set on the home page, the ads team's not), then signed out.
And a refused sign-in's page. Screenshots of both pages go to GOLDSET_SCREENSHOTS; axe-core
finds no serious or critical violation on either."""

import copy
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from goldset.settings import oidc_sign_out
from tests.browser import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def screenshot(page, name: str) -> None:
    folder = os.environ.get("GOLDSET_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"sso-{name}.png"), full_page=True)


def sign_in_at_provider(page, live_server, login: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")


def test_a_person_signs_in_through_the_provider_lands_in_their_team_and_signs_out(
    browser_page, live_server, oidc_provider, sign_on_settings, acme
):
    page = browser_page
    sign_on_settings(oidc_provider(f"{live_server.url}/oidc/callback/"))
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.get_by_role("link", name="Sign in with Acme ID").is_visible()
    assert page.locator("#id_password").is_visible()  # local passwords are on
    assert axe_violations(page) == []
    screenshot(page, "login")

    sign_in_at_provider(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("header .logout span").inner_text() == "ada"
    assert page.get_by_role("link", name="Search set").is_visible()
    assert page.get_by_text("Ads set").count() == 0
    assert get_user_model().objects.get(username="ada").team_memberships.get().team.slug == "search"

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/")
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/accounts/login/")  # signed out: home asks to log in


def test_a_refused_sign_in_shows_the_failure_page(browser_page, live_server, oidc_provider, sign_on_settings, acme):
    page = browser_page
    sign_on_settings(oidc_provider(f"{live_server.url}/oidc/callback/"), OIDC_OP_ISSUER="https://id.example.com")
    sign_in_at_provider(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/accounts/sign-on-failed/")
    assert page.get_by_role("heading", name="The sign-in came from an unexpected provider").is_visible()
    assert page.locator("header .logout").count() == 0  # nobody signed in
    assert axe_violations(page) == []
    screenshot(page, "failed")
    page.get_by_role("link", name="Back to sign in").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/")


def test_with_local_passwords_off_the_login_page_offers_the_provider_only(browser_page, live_server, oidc_provider, sign_on_settings):
    page = browser_page
    sign_on_settings(oidc_provider(f"{live_server.url}/oidc/callback/"), GOLDSET_LOCAL_PASSWORDS=False)
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.locator("#id_password").count() == 0
    assert page.get_by_text("Goldset accounts sign in through Acme ID only.").is_visible()
    screenshot(page, "login-sso-only")


def test_with_the_end_session_endpoint_signing_out_signs_out_of_the_provider_too(
    browser_page, live_server, oidc_provider, sign_on_settings, settings, acme
):
    page = browser_page
    provider = oidc_provider(f"{live_server.url}/oidc/callback/", post_logout_uri=f"{live_server.url}/accounts/login/")
    endpoint = provider.discovery["end_session_endpoint"]
    sign_on_settings(provider, OIDC_OP_LOGOUT_ENDPOINT=endpoint)
    # What the settings make of OIDC_OP_LOGOUT_ENDPOINT and SITE_URL.
    settings.LOGOUT_REDIRECT_URL, origin = oidc_sign_out(endpoint, "goldset", live_server.url)
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"].append(origin)
    settings.CONTENT_SECURITY_POLICY = policy

    sign_in_at_provider(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{provider.issuer}/**")  # the provider asks to confirm
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/")
    # Signed out at the provider as well: signing in asks for the login again.
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.wait_for_selector("input[name=login]")
