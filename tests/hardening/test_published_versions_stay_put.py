"""Finding 1 of the hardening probe: a published version's export changed when a staff user
renamed a query id or a doc id in the admin, while its content hash and ETag stayed the same.

The ids a version's export and hash read are frozen once the row is in a version (a trigger
on both databases, the admin showing them read-only), and every export re-checks the hash
against the version's stored rows, refusing a version that no longer matches it.
"""

import hashlib

import pytest
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse

from goldenset.models import Page, Query
from goldenset.selectors import VersionIntegrityError, version_check_intact, version_label_rows, version_recomputed_hash
from goldenset.services import version_publish
from tests.api import assert_error, client_for
from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    """The export's hash check is cached per process: each test starts without it."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def published(owner):
    golden_set = factories.golden_set(
        "tiny", manager=owner, query_slice_fields=["lang"], queries=factories.queries("q1", "q2", "q3", lang="de")
    )
    return version_publish(golden_set=golden_set, note="pinned")


@pytest.fixture
def staff_editor(make_user):
    """Staff with exactly the permissions the probe used: change_query and change_page."""
    user = make_user("editor", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["change_query", "view_query", "change_page", "view_page"]))
    client = Client()
    client.force_login(user)
    return client


def trec_export(client, version) -> bytes:
    url = reverse("version_export", kwargs={"slug": version.golden_set.slug, "number": version.number, "fmt": "trec"})
    response = client.get(url)
    assert response.status_code == 200, response
    return b"".join(response.streaming_content)


def test_renaming_a_published_query_or_page_in_the_admin_leaves_the_export_byte_identical(published, owner, staff_editor):
    manager = Client()
    manager.force_login(owner)
    before = hashlib.sha256(trec_export(manager, published)).hexdigest()
    query, page = Query.objects.get(query_id="q1"), Page.objects.get(doc_id="d1")

    query_form = staff_editor.get(reverse("admin:goldenset_query_change", args=[query.pk])).content.decode()
    assert 'name="query_id"' not in query_form and "q1" in query_form  # shown, not editable
    staff_editor.post(
        reverse("admin:goldenset_query_change", args=[query.pk]),
        {"query_id": "renamed", "golden_set": query.golden_set_id, "text": "new text", "metadata": "{}"},
    )
    staff_editor.post(
        reverse("admin:goldenset_page_change", args=[page.pk]),
        {"doc_id": "renamed", "corpus": page.corpus_id, "title": "t", "text": "x", "metadata": "{}"},
    )

    query.refresh_from_db()
    page.refresh_from_db()
    assert (query.query_id, page.doc_id) == ("q1", "d1")
    assert hashlib.sha256(trec_export(manager, published)).hexdigest() == before
    assert version_recomputed_hash(published) == published.content_hash


def test_a_query_or_page_in_no_version_can_still_be_renamed_in_the_admin(published, staff_editor):
    query = Query.objects.create(golden_set=published.golden_set, query_id="draft", text="new")
    response = staff_editor.post(
        reverse("admin:goldenset_query_change", args=[query.pk]),
        {"query_id": "draft-2", "golden_set": query.golden_set_id, "text": "new", "metadata": "{}"},
    )
    assert response.status_code == 302, response.content[:2000]
    query.refresh_from_db()
    assert query.query_id == "draft-2"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE goldenset_query SET query_id = 'renamed' WHERE query_id = 'q1'",
        "UPDATE goldenset_page SET doc_id = 'renamed' WHERE doc_id = 'd1'",
        "UPDATE goldenset_query SET golden_set_id = golden_set_id + 1000 WHERE query_id = 'q1'",
    ],
)
def test_the_database_refuses_to_rename_what_a_version_holds(published, sql):
    with pytest.raises((DatabaseError, IntegrityError)), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert list(version_label_rows(published))[0] == ("q1", "d1", 2)


def test_the_database_still_lets_other_fields_of_a_published_page_change(published):
    Page.objects.filter(doc_id="d1").update(title="a better title")
    Query.objects.filter(query_id="q1").update(text="a better question")
    assert Page.objects.get(doc_id="d1").title == "a better title"


def tamper(published) -> None:
    """Rename a published query behind the triggers' back, as a restore from elsewhere might."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Replica mode fires no ordinary trigger, as a logical restore would run.
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute("UPDATE goldenset_query SET query_id = 'q1-renamed' WHERE query_id = 'q1'")
            cursor.execute("SET LOCAL session_replication_role = origin")
        else:  # DDL is transactional on SQLite too: the test's rollback puts the trigger back
            cursor.execute("DROP TRIGGER goldenset_query_ids_frozen")
            cursor.execute("UPDATE goldenset_query SET query_id = 'q1-renamed' WHERE query_id = 'q1'")


def test_every_export_refuses_a_version_that_no_longer_matches_its_hash(published, owner, token_for, tmp_path):
    tamper(published)
    with pytest.raises(VersionIntegrityError, match="version 1 of 'tiny' no longer matches its content hash"):
        version_check_intact(published)

    manager = Client()
    manager.force_login(owner)
    page = manager.get(reverse("version_export", kwargs={"slug": "tiny", "number": 1, "fmt": "trec"}))
    assert page.status_code == 409 and b"no longer matches its content hash" in page.content

    api = client_for(token_for(published.golden_set))
    error = assert_error(api.get("/api/v1/golden-sets/tiny/versions/1/qrels"), 409, "version_damaged")
    assert published.short_hash in error["message"]

    with pytest.raises(CommandError, match="no longer matches its content hash"):
        call_command("export_qrels", "tiny", "--output", str(tmp_path / "qrels.txt"))
    assert not (tmp_path / "qrels.txt").exists()


def test_the_hash_check_reads_versions_whose_snapshots_are_not_in_id_order(owner):
    """Snapshots written by publishing stream in hash order; rows in another order are sorted."""
    golden_set = factories.golden_set(
        "tiny", manager=owner, queries=factories.queries("q10", "q9", "q1"), qrels={("q10", "d1"): 1, ("q9", "d2"): 2, ("q1", "d3"): 0}
    )
    version = version_publish(golden_set=golden_set)
    # Publishing wrote q1, q9, q10 in that order; a version restored row by row may not be.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        else:
            cursor.execute("DROP TRIGGER goldenset_versionquery_immutable")
        cursor.execute("UPDATE goldenset_versionquery SET id = -id WHERE version_id = %s", [version.pk])
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")
    assert version_recomputed_hash(version) == version.content_hash


@pytest.fixture
def token_for(owner):
    from api.services import api_token_create

    def make(golden_set) -> str:
        return api_token_create(owner=owner, scope="read", golden_set=golden_set)[1]

    return make
