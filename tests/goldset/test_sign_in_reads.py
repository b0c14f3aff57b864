"""Signed-in requests read their session through the configured engine (Django's own,
goldset.settings.SESSION_ENGINE): they sign people in and out as Django's do."""

from datetime import timedelta
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db
SessionStore = import_module(settings.SESSION_ENGINE).SessionStore


def signed_in(client: Client, username: str) -> Client:
    answer = client.post(reverse("login"), {"username": username, "password": f"pw-{username}"}, REMOTE_ADDR="198.51.100.7")
    assert answer.status_code == 302
    return client


def test_a_signed_in_person_stays_signed_in_from_request_to_request(owner):
    client = signed_in(Client(), "owner")
    assert client.get(reverse("judging_home")).status_code == 200
    assert client.get(reverse("judging_home")).status_code == 200


def test_an_expired_session_signs_the_person_out(owner):
    client = signed_in(Client(), "owner")
    Session.objects.filter(session_key=client.session.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))
    answer = client.get(reverse("judging_home"))
    assert answer.status_code == 302 and reverse("login") in answer["Location"]


def test_a_deactivated_person_is_signed_out_at_their_next_request(owner):
    client = signed_in(Client(), "owner")
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    answer = client.get(reverse("judging_home"))
    assert answer.status_code == 302 and reverse("login") in answer["Location"]


def test_a_session_reads_back_what_was_saved_and_nothing_for_an_unknown_key():
    store = SessionStore()
    store["judging_counts"] = {"tiny": 3}
    store.save()
    assert SessionStore(store.session_key).load() == {"judging_counts": {"tiny": 3}}
    unknown = SessionStore("no-such-session-key-0000000000")
    assert unknown.load() == {}
    assert unknown.session_key is None  # forgotten, so that a save makes a new one
