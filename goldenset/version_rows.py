"""The rows of a version as columns: what version_publish reads, orders, hashes and writes.

A version of a large set holds a million labels. Handled as a Python tuple each (resolved
pair by pair, sorted by tuple keys, written row by row) they cost tens of seconds; as
numpy columns, read from the database without an object per value and written by COPY,
they cost a small multiple of a plain INSERT ... SELECT of the same rows (bench/publish.py).

The steps, each a function here, in version_publish's order:

1. `version_rows_read`: every judgment of the set's active queries read as integer columns
   (lib.bulk.select_int_columns) and resolved by the one rule,
   goldenset.resolution.resolve_columns; the active queries and the labelled pages, with
   their slice values as the hash's canonical JSON and the stored JSON.
2. `VersionRows.ordered`: the canonical order of a version's rows, the natural order of
   their ids (lib.ids.natural_order), independent of row ids and databases.
3. the hash, which version_publish makes from the ordered rows (lib.hashing);
4. `version_rows_write`, after the version's row: the labels (`position` their index in
   that order), the queries' and the pages' snapshots.
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection

from goldenset.answers import ReferenceText, live_reference_answer_rows
from goldenset.import_rows import metadata_json
from goldenset.models import (
    EvidenceSpan,
    GoldenSet,
    Judgment,
    Page,
    Query,
    VersionAnswer,
    VersionDuplicate,
    VersionLabel,
    VersionPage,
    VersionQuery,
    VersionSpan,
)
from goldenset.resolution import ADJUDICATED, HUMAN, IMPORTED, resolve_columns_deciding
from goldenset.stale_spans import stale_spans_apply
from lib.bulk import model_arrays_insert, model_rows_insert, select_int_columns
from lib.hashing import VersionEvidence, canonical_json, weight_line_json
from lib.ids import natural_key, natural_order
from lib.progress import Progress

# Labels per block of the hash and write steps: a block is what a step's progress counts,
# so that a million labels report a few dozen times, not a million.
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
    rows of resolved_labels(golden_set) whose query is active, as columns. A judgment of a
    duplicate group's member counts as a judgment of the group's first member."""
    return resolved_label_deciders(golden_set_pk)[:3]


