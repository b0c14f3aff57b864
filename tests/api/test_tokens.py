"""API tokens: made, stored hashed, used, revoked; by the service, the command and the
managers' token page."""

import io
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from api.models import ApiToken
from api.services import api_token_create, api_token_revoke
from lib.errors import GoldsetError
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

PAGE = f"/sets/{SLUG}/tokens/"


# --- the service and authentication --------------------------------------------------------


def test_only_a_hash_of_the_secret_is_stored(manager, golden_set):
    token, secret = api_token_create(owner=manager, scope="read", golden_set=golden_set)
    assert secret.startswith("gs_") and len(secret) > 40
    stored = ApiToken.objects.get()
    assert secret not in (stored.key_hash, stored.prefix) and stored.key_hash == ApiToken.hash_secret(secret)
    assert secret.startswith(stored.prefix)


@pytest.mark.parametrize(
    ("options", "field"),
    [({"scope": "admin"}, "scope"), ({"scope": "read", "expires_at": timezone.now() - timedelta(days=1)}, "expires_at")],
)
def test_a_token_with_an_unknown_scope_or_a_past_expiry_is_refused(manager, options, field):
    with pytest.raises(GoldsetError) as caught:
        api_token_create(owner=manager, **options)
    assert caught.value.field == field


def test_a_token_for_a_set_needs_the_role_its_scope_needs(golden_set, adjudicator, annotator):
    api_token_create(owner=adjudicator, scope="read", golden_set=golden_set)
    with pytest.raises(GoldsetError, match="is not manager of golden set 'tiny'"):
        api_token_create(owner=adjudicator, scope="write", golden_set=golden_set)
    with pytest.raises(GoldsetError, match="is not manager or adjudicator"):
        api_token_create(owner=annotator, scope="read", golden_set=golden_set)


def test_staff_may_have_a_token_for_any_set(make_user, golden_set):
    api_token_create(owner=make_user("root", is_staff=True), scope="write", golden_set=golden_set)


def test_use_is_recorded_at_most_once_a_minute(token, golden_set, version):
    client = client_for(token("read", golden_set))
    client.get(f"/api/v1/golden-sets/{SLUG}/")
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    client.get(f"/api/v1/golden-sets/{SLUG}/")
    assert ApiToken.objects.get().last_used_at == first


def test_revoking_twice_keeps_the_first_time(manager):
    token, _ = api_token_create(owner=manager, scope="read")
    first = api_token_revoke(token=token).revoked_at
    assert api_token_revoke(token=ApiToken.objects.get()).revoked_at == first


def test_a_scheme_other_than_bearer_is_not_a_token(golden_set, version):
    response = client_for().get(f"/api/v1/golden-sets/{SLUG}/", HTTP_AUTHORIZATION="Basic bWFuYWdlcjpwdw==")
    assert_error(response, 401, "not_authenticated")


# --- manage.py create_api_token ----------------------------------------------------------


