"""lib.bulk.row_triggers_skipped: row triggers are skipped only inside a transaction of a
session that may skip them, and the session's role is as it was afterwards."""

import pytest
from django.db import IntegrityError, connection, transaction

import lib.bulk
from goldenset.models import Page
from lib.bulk import bulk_insert, row_triggers_skipped

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="session_replication_role is PostgreSQL's")


def replication_role() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('session_replication_role')")
        return cursor.fetchone()[0]


def write_orphan_page(doc_id: str) -> None:
    """A page of corpus 999999, which does not exist: what a foreign key refuses."""
    bulk_insert(
        Page._meta.db_table, ["corpus_id", "doc_id", "title", "text", "url", "has_text", "metadata", "content_hash", "created_at"],
        [(999999, doc_id, "", "", "", True, "{}", "0" * 64, "now")],
    )


def check_foreign_keys_now() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@postgres_only
def test_a_session_that_may_skips_the_foreign_key_checks_and_sets_its_role_back():
    with transaction.atomic():
        with row_triggers_skipped() as skipped:
            assert skipped and replication_role() == "replica"
            write_orphan_page("orphan")
        assert replication_role() == "origin"
        check_foreign_keys_now()  # no check was queued: only the caller's own check would see it
        transaction.set_rollback(True)


@postgres_only
def test_a_session_that_may_not_writes_with_its_foreign_keys(monkeypatch):
    monkeypatch.setattr(lib.bulk, "replication_role", lambda: ("origin", False))
    with pytest.raises(IntegrityError), transaction.atomic():
        with row_triggers_skipped() as skipped:
            assert not skipped and replication_role() == "origin"
            write_orphan_page("orphan")
        check_foreign_keys_now()
    assert not Page.objects.exists()


@postgres_only
def test_the_role_is_set_back_by_the_rollback_of_a_failed_write():
    with pytest.raises(ValueError), transaction.atomic():
        with row_triggers_skipped():
            raise ValueError("a bad row")
    assert replication_role() == "origin"


@pytest.mark.skipif(connection.vendor == "postgresql", reason="SQLite's case")
def test_sqlite_skips_nothing():
    with transaction.atomic(), row_triggers_skipped() as skipped:
        assert not skipped