def resolved_label_deciders(golden_set_pk: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """resolved_label_columns with a fourth column: the id of the judgment that decided each label."""
    rows = select_int_columns(_judgment_columns_sql(), 6, [golden_set_pk])
    pages = rows[:, 1]
    members, groups = duplicate_groups(GoldenSet.objects.filter(pk=golden_set_pk).values_list("corpus_id", flat=True).get())
    if len(members):
        found = np.searchsorted(members, pages).clip(0, len(members) - 1)
        pages = np.where(members[found] == pages, groups[found], pages)
    return resolve_columns_deciding(rows[:, 0], pages, *(rows[:, column] for column in range(2, 6)))


def duplicate_groups(corpus_pk: int) -> tuple[np.ndarray, np.ndarray]:
    """(member page pks sorted, their group's first page pk) of the corpus's duplicates."""
    pairs = np.array(
        list(Page.objects.filter(corpus_id=corpus_pk, duplicate_of__isnull=False).order_by("pk").values_list("pk", "duplicate_of_id")),
        dtype=np.int64,
    ).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def labelled_pages(golden_set: GoldenSet, fields: list[str]) -> list[tuple]:
    """(pk, doc_id, metadata, published_at, content_hash) of the pages judged on an active
    query of the set, found by the database (a semi-join), not by sending it an IN list of
    200,000 ids or reading the whole corpus. On PostgreSQL the metadata comes cut down to
    `fields` by the server, as its JSON text, for the caller to decode once per distinct
    text (a corpus's slice values are a handful; its whole metadata, a JSON decode a page);
    elsewhere whole, as the dict the ORM reads. Either way the caller keeps `fields` of it."""
    if connection.vendor != "postgresql":
        judged = Judgment.objects.filter(query__golden_set=golden_set, query__retired_at__isnull=True).values("page_id")
        return list(
            Page.objects.filter(corpus_id=golden_set.corpus_id, id__in=judged)
            .values_list("id", "doc_id", "metadata", "published_at", "content_hash")
            .iterator(chunk_size=20_000)
        )
    page, judgment, query = (connection.ops.quote_name(model._meta.db_table) for model in (Page, Judgment, Query))
    # One object of each field the page has, merged: the same jsonb as aggregating
    # jsonb_each's entries of the fields, without a set-returning function and an
    # aggregate for every page.
    cut = "".join(" || CASE WHEN p.metadata ? %s THEN jsonb_build_object(%s::text, p.metadata -> %s) ELSE '{}'::jsonb END" for _ in fields)
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


@dataclass
class VersionRows:
    """What a version snapshots, read and resolved (version_rows_read)."""

    # (pk, query_id, slice values as canonical JSON for the hash, as JSON to store)
    queries: list[tuple[int, str, str, str]]
    # (pk, doc_id, canonical JSON, JSON to store, published_at, content_hash)
    pages: list[tuple[int, str, str, str, datetime | None, str]]
    # The labels as parallel int64 columns: query pk, page pk, grade.
    label_query: np.ndarray
    label_page: np.ndarray
    label_grade: np.ndarray
    # The judgment that decided each label (goldenset.resolution), whose hop and spans it takes.
    label_decider: np.ndarray | None = None
    # The hop of each label that has one: {label index: hop}.
    hops: dict[int, str] = field(default_factory=dict)
    # Evidence spans as parallel int64 columns: the label's index, start, end, grade.
    span_label: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    span_start: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    span_end: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    span_grade: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # Duplicate groups of the corpus: (member page pk, member doc_id, group page pk, group doc_id).
    duplicates: list[tuple[int, str, int, str]] = field(default_factory=list)
    # Reference answers of the active queries: (query pk, query_id, answer), natural query id order.
    answers: list[tuple[int, str, ReferenceText]] = field(default_factory=list)
    # Sampling weights of the active queries drawn from a query log (traffic.sampling), by
    # query pk: (inclusion_probability, stratum, traffic_count); the queries without one absent.
    weights: dict[int, tuple[float | None, str, int | None]] = field(default_factory=dict)
    # After ordered(): each label's query's and page's index in `queries` and `pages`.
    label_query_rank: np.ndarray | None = None
    label_page_rank: np.ndarray | None = None

    def ordered(self) -> "VersionRows":
        """The same rows in the canonical order: queries and pages in natural order of
        their ids, labels by (query id, doc id) in that order."""
        query_order, query_pks, query_ranks = natural_ranks([row[0] for row in self.queries], [row[1] for row in self.queries])
        page_order, page_pks, page_ranks = natural_ranks([row[0] for row in self.pages], [row[1] for row in self.pages])
        query_rank = rank_of(query_pks, query_ranks, self.label_query)
        page_rank = rank_of(page_pks, page_ranks, self.label_page)
        order = np.lexsort((page_rank, query_rank))
        # Where each label went: spans and hops follow their label.
        new_index = np.empty(len(order), dtype=np.int64)
        new_index[order] = np.arange(len(order), dtype=np.int64)
        span_label = new_index[self.span_label]
        span_order = np.lexsort((self.span_start, span_label))
        return VersionRows(
            queries=[self.queries[i] for i in query_order],
            pages=[self.pages[i] for i in page_order],
            label_query=self.label_query[order],
            label_page=self.label_page[order],
            label_grade=self.label_grade[order],
            label_decider=None if self.label_decider is None else self.label_decider[order],
            hops={int(new_index[index]): hop for index, hop in self.hops.items()},
            span_label=span_label[span_order],
            span_start=self.span_start[span_order],
            span_end=self.span_end[span_order],
            span_grade=self.span_grade[span_order],
            duplicates=sorted(self.duplicates, key=lambda row: natural_key(row[1])),
            answers=sorted(self.answers, key=lambda row: natural_key(row[1])),
            weights=self.weights,
            label_query_rank=query_rank[order],
            label_page_rank=page_rank[order],
        )

    def evidence(self, span_overlap: tuple[int, float]) -> VersionEvidence:
        """The hops, spans, duplicate groups and answers of ordered rows, as the content hash covers them."""
        query_ids = [row[1] for row in self.queries]
        doc_ids = [row[1] for row in self.pages]

        def ids(label: int) -> tuple[str, str]:
            return query_ids[self.label_query_rank[label]], doc_ids[self.label_page_rank[label]]

        return VersionEvidence(
            hops=[(*ids(label), hop) for label, hop in sorted(self.hops.items())],
            spans=[
                (*ids(label), start, end, grade)
                for label, start, end, grade in zip(
                    self.span_label.tolist(), self.span_start.tolist(), self.span_end.tolist(), self.span_grade.tolist()
                )
            ],
            span_overlap=span_overlap,
            duplicates=[(member, group) for _, member, _, group in self.duplicates],
            answers=[(query_id, text.hash_json()) for _, query_id, text in self.answers],
            weights=[(query_id, weight_line_json(*self.weights[pk])) for pk, query_id, _, _ in self.queries if pk in self.weights],
        )


def version_rows_read(golden_set: GoldenSet, progress: Progress, steps: Sequence[str]) -> VersionRows:
    """The set's active queries, its labels (progress: one item, step steps[0]) with their
    hops and evidence spans, the pages they name (a row each, step steps[1]), the
    corpus's duplicate groups and the active queries' reference answers, in no particular order."""
    query_fields, page_fields = list(golden_set.query_slice_fields), list(golden_set.page_slice_fields)
    queries = list(
        Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list(
            "id", "query_id", "metadata", "inclusion_probability", "stratum", "traffic_count"
        )
    )
    [(label_query, label_page, label_grade, label_decider)] = progress([resolved_label_deciders(golden_set.pk)], steps[0])
    pages = list(progress(labelled_pages(golden_set, page_fields), steps[1]))
    query_texts = slice_texts((metadata for _, _, metadata, *_ in queries), query_fields)
    page_texts = slice_texts((metadata for _, _, metadata, _, _ in pages), page_fields)
    rows = VersionRows(
        queries=[(pk, query_id, *texts) for (pk, query_id, *_), texts in zip(queries, query_texts)],
        pages=[(pk, doc_id, *texts, published_at, page_hash) for (pk, doc_id, _, published_at, page_hash), texts in zip(pages, page_texts)],
        label_query=label_query,
        label_page=label_page,
        label_grade=label_grade,
        label_decider=label_decider,
        weights={pk: tuple(weight) for pk, _, _, *weight in queries if weight_line_json(*weight) is not None},
    )
    _read_evidence(golden_set, rows)
    rows.answers = live_reference_answer_rows(golden_set)
    stale_spans_apply(golden_set, rows)  # spans of changed pages: moved, or their label left out (goldenset.stale_spans)
    return rows


def _read_evidence(golden_set: GoldenSet, rows: VersionRows) -> None:
    """Fill `rows`' hops, spans and duplicate groups. Few judgments carry a hop or spans and
    few documents are duplicates: each is read whole for the set and kept where it decided a
    label, rather than looked up label by label."""
    judgments = Judgment.objects.filter(query__golden_set=golden_set, query__retired_at__isnull=True)
    by_decider = {int(decider): index for index, decider in enumerate(rows.label_decider.tolist())} if len(rows.label_decider) else {}
    for ident, hop in judgments.exclude(hop="").values_list("id", "hop").iterator(chunk_size=20_000):
        index = by_decider.get(ident)
        if index is not None:
            rows.hops[index] = hop
    spans = []
    for ident, page, start, end, grade in (
        EvidenceSpan.objects.filter(judgment__in=judgments)
        .values_list("judgment_id", "judgment__page_id", "start", "end", "grade")
        .iterator(chunk_size=20_000)
    ):
        index = by_decider.get(ident)
        # A judgment of a duplicate member other than the group's first: its offsets are
        # into that member's text, so its spans do not carry over to the group's label.
        if index is not None and rows.label_page[index] == page:
            spans.append((index, start, end, grade))
    if spans:
        rows.span_label, rows.span_start, rows.span_end, rows.span_grade = (np.array(column, dtype=np.int64) for column in zip(*spans))
    rows.duplicates = list(
        Page.objects.filter(corpus_id=golden_set.corpus_id, duplicate_of__isnull=False).values_list(
            "pk", "doc_id", "duplicate_of_id", "duplicate_of__doc_id"
        )
    )


def slice_texts(metadatas: Iterable[dict | str], fields: list[str]) -> list[tuple[str, str]]:
    """(canonical JSON for the hash, JSON to store) of the slice values of each metadata, a
    dict or the JSON text of its slice values (labelled_pages on PostgreSQL), each made once
    per distinct value: 200,000 pages or 10,000 queries have a handful between them."""
    made: dict[str, tuple[str, str]] = {}
    texts = []
    for metadata in metadatas:
        # The text itself, or repr, which tells apart every two JSON values that differ (1, 1.0, True, "1").
        key = metadata if isinstance(metadata, str) else repr(_slice_values(metadata, fields))
        pair = made.get(key)
        if pair is None:
            values = _slice_values(json.loads(metadata) if isinstance(metadata, str) else metadata, fields)
            pair = made[key] = (canonical_json(values), metadata_json(values))
        texts.append(pair)
    return texts


def _slice_values(metadata: dict, fields: list[str]) -> dict:
    return {name: metadata[name] for name in fields if name in metadata}


def version_rows_write(version_id: int, rows: VersionRows, progress: Progress, steps: Sequence[str]) -> None:
    """Write ordered `rows` as version `version_id`'s labels (`position` their index; the
    progress of step steps[0] counts blocks of LABEL_BLOCK labels, one write each) with their
    hops and spans, its queries' snapshots (steps[1], a row each), its pages' (steps[2]) and
    its duplicate groups and answers, in the caller's transaction, after the version's row."""
    count = len(rows.label_grade)
    # Labels with a hop are written a row each (a hop's text has no fixed width for the
    # column writer); the rest, nearly all, as columns with the hop column's default "".
    with_hop = np.zeros(count, dtype=bool)
    with_hop[list(rows.hops)] = True
    for start in progress(range(0, count, LABEL_BLOCK), steps[0]):
        block = np.arange(start, min(start + LABEL_BLOCK, count), dtype=np.int64)
        plain = block[~with_hop[block]]
        if not len(plain):
            continue
        model_arrays_insert(
            VersionLabel,
            {
                "version_id": version_id,
                "query_id": rows.label_query[plain],
                "page_id": rows.label_page[plain],
                "grade": rows.label_grade[plain],
                "position": plain,
            },
            len(plain),
        )
    if rows.hops:
        model_rows_insert(
            VersionLabel,
            ["version_id", "query_id", "page_id", "grade", "hop", "position"],
            (
                (version_id, int(rows.label_query[index]), int(rows.label_page[index]), int(rows.label_grade[index]), hop, index)
                for index, hop in sorted(rows.hops.items())
            ),
        )
    if len(rows.span_label):
        model_rows_insert(
            VersionSpan,
            ["version_id", "query_id", "page_id", "start", "end", "grade"],
            (
                (version_id, int(rows.label_query[label]), int(rows.label_page[label]), start, end, grade)
                for label, start, end, grade in zip(
                    rows.span_label.tolist(), rows.span_start.tolist(), rows.span_end.tolist(), rows.span_grade.tolist()
                )
            ),
        )
    unweighted = (None, "", None)
    model_rows_insert(
        VersionQuery,
        ["version_id", "query_id", "metadata", "inclusion_probability", "stratum", "traffic_count"],
        ((version_id, pk, stored, *rows.weights.get(pk, unweighted)) for pk, _, _, stored in progress(rows.queries, steps[1])),
    )
    model_rows_insert(
        VersionPage,
        ["version_id", "page_id", "metadata", "published_at", "content_hash"],
        ((version_id, pk, stored, published_at, page_hash) for pk, _, _, stored, published_at, page_hash in progress(rows.pages, steps[2])),
    )
    if rows.duplicates:
        model_rows_insert(
            VersionDuplicate,
            ["version_id", "page_id", "group_page_id"],
            ((version_id, member, group) for member, _, group, _ in rows.duplicates),
        )
    if rows.answers:
        model_rows_insert(
            VersionAnswer,
            ["version_id", "query_id", "answer", "aliases", "key_facts"],
            (
                (version_id, pk, text.answer, json.dumps(list(text.aliases)), json.dumps(list(text.key_facts)))
                for pk, _, text in rows.answers
            ),
        )
