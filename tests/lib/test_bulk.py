"""lib.bulk: model_rows_insert and model_arrays_insert write a model's rows as its fields
say, on PostgreSQL (binary COPY, laid out by copy_columns) and elsewhere alike;
select_binary and select_int_columns read through Django's query log, never as prepared
statements."""

from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import connection

from goldenset.models import Corpus, Judgment, Page, Query, default_team
from lib.bulk import copy_columns, model_arrays_insert, model_rows_insert, select_binary, select_int_columns
from tests.support import factories

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")
WHEN = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)


@postgres_only
def test_a_copys_layout_is_read_from_the_models_fields():
    assert copy_columns(Judgment, ["query", "page_id", "grade", "source", "note", "created_at"]) == [
        ("query_id", "bigint"),
        ("page_id", "bigint"),
        ("grade", "smallint"),
        ("source", "varchar"),
        ("note", "text"),
        ("created_at", "timestamp with time zone"),
    ]
    assert copy_columns(Page, ["metadata", "has_text"]) == [("metadata", "jsonb"), ("has_text", "boolean")]


def test_model_rows_insert_writes_tuples_with_json_text_dates_and_nulls():
    corpus = Corpus.objects.create(slug="c", name="c", team=default_team())
    rows = [
        (corpus.pk, "d1", "t", "é", "", True, '{"kind": "faq", "n": [1, 2]}', WHEN, None, "h", WHEN),
        (corpus.pk, "d2", "", "", "", False, "{}", None, None, "h", WHEN),
    ]
    fields = [
        "corpus",
        "doc_id",
        "title",
        "text",
        "url",
        "has_text",
        "metadata",
        "published_at",
        "modified_at",
        "content_hash",
        "created_at",
    ]
    assert model_rows_insert(Page, fields, iter(rows)) == 2
    stored = list(Page.objects.order_by("doc_id").values_list("doc_id", "text", "has_text", "metadata", "published_at", "modified_at"))
    assert stored == [("d1", "é", True, {"kind": "faq", "n": [1, 2]}, WHEN, None), ("d2", "", False, {}, None, None)]


def test_model_arrays_insert_writes_columns_and_values_shared_by_every_row():
    golden_set = factories.golden_set("arrays", qrels={})
    queries = list(Query.objects.filter(golden_set=golden_set).order_by("query_id").values_list("pk", flat=True))
    pages = list(Page.objects.filter(corpus=golden_set.corpus).order_by("doc_id").values_list("pk", flat=True))
    written = model_arrays_insert(
        Judgment,
        {
            "query_id": np.array(queries[:1] * 3, dtype=np.int64),
            "page_id": np.array(pages[:3], dtype=np.int64),
            "grade": np.array([3, -1, 0], dtype=np.int16),
            "source": Judgment.Source.IMPORTED,
            "note": "",
            "page_hash": np.array([b"ab", b"cd", b"ef"]),
            "created_at": WHEN,
        },
        3,
        chunk_rows=2,
    )
    assert written == 3
    stored = Judgment.objects.order_by("page_id").values_list("query_id", "page_id", "grade", "source", "note", "page_hash", "created_at")
    assert list(stored) == [
        (queries[0], pages[0], 3, "imported", "", "ab", WHEN),
        (queries[0], pages[1], -1, "imported", "", "cd", WHEN),
        (queries[0], pages[2], 0, "imported", "", "ef", WHEN),
    ]


@postgres_only
def test_a_text_column_whose_values_are_not_all_as_wide_is_refused():
    with pytest.raises(ValueError, match="page_hash must all be 2 bytes long"):
        model_arrays_insert(Judgment, {"page_hash": np.array([b"ab", b"c"])}, 2)


@postgres_only
def test_binary_reads_are_logged_with_their_text_however_often_they_run():
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        for n in range(8):  # past psycopg's prepare_threshold of the connection
            assert select_binary("SELECT %s::int8, '\\x0102'::bytea", [n]) == [(n, b"\x01\x02")]
            assert select_int_columns("SELECT %s::int8, 7", 2, [n]).tolist() == [[n, 7]]
    assert len(captured) == 16 and all(query["sql"] for query in captured.captured_queries)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%bytea%%'")
        assert cursor.fetchone()[0] == 0
