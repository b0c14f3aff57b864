"""The rows of a version as columns: what version_publish reads, orders, hashes and writes.

A version of a large set holds a million labels. Handled as a Python tuple each (resolved
pair by pair, sorted by tuple keys, written row by row) they cost about 35 s; as numpy
columns, read from the database without an object per value and written by COPY, they
cost a small multiple of a plain INSERT ... SELECT of the same rows (bench/publish.py).

- `resolved_label_columns`: every judgment of the set's active queries read as integer
  columns (lib.bulk.select_int_columns), resolved by the one rule,
  goldenset.resolution.resolve_columns.
- `natural_ranks`: the rank of each id in natural order (lib.ids.natural_order), the
  canonical order of a version's rows, as an array indexed alongside the primary keys.
- `labels_written_meanwhile` (PostgreSQL: a binary COPY the server writes while the caller
  hashes) and `write_labels` (elsewhere: executemany): the labels, `position` their index
  in that order.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from django.db import connection

from goldenset.models import GoldenSet, Judgment, Page, Query, Version, VersionLabel
from goldenset.resolution import ADJUDICATED, HUMAN, IMPORTED, resolve_columns
from lib.bulk import bulk_insert, copy_arrays_meanwhile, select_int_columns
from lib.ids import natural_order
from lib.progress import Progress

# Rows per block of the label steps: a block is what a step's progress counts, so that a
# million labels report a few dozen times, not a million.
LABEL_BLOCK = 50_000


def _judgment_columns_sql() -> str:
    judgment, query = (connection.ops.quote_name(model._meta.db_table) for model in (Judgment, Query))
    return f"""
        SELECT j.query_id, j.page_id, j.grade,
               CASE j.source WHEN '{Judgment.Source.ADJUDICATED}' THEN {ADJUDICATED}
                             WHEN '{Judgment.Source.HUMAN}' THEN {HUMAN} ELSE {IMPORTED} END,
               COALESCE(j.annotator_id, 0), j.id
        FROM {judgment} j JOIN {query} q ON q.id = j.query_id
        WHERE q.golden_set_id = %s AND q.retired_at IS NULL
    """


def resolved_label_columns(golden_set_pk: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query pks, page pks, grades), int64, of every judged pair of the set's active
    queries, labelled by goldenset.resolution's rule, sorted by (query pk, page pk): the
    rows of resolved_labels(golden_set) whose query is active, as columns."""
    rows = select_int_columns(_judgment_columns_sql(), 6, [golden_set_pk])
    return resolve_columns(*(rows[:, column] for column in range(6)))


def labelled_pages(golden_set: GoldenSet, fields: list[str]) -> list[tuple]:
    """(pk, doc_id, metadata, published_at, content_hash) of the pages judged on an active
    query of the set, found by the database (a semi-join), not by sending it an IN list of
    200,000 ids or reading the whole corpus. On PostgreSQL the metadata comes cut down to
    `fields` by the server, as its JSON text, for the caller to decode once per distinct
    text (a corpus's slice values are a handful; its whole metadata, a JSON decode a page);
    elsewhere whole, as the dict the ORM reads. Either way the caller keeps `fields` of it."""
    if connection.vendor != "postgresql":
        judged = Judgment.objects.filter(query__golden_set=golden_set, query__retired_at__isnull=True).values("page_id")
        return list(Page.objects.filter(corpus_id=golden_set.corpus_id, id__in=judged).values_list(
            "id", "doc_id", "metadata", "published_at", "content_hash"
        ).iterator(chunk_size=20_000))
    page, judgment, query = (connection.ops.quote_name(model._meta.db_table) for model in (Page, Judgment, Query))
    # One object of each field the page has, merged: the same jsonb as aggregating
    # jsonb_each's entries of the fields, at a third of the cost (no set-returning
    # function and aggregate a page: 0.15 s of 45,000 pages).
    cut = "".join(" || CASE WHEN p.metadata ? %s THEN jsonb_build_object(%s::text, p.metadata -> %s) ELSE '{}'::jsonb END"
                  for _ in fields)
    sql = f"""
        SELECT p.id, p.doc_id, ('{{}}'::jsonb{cut})::text, p.published_at, p.content_hash
        FROM {page} p
        WHERE p.corpus_id = %s AND p.id IN (
            SELECT j.page_id FROM {judgment} j JOIN {query} q ON q.id = j.query_id
            WHERE q.golden_set_id = %s AND q.retired_at IS NULL
        )
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [name for name in fields for _ in range(3)] + [golden_set.corpus_id, golden_set.pk])
        return cursor.fetchall()


def natural_ranks(pks: Sequence[int], ids: Sequence[str]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The canonical order of rows given by their `pks` and `ids` (parallel): (the row
    indices in natural order of their ids, the pks sorted, the natural rank of each sorted
    pk), so that rank_of(sorted_pks, ranks, any pks) gives each pk's rank. natural_key is
    total, so no two ids share a rank."""
    pk_array = np.asarray(pks, dtype=np.int64)
    by_id = natural_order(ids)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.asarray(by_id, dtype=np.int64)] = np.arange(len(ids), dtype=np.int64)
    by_pk = np.argsort(pk_array, kind="stable")
    return by_id, pk_array[by_pk], rank[by_pk]


def rank_of(sorted_pks: np.ndarray, ranks: np.ndarray, pks: np.ndarray) -> np.ndarray:
    return ranks[np.searchsorted(sorted_pks, pks)]


def version_id_taken() -> int | None:
    """A new Version primary key taken from its sequence, so that the version's labels can
    be written before its row (their foreign keys are checked at commit); None on a
    database without sequences (SQLite), where they are written after it."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [Version._meta.db_table])
        return cursor.fetchone()[0]


_LABEL_COLUMNS = [("version_id", ">i8", 8), ("query_id", ">i8", 8), ("page_id", ">i8", 8), ("grade", ">i2", 2), ("position", ">i4", 4)]


@contextmanager
def labels_written_meanwhile(
    version_id: int | None, query: np.ndarray, page: np.ndarray, grade: np.ndarray, progress: Progress, step: str,
) -> Iterator[None]:
    """write_labels under an id from version_id_taken, the server writing them while the
    body runs: every label is sent on entering, and the step `step` (one item) is the wait
    for the server at the end. The body must not use the connection. With no id (SQLite)
    the body runs alone and the caller writes the labels after the version row."""
    if version_id is None:
        yield
        return
    count = len(query)
    values = {"version_id": version_id, "query_id": query, "page_id": page, "grade": grade,
              "position": np.arange(count, dtype=np.int64)}
    with copy_arrays_meanwhile(VersionLabel._meta.db_table, _LABEL_COLUMNS, values, count) as end:
        yield
        for _ in progress([count], step):
            end()


def write_labels(version_id: int, query: np.ndarray, page: np.ndarray, grade: np.ndarray, progress: Progress, step: str) -> None:
    """The version's labels, in the order given, `position` their index, by executemany in
    the caller's transaction, after the version's row: where version_id_taken has no id to
    give (SQLite). PostgreSQL's go by labels_written_meanwhile. `progress` counts blocks of
    LABEL_BLOCK labels."""
    count = len(query)
    columns = ["version_id", "query_id", "page_id", "grade", "position"]
    for start in progress(range(0, count, LABEL_BLOCK), step):
        block = slice(start, min(start + LABEL_BLOCK, count))
        bulk_insert(
            VersionLabel._meta.db_table, columns,
            zip([version_id] * (block.stop - block.start), query[block].tolist(), page[block].tolist(),
                grade[block].tolist(), range(block.start, block.stop)),
        )