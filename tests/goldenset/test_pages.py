"""Every golden set page: who may see it, and what it shows."""

import pytest
from django.urls import reverse

from goldenset.models import Membership
from goldenset.services import membership_grant, qrels_import, version_publish
from tests.support import factories

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny", manager="owner")]


@pytest.fixture
def golden_set(golden_set):
    """The tiny set, published, d1 regraded for q1, published again."""
    version_publish(golden_set=golden_set, note="first labels")
    qrels_import(golden_set_slug="tiny", lines=["q1 0 d1 3\n"], source_name="f")
    version_publish(golden_set=golden_set, note="regraded d1")
    return golden_set


PAGES = [
    ("golden_set", {"slug": "tiny"}),
    ("version", {"slug": "tiny", "number": 2}),
    ("version_export", {"slug": "tiny", "number": 2, "fmt": "trec"}),
    ("version_changes", {"slug": "tiny"}),
]


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, golden_set, name, kwargs):
    response = client.get(reverse(name, kwargs=kwargs))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_a_stranger_gets_not_found(client, golden_set, stranger, name, kwargs):
    client.force_login(stranger)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 404


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_an_annotator_judges_blind_and_cannot_read_versions(client, golden_set, teammate, name, kwargs):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 404


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_managers_and_staff_can_read(client, golden_set, owner, make_user, name, kwargs):
    client.force_login(owner)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 200
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 200


def test_home_lists_only_the_sets_a_user_may_read(client, golden_set, owner, stranger, django_assert_max_num_queries):
    factories.golden_set("other")
    client.force_login(owner)
    with django_assert_max_num_queries(6):
        body = client.get(reverse("home")).content.decode()
    assert "/sets/tiny/" in body and "/sets/other/" not in body
    client.force_login(stranger)
    assert "You are not a member of any golden set yet" in client.get(reverse("home")).content.decode()


def test_home_needs_a_login(client):
    assert client.get(reverse("home")).status_code == 302


def test_the_version_page_shows_hash_counts_and_the_diff(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("version", kwargs={"slug": "tiny", "number": 2})).content.decode()
    version = golden_set.versions.get(number=2)
    assert version.content_hash in body
    assert "Changes since version 1" in body and "regraded" in body and "2 → 3" in body


def test_the_golden_set_page_lists_versions_newest_first(client, golden_set, owner, django_assert_max_num_queries):
    client.force_login(owner)
    # 6, the version tags and their history (2), and what needs you today (goldset.today: the
    # latest version, pools, incidents and their count, the latest evaluation, the settings,
    # stale labels' two reads), a fixed number whatever the set holds.
    with django_assert_max_num_queries(16):
        body = client.get(reverse("golden_set", kwargs={"slug": "tiny"})).content.decode()
    assert body.index("regraded d1") < body.index("first labels")


def test_the_download_is_the_versions_qrels_with_its_hash_as_etag(client, golden_set, owner):
    client.force_login(owner)
    response = client.get(reverse("version_export", kwargs={"slug": "tiny", "number": 1, "fmt": "trec"}))
    assert b"".join(response.streaming_content).decode() == "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
    assert response["ETag"] == f'"{golden_set.versions.get(number=1).content_hash}"'
    assert client.get(reverse("version_export", kwargs={"slug": "tiny", "number": 1, "fmt": "xml"})).status_code == 400
    assert client.get(reverse("version_export", kwargs={"slug": "tiny", "number": 9, "fmt": "trec"})).status_code == 404


def test_the_login_page_is_public(client):
    assert client.get(reverse("login")).status_code == 200
