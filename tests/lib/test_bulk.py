"""lib.bulk.copy_arrays_meanwhile writes what copy_arrays writes while the caller's body
runs, and nothing when the body fails; select_binary and select_int_columns read through
Django's query log, never as prepared statements."""

import numpy as np
import pytest
from django.db import connection, transaction

from lib.bulk import copy_arrays_meanwhile, select_binary, select_int_columns

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's"),
]

COLUMNS = [("n", ">i8", 8), ("tag", "S3", 3)]


@pytest.fixture
def probe():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bulk_probe (n bigint NOT NULL, tag text NOT NULL)")
    return "bulk_probe"


def stored() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n, tag FROM bulk_probe ORDER BY n")
        return cursor.fetchall()


def test_the_rows_are_written_by_end_and_the_body_runs_in_between(probe):
    ran = []
    with copy_arrays_meanwhile(probe, COLUMNS, {"n": np.arange(5, dtype=np.int64) * 10, "tag": b"abc"}, 5) as end:
        ran.append(sum(range(1000)))  # the caller's own work, while the server writes
        end()
        assert stored() == [(0, "abc"), (10, "abc"), (20, "abc"), (30, "abc"), (40, "abc")]  # the connection is free again
    assert ran == [499500]


def test_an_error_in_the_body_is_raised_as_it_is_and_writes_nothing(probe):
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        with copy_arrays_meanwhile(probe, COLUMNS, {"n": np.arange(3, dtype=np.int64), "tag": b"xyz"}, 3):
            1 / 0
    assert stored() == []


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
