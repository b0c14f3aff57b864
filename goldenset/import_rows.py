"""The rows an import writes in bulk: pages, queries and imported judgments.

golden_set_create and qrels_import (goldenset.services) validate first and call these inside
their transaction. At 100,000 pages every per-row step shows (bench/import_export.py): rows
go by COPY (lib.bulk.model_rows_insert, model_arrays_insert), primary keys come back in one fetch, each page's content
hash is computed once for its row and its judgments. The foreign keys check every row's
references at commit, as for any other write.
"""

import json

import numpy as np
import orjson
from django.db import connection
from django.utils import timezone

from goldenset.models import Corpus, GoldenSet, Judgment, Page, Query
from lib.bulk import model_arrays_insert, model_rows_insert
from lib.formats import JsonRecord
from lib.hashing import text_hash
from lib.progress import Progress

# json.dumps(value, ensure_ascii=False) builds a new encoder on every call; one shared
# encoder writes the same text in about half the time, which shows at 100,000 pages.
metadata_json = json.JSONEncoder(ensure_ascii=False).encode

# Values orjson writes as the JSON value json writes (an integer past 64 bits it refuses).
_ORJSON_SAFE = frozenset((str, int, bool, type(None)))


def _stored_json(metadata: dict) -> str:
    """The JSON of a page's or query's metadata as written to its column: orjson's text for
    a flat object of strings, integers, booleans and nulls (nearly every corpus's), a
    quarter of the encoder's time; metadata_json's otherwise (orjson writes NaN as null).
    The value is the same either way, and PostgreSQL stores jsonb as a value, not a text;
    SQLite keeps the text, without the spaces after ':' and ','."""
    if _ORJSON_SAFE.issuperset(map(type, metadata.values())):
        try:
            return orjson.dumps(metadata).decode()
        except orjson.JSONEncodeError:
            pass  # an integer past 64 bits, a lone surrogate, a key that is not a string
    return metadata_json(metadata)


# Pages and queries go by lib.bulk.model_rows_insert: on PostgreSQL in COPY's binary
# format, laid out from the models' fields, which the server stores without parsing text
# (a page's two timestamps above all); the metadata as its JSON text.
_PAGE_FIELDS = [
    "corpus_id",
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
_QUERY_FIELDS = ["golden_set_id", "query_id", "text", "has_text", "metadata", "created_at"]


def insert_pages(
    corpus: Corpus, records: list[JsonRecord], dates: list[tuple], has_text: bool, progress: Progress
) -> tuple[dict[str, int], dict[str, str]]:
    """Insert pages; return {doc_id: primary key} and {doc_id: content hash} of the new pages."""
    now = timezone.now()
    hashes = {record.id: text_hash(record.title, record.text, record.url) for record in records}
    rows = (
        (
            corpus.id,
            record.id,
            record.title,
            record.text,
            record.url,
            has_text,
            _stored_json(record.metadata),
            published_at,
            modified_at,
            hashes[record.id],
            now,
        )
        for record, (published_at, modified_at) in zip(progress(records, "writing pages"), dates, strict=True)
    )
    model_rows_insert(Page, _PAGE_FIELDS, rows)
    return {doc_id: pk for doc_id, pk in _column_pairs(Page, "doc_id", "id", corpus_id=corpus.id) if doc_id in hashes}, hashes


def insert_queries(golden_set: GoldenSet, records: list[JsonRecord], has_text: bool) -> dict[str, int]:
    now = timezone.now()
    rows = ((golden_set.id, record.id, record.text, has_text, _stored_json(record.metadata), now) for record in records)
    model_rows_insert(Query, _QUERY_FIELDS, rows)
    return dict(_column_pairs(Query, "query_id", "id", golden_set_id=golden_set.id))


def _column_pairs(model: type[Page] | type[Query], key: str, value: str, **parent: int) -> list[tuple]:
    """(key, value) columns of the rows of `model` of one parent (`corpus_id=...`), in one
    fetch: the ORM's values_list fetches 100 rows a call, twice the time at 100,000 rows."""
    [(column, pk)] = parent.items()
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, {value} FROM {table} WHERE {column} = %s", [pk])
        return cursor.fetchall()


def insert_imported_judgments(
    corpus: Corpus,
    pairs: dict[tuple[str, str], int],
    query_pks: dict[str, int],
    page_pks: dict[str, int],
    progress: Progress,
    page_hashes: dict[str, str] | None = None,
    hops: dict[tuple[str, str], str] | None = None,
) -> int:
    """Insert `pairs` as imported judgments of the pages of `corpus` named in `page_pks`;
    `page_hashes` ({doc_id: content hash}) when the caller has just computed them, else
    they are read; `hops` the hop of the pairs that have one (the others take "")."""
    if page_hashes is None:
        # Read the hashes by corpus rather than by a list of page ids: a filter on 100,000
        # ids took seconds to build and parse (bench/import_export.py), a corpus scan does not.
        page_hashes = dict(_column_pairs(Page, "doc_id", "content_hash", corpus_id=corpus.id))
    now = timezone.now()
    hashes = [page_hashes[doc_id] for _, doc_id in progress(pairs, "writing judgments")]
    width = len(hashes[0]) if hashes else 0
    fields = ["query_id", "page_id", "grade", "source", "note", "page_hash", "created_at"]
    if hops:
        # Hops vary in length: a tuple a row, as for hashes of another form below.
        rows = (
            (query_pks[query_id], page_pks[doc_id], grade, Judgment.Source.IMPORTED, "", page_hash, now, hops.get((query_id, doc_id), ""))
            for ((query_id, doc_id), grade), page_hash in zip(pairs.items(), hashes)
        )
        return model_rows_insert(Judgment, [*fields, "hop"], rows)
    if not all(len(value) == width and value.isascii() for value in hashes):  # hashes of another form, kept by older pages
        rows = (
            (query_pks[query_id], page_pks[doc_id], grade, Judgment.Source.IMPORTED, "", page_hash, now)
            for ((query_id, doc_id), grade), page_hash in zip(pairs.items(), hashes)
        )
        return model_rows_insert(Judgment, fields, rows)
    # As numpy columns: a tuple a row, written by psycopg, and the server's parsing of
    # their text would cost a Python object per value.
    count = len(pairs)
    columns = [
        np.fromiter((query_pks[query_id] for query_id, _ in pairs), dtype=np.int64, count=count),
        np.fromiter((page_pks[doc_id] for _, doc_id in pairs), dtype=np.int64, count=count),
        # Grades are in the 16-bit range: the readers refuse others (lib.formats.GRADE_RANGE).
        np.fromiter(pairs.values(), dtype=np.int16, count=count),
        Judgment.Source.IMPORTED.value,
        "",
        np.array(hashes, dtype=f"S{width}"),
        now,
    ]
    return model_arrays_insert(Judgment, dict(zip(fields, columns)), count)