def test_the_command_prints_the_token_once_and_it_works(manager, golden_set, version):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", "manager", "--scope", "read", "--golden-set", SLUG, "--expires-in-days", "30", stdout=out, stderr=err)
    secret = out.getvalue().strip()
    assert secret.startswith("gs_") and "\n" not in secret
    assert "read token" in err.getvalue() and "golden set tiny" in err.getvalue()
    token = ApiToken.objects.get()
    assert (token.scope, token.golden_set, token.owner) == ("read", golden_set, manager)
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert client_for(secret).get(f"/api/v1/golden-sets/{SLUG}/").status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nobody", "--scope", "read"], "no user 'nobody'"),
        (["manager", "--scope", "read", "--golden-set", "nope"], "no golden set 'nope'"),
        (["manager", "--scope", "read", "--expires-in-days", "0"], "at least 1"),
        (["adjudicator", "--scope", "write", "--golden-set", SLUG], "is not manager of golden set"),
    ],
)
def test_the_command_refuses_what_cannot_work(manager, adjudicator, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("create_api_token", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not ApiToken.objects.exists()


# --- the managers' token page ----------------------------------------------------------------


def test_a_manager_sees_makes_and_revokes_the_sets_tokens(client, manager, golden_set, version):
    client.force_login(manager)
    assert client.get(PAGE).status_code == 200
    response = client.post(PAGE, {"name": "nightly", "scope": "write", "expires_in_days": "90"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    secret = response.context["secret"]
    assert secret.encode() in response.content
    token = ApiToken.objects.get()
    assert (token.name, token.scope, token.golden_set, token.owner, token.created_by) == ("nightly", "write", golden_set, manager, manager)
    # The secret is shown once: the list shows the prefix only.
    assert secret.encode() not in client.get(PAGE).content
    assert client_for(secret).get(f"/api/v1/golden-sets/{SLUG}/").status_code == 200

    revoke = reverse("api_token_revoke", args=[SLUG, token.pk])
    assert client.post(revoke).status_code == 302
    assert ApiToken.objects.get().revoked_at is not None
    assert_error(client_for(secret).get(f"/api/v1/golden-sets/{SLUG}/"), 401, "authentication_failed")


def test_revoking_with_htmx_returns_the_tokens_row(client, manager, golden_set):
    token, _ = api_token_create(owner=manager, scope="read", golden_set=golden_set)
    client.force_login(manager)
    response = client.post(reverse("api_token_revoke", args=[SLUG, token.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"revoked" in response.content and b"<tr" in response.content


def test_a_token_without_expiry_and_a_form_error(client, manager, golden_set):
    client.force_login(manager)
    assert client.post(PAGE, {"scope": "read", "expires_in_days": ""}).status_code == 200
    assert ApiToken.objects.get().expires_at is None
    assert client.post(PAGE, {"scope": "everything"}).status_code == 400


@pytest.mark.parametrize("person", ["adjudicator", "annotator", "stranger"])
def test_the_token_page_is_404_to_everyone_but_managers(client, person, adjudicator, annotator, stranger, manager, golden_set):
    token, _ = api_token_create(owner=manager, scope="read", golden_set=golden_set)
    client.force_login({"adjudicator": adjudicator, "annotator": annotator, "stranger": stranger}[person])
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE, {"scope": "read"}).status_code == 404
    assert client.post(reverse("api_token_revoke", args=[SLUG, token.pk])).status_code == 404
    assert ApiToken.objects.get().revoked_at is None and ApiToken.objects.count() == 1


def test_the_token_page_asks_an_anonymous_visitor_to_log_in(client, golden_set):
    response = client.get(PAGE)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_token_of_another_set_cannot_be_revoked_from_this_sets_page(client, manager, golden_set, other_set):
    token, _ = api_token_create(owner=manager, scope="read", golden_set=other_set)
    client.force_login(manager)
    assert client.post(reverse("api_token_revoke", args=[SLUG, token.pk])).status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_staff_manage_tokens_of_any_set(client, make_user, golden_set):
    client.force_login(make_user("root", is_staff=True))
    assert client.get(PAGE).status_code == 200


# --- the admin -----------------------------------------------------------------------------


def test_the_admin_lists_and_revokes_tokens_but_never_makes_them(client, make_user, manager):
    token, _ = api_token_create(owner=manager, scope="read")
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    assert client.get("/admin/api/apitoken/").status_code == 200
    assert client.get("/admin/api/apitoken/add/").status_code == 403
    client.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert ApiToken.objects.get().revoked_at is not None


@override_settings(API_TOKEN_GUESS_RATE="5/minute")
def test_guessing_tokens_from_one_address_is_answered_429_after_a_handful(token, golden_set, version):
    """Hardening #31 item 10: API token guessing was not rate-limited."""
    cache.clear()
    good = token("read", golden_set)
    url = reverse("api_golden_set", kwargs={"slug": SLUG})
    guesser = client_for("gs_" + "x" * 40)
    assert [guesser.get(url, REMOTE_ADDR="10.9.9.9").status_code for _ in range(5)] == [401] * 5
    refused = guesser.get(url, REMOTE_ADDR="10.9.9.9")
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    assert_error(refused, 429)
    assert client_for(good).get(url, REMOTE_ADDR="10.9.9.9").status_code == 429  # the window is closed to that address
    assert client_for(good).get(url, REMOTE_ADDR="10.9.9.10").status_code == 200  # not to others
    assert guesser.get(url, REMOTE_ADDR="10.9.9.10").status_code == 401
    cache.clear()
