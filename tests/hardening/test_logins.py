"""Finding 7 (no login throttling: 120 wrong passwords at 7/s, then the right one worked) and
finding 14 (no password change or reset for non-staff users), with the API's throttle.

Logins go through the real login page, as a person or a script would send them."""

import re

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from tests.api import assert_error, client_for

pytestmark = pytest.mark.django_db


def log_in(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def test_five_wrong_passwords_lock_the_username_from_that_address_even_for_the_right_one(owner):
    client = Client()
    for _ in range(4):
        assert log_in(client, "owner", "wrong").status_code == 200
    assert log_in(client, "owner", "wrong").status_code == 429  # the fifth locks
    locked = log_in(client, "owner", "pw-owner")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address is not locked out of the same account, nor is that address locked
    # out of another account: a guesser cannot lock a colleague out of their own desk.
    assert log_in(Client(), "owner", "pw-owner", address="203.0.113.9").status_code == 302


def test_a_success_before_the_limit_clears_the_count(owner):
    client = Client()
    for _ in range(4):
        log_in(client, "owner", "wrong")
    assert log_in(client, "owner", "pw-owner").status_code == 302
    again = Client()
    for _ in range(4):
        log_in(again, "owner", "wrong")
    assert log_in(again, "owner", "pw-owner").status_code == 302


def test_the_admin_login_is_throttled_too(make_user):
    make_user("root", is_staff=True, is_superuser=True)
    client = Client()
    for _ in range(5):
        client.post(reverse("admin:login"), {"username": "root", "password": "wrong"}, REMOTE_ADDR="198.51.100.7")
    locked = client.post(reverse("admin:login"), {"username": "root", "password": "pw-root"}, REMOTE_ADDR="198.51.100.7")
    assert locked.status_code == 429


def test_any_user_changes_their_own_password(teammate):
    client = Client()
    client.force_login(teammate)
    page = client.get(reverse("password_change"))
    assert page.status_code == 200 and 'name="new_password1"' in page.content.decode()
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "pw-teammate",
            "new_password1": "a-much-better-secret-2026",
            "new_password2": "a-much-better-secret-2026",
        },
    )
    assert response.status_code == 302 and response["Location"] == reverse("password_change_done")
    assert log_in(Client(), "teammate", "a-much-better-secret-2026").status_code == 302
    assert log_in(Client(), "teammate", "pw-teammate").status_code == 200


def test_the_password_pages_need_a_login_and_the_nav_links_them(teammate):
    response = Client().get(reverse("password_change"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    client = Client()
    client.force_login(teammate)
    assert f'href="{reverse("password_change")}"' in client.get(reverse("home")).content.decode()
    assert f'href="{reverse("password_reset")}"' in Client().get(reverse("login")).content.decode()


def test_a_forgotten_password_is_reset_through_a_one_time_link_by_email(teammate):
    teammate.email = "teammate@example.com"
    teammate.save(update_fields=["email"])
    client = Client()
    response = client.post(reverse("password_reset"), {"email": "teammate@example.com"})
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["teammate@example.com"]
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/\S+/)", mail.outbox[0].body).group(1)

    form = client.get(link, follow=True)
    assert form.status_code == 200 and 'name="new_password1"' in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "reset-secret-2026-x", "new_password2": "reset-secret-2026-x"})
    assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")
    assert log_in(Client(), "teammate", "reset-secret-2026-x").status_code == 302
    # The link works once.
    assert "no longer works" in Client().get(link, follow=True).content.decode()


def test_a_reset_for_an_unknown_address_says_the_same_and_sends_nothing(teammate):
    response = Client().post(reverse("password_reset"), {"email": "nobody@example.com"})
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    assert mail.outbox == []


@pytest.fixture
def deployment_rates(monkeypatch):
    """The suite's settings lift the API's rates for the fuzzer; here they are small again."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "3/minute", "user": "5/minute"})
    cache.clear()
    yield
    cache.clear()


def test_the_api_throttles_an_anonymous_caller_by_address(deployment_rates):
    """Paths open to anonymous callers (the API's own 404) are throttled per address; every
    other path answers 401 before any throttle, so a token guesser learns nothing more."""
    client = client_for()
    for _ in range(3):
        assert client.get("/api/v1/no-such-path").status_code == 404
    response = client.get("/api/v1/no-such-path")
    error = assert_error(response, 429, "throttled")
    assert "throttled" in error["message"].lower() and int(response["Retry-After"]) > 0


def test_the_api_throttles_a_token_per_user(deployment_rates, token, golden_set):
    client = client_for(token("read", golden_set))
    for _ in range(5):
        assert client.get("/api/v1/golden-sets/").status_code == 200
    response = client.get("/api/v1/golden-sets/")
    assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
