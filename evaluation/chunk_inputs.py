"""What a run of any chunking is scored from at its two levels (SEMANTICS.md, "Documents,
chunkings and levels"), read from the database and kept per process: a chunking's chunks
as arrays, a corpus's doc ids in trec_eval's order, and a version's labels projected onto
a chunking, and the text lengths of the pages a version labels. The arithmetic is
lib.levels'.

When it is rebuilt: a chunking's table (goldenset.chunk_labels) when its chunk count
changes (chunks are only added), a corpus's order when its page count or highest page key
changes, a version's projection and its pages' lengths never for the same (version,
chunking) as it stands (a version never changes).
Each keeps the last _KEPT entries it used; `forget` drops what this process holds.
"""

import bisect
import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from django.db.models import Count, Max
from django.db.models.functions import Length

from evaluation import scoring_inputs
from evaluation.engine import QrelsArrays
from goldenset import chunk_labels as chunk_labels_of
from goldenset.models import Chunk, Chunking, Page, Version, VersionDuplicate, VersionLabel
from lib import levels
from lib.bulk import select_int_rows
from lib.errors import ProblemCollector
from lib.runs import RankedRun, RunEntries

_KEPT = 2
_LOCK = threading.Lock()
_ORDERS: "OrderedDict[tuple, CorpusOrder]" = OrderedDict()
_LABELS: "OrderedDict[tuple, ChunkLabels]" = OrderedDict()
_LENGTHS: "OrderedDict[tuple, PageLengths]" = OrderedDict()


def _cached(store: OrderedDict, key: tuple, build):
    with _LOCK:
        found = store.get(key)
        if found is not None:
            store.move_to_end(key)
            return found
    found = build()
    with _LOCK:
        store[key] = found
        while len(store) > _KEPT:
            store.popitem(last=False)
    return found


def forget() -> None:
    """Drop every order and projection this process holds (and the chunk tables)."""
    chunk_labels_of.forget()
    with _LOCK:
        _ORDERS.clear()
        _LABELS.clear()
        _LENGTHS.clear()
        _PAGE_RANKS.clear()


# --- chunkings ---------------------------------------------------------------------------


chunking_named = chunk_labels_of.chunking_named


def chunk_run_keys(chunking: Chunking, entries: RunEntries, problems: ProblemCollector) -> dict[str, int]:
    """The Chunk key of each id of `entries`; each id that is not a chunk of `chunking` is a
    problem naming the first line it is on (a run of a chunking returns its chunks only)."""
    wanted = set(entries.doc_ids)
    keys = {
        chunk_id: key
        for chunk_id, key in Chunk.objects.filter(chunking=chunking).values_list("chunk_id", "id").iterator(chunk_size=50_000)
        if chunk_id in wanted
    }
    if len(keys) < len(wanted):
        _, first_entry = np.unique(entries.doc_index, return_index=True)
        for d in np.argsort(entries.line_numbers[first_entry], kind="stable").tolist():
            doc_id = entries.doc_ids[d]
            if doc_id not in keys:
                line = int(entries.line_numbers[first_entry[d]])
                problems.add(f"{entries.source}:{line}: id {doc_id!r} is not a chunk of chunking {chunking.name!r}")
    return keys


chunk_table = chunk_labels_of.chunk_table


# --- trec_eval's order of doc ids ---------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CorpusOrder:
    """A corpus's pages by key (`keys` ascending) and the place of each one's doc id in
    byte order (`ranks`); `doc_ids` every doc id in that order, to place an id from
    outside the corpus among them."""

    keys: np.ndarray
    ranks: np.ndarray
    doc_ids: list[str]

    @cached_property
    def _dense(self) -> np.ndarray | None:
        return levels.dense_index(self.keys)

    def ranks_of(self, pages: np.ndarray) -> np.ndarray:
        """The rank of each of `pages` (keys of the corpus's pages)."""
        return self.ranks[levels.dense_lookup(self.keys, self._dense, pages, "a page is not in the corpus")]


def corpus_order(corpus_id: int) -> CorpusOrder:
    """The corpus's CorpusOrder (kept per process)."""

    def build() -> CorpusOrder:
        rows = list(Page.objects.filter(corpus_id=corpus_id).values_list("id", "doc_id").iterator(chunk_size=100_000))
        # Python orders str by code point, which is UTF-8's byte order: trec_eval's strcmp.
        rows.sort(key=lambda row: row[1])
        keys = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        order = np.argsort(keys, kind="stable")
        return CorpusOrder(keys=keys[order], ranks=order.astype(np.int64), doc_ids=[row[1] for row in rows])

    found = Page.objects.filter(corpus_id=corpus_id).aggregate(count=Count("id"), top=Max("id"))
    return _cached(_ORDERS, (corpus_id, found["count"], found["top"]), build)


def _ranks(documents: np.ndarray, external_doc_ids: tuple[str, ...], order: CorpusOrder) -> tuple[np.ndarray, int]:
    """Each document's place in doc id order (one number per document) and a bound of them:
    a page's rank in its corpus, a doc id from outside the corpus (a negative key) placed
    among them by its own id."""
    inside = documents > 0
    if inside.all():
        return order.ranks_of(documents), len(order.keys)
    # Corpus doc r at 2r + 1; an outside id at 2 x (where it would be inserted), then by
    # its own id among outside ids that fall in the same gap.
    outside_sorted = sorted(range(len(external_doc_ids)), key=external_doc_ids.__getitem__)
    secondary = np.empty(len(external_doc_ids), dtype=np.int64)
    secondary[outside_sorted] = np.arange(len(outside_sorted))
    gap = np.asarray([2 * bisect.bisect_left(order.doc_ids, doc_id) for doc_id in external_doc_ids], dtype=np.int64)
    primary = np.empty(len(documents), dtype=np.int64)
    second = np.zeros(len(documents), dtype=np.int64)
    primary[inside] = 2 * order.ranks_of(documents[inside]) + 1
    outside = -documents[~inside] - 1
    primary[~inside], second[~inside] = gap[outside], secondary[outside]
    _, dense = np.unique(primary * (len(external_doc_ids) + 1) + second, return_inverse=True)
    return dense.astype(np.int64), int(dense.max()) + 1


def _groups(version: Version) -> tuple[np.ndarray, np.ndarray]:
    """The version's duplicate members (keys ascending) and each one's group page."""
    if not version.duplicate_count:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rows = np.asarray(list(VersionDuplicate.objects.filter(version=version).values_list("page_id", "group_page_id")), dtype=np.int64)
    order = np.argsort(rows[:, 0])
    return rows[order, 0], rows[order, 1]


def _grouped(pages: np.ndarray, members: np.ndarray, groups: np.ndarray) -> np.ndarray:
    if not len(members):
        return pages
    at, hit = levels.sorted_rows(members, pages)
    return np.where(hit, groups[at], pages)


def document_ranked(*, ranked: RankedRun, version: Version, chunking: Chunking | None, rows: np.ndarray | None = None) -> RankedRun:
    """The run at document level (levels.documents_in_order): its chunks replaced by their
    documents, and the version's duplicate members by their group's page. A run of
    documents in a version without duplicate groups is returned as it is. `rows`: each
    entry's row in the chunking's table, when the caller looked them up already."""
    members, groups = _groups(version)
    if chunking is None:
        if not len(members) or not np.isin(ranked.doc_keys, members).any():
            return ranked
        documents = ranked.doc_keys
    else:
        table = chunk_table(chunking)
        rows = table.rows(ranked.doc_keys) if rows is None else rows
        documents = table.pages[rows] if len(members) else None
        if documents is None or not np.isin(documents, members).any():
            # Every document is a page of the chunking, none a duplicate member: their
            # order was read once (page_ranks), by the table's rows.
            ranks, bound = page_ranks(chunking, version.golden_set.corpus_id)
            return levels.documents_in_order(ranked, table.pages, ranks, bound, entry_rows=rows)
    return documents_ranked(ranked=ranked, documents=_grouped(documents, members, groups), corpus_id=version.golden_set.corpus_id)


def documents_pooled(*, ranked: RankedRun, version: Version, chunking: Chunking | None, depth: int) -> RankedRun:
    """What the top `depth` of the run holds at document level, for the pages it pools
    (completeness.pooled_labels): its document level (document_ranked), except for a run
    of a chunking no query of which has more than `depth` entries, in a version without
    duplicate groups: every document it names is then in its top `depth` whatever their
    order, so each entry only becomes its page (a page may repeat within a query), without
    the ordering a re-score would otherwise do once more for every other run."""
    deepest = int(np.diff(ranked.offsets).max(initial=0))
    if chunking is None or deepest > depth or version.duplicate_count:
        return document_ranked(ranked=ranked, version=version, chunking=chunking)
    table = chunk_table(chunking)
    return dataclasses.replace(ranked, doc_keys=table.pages[table.rows(ranked.doc_keys)])


_PAGE_RANKS: "OrderedDict[tuple, tuple[np.ndarray, int]]" = OrderedDict()


def page_ranks(chunking: Chunking, corpus_id: int) -> tuple[np.ndarray, int]:
    """The place in doc id order of each chunk's page (by the chunking's table's rows) and a
    bound of them, read once per chunking as it stands (kept per process): pages added to
    the corpus later fall between these but never reorder them, and a run of the chunking
    names only its chunks' pages, so the places stay right for its runs."""

    def build() -> tuple[np.ndarray, int]:
        order = corpus_order(corpus_id)
        return order.ranks_of(chunk_table(chunking).pages), len(order.keys)

    return _cached(_PAGE_RANKS, (chunking.pk, chunking.written_at, chunking.chunk_count), build)


def chunks_in_groups(*, ranked: RankedRun, version: Version, chunking: Chunking) -> RankedRun:
    """A run of `chunking` at chunk level with the version's duplicate groups (SEMANTICS.md,
    "Duplicate groups"): a chunk of a group's member stands for the chunk of the group's first
    member at the same offsets, which carries the group's labels (a chunker cuts the same
    text alike), and a query's later entries of one chunk are dropped, so a group counts once
    at chunk level as at document level. A member's chunk with no such counterpart (a near
    duplicate cut elsewhere) stays as it is: unjudged. Entries keep the run's order."""
    members, groups = _groups(version)
    if not len(members):
        return ranked
    table = chunk_table(chunking)
    rows = table.rows(ranked.doc_keys)
    pages = table.pages[rows]
    in_member = np.isin(pages, members)
    if not in_member.any():
        return ranked
    group_pages = _grouped(pages[in_member], members, groups)
    wanted = np.isin(table.pages, np.unique(group_pages))
    counterpart = {
        (page, start, end): key
        for key, page, start, end in zip(
            table.keys[wanted].tolist(), table.pages[wanted].tolist(), table.starts[wanted].tolist(), table.ends[wanted].tolist()
        )
    }
    doc_keys = ranked.doc_keys.copy()
    member_rows = rows[in_member]
    doc_keys[in_member] = [
        counterpart.get((group, start, end), key)
        for group, start, end, key in zip(
            group_pages.tolist(),
            table.starts[member_rows].tolist(),
            table.ends[member_rows].tolist(),
            ranked.doc_keys[in_member].tolist(),
        )
    ]
    # The first entry of each (query, chunk), in the run's order.
    query_index = ranked.query_index
    low = int(doc_keys.min())
    _, first = np.unique(query_index * (int(doc_keys.max()) - low + 1) + (doc_keys - low), return_index=True)
    kept = np.sort(first)
    offsets = np.r_[0, np.cumsum(np.bincount(query_index[kept], minlength=len(ranked.query_ids)))].astype(np.int64)
    return RankedRun(
        query_ids=ranked.query_ids,
        offsets=offsets,
        doc_keys=doc_keys[kept],
        scores=ranked.scores[kept],
        external_doc_ids=ranked.external_doc_ids,
        depth=ranked.depth,
        dropped_by_depth=ranked.dropped_by_depth,
    )


def documents_ranked(*, ranked: RankedRun, documents: np.ndarray, corpus_id: int) -> RankedRun:
    """`ranked` read at document level when entry e is of document `documents[e]` (a page
    key, or a negative key outside the corpus): each document at its first (best) entry, in
    trec_eval's order among documents (levels.documents_in_order). The one rule scoring and
    pools read a run of chunks by."""
    ranks, bound = _ranks(documents, ranked.external_doc_ids, corpus_order(corpus_id))
    return levels.documents_in_order(ranked, documents, ranks, bound)


# --- a version's labels on a chunking -----------------------------------------------------


@dataclass(frozen=True, eq=False)
class ChunkLabels:
    """A version's labels on a chunking: `qrels` the chunk labels (doc keys are Chunk keys,
    the version's queries in its order), and per query its relevant evidence, rows
    `evidence_offsets[q]:[q + 1]` of (page, start, end): its relevant spans, and the whole
    text of a relevant document judged with no span. `label_rows`: each label's chunk as a
    row of the chunking's table (chunk_table)."""

    qrels: QrelsArrays
    label_rows: np.ndarray
    evidence_offsets: np.ndarray
    evidence_pages: np.ndarray
    evidence_starts: np.ndarray
    evidence_ends: np.ndarray


def document_evidence(version: Version) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each query's relevant evidence (as ChunkLabels': offsets, pages, starts, ends), for a
    run of documents, whose every chunk is a whole document (kept per process)."""

    def build():
        qrels, _ = scoring_inputs.get_or_build(version)
        positions = {query_id: i for i, query_id in enumerate(qrels.query_ids)}
        return _evidence(version, qrels, *chunk_labels_of.version_span_arrays(version, positions))

    return _cached(_LABELS, (version.pk, version.content_hash, version.created_at, "documents"), build)


def page_text_lengths(pages: np.ndarray) -> np.ndarray:
    """The length of each page's text (0 for a key outside the corpus, negative), as the
    ends of the chunks of the chunking `documents`. For pages labelled in a version,
    labelled_page_lengths reads them once a process."""
    wanted = np.unique(pages[pages > 0])
    if not len(wanted):
        return np.zeros(len(pages), dtype=np.int64)
    return PageLengths(Page.objects.filter(pk__in=wanted.tolist())).of(pages)


def labelled_page_lengths(version: Version, pages: np.ndarray) -> np.ndarray:
    """page_text_lengths of `pages`, each labelled in `version`: the lengths of every page
    the version labels are read once, through its labels, and kept per process (a version
    never changes; a re-score of its runs reads them for each run of documents)."""

    def build() -> PageLengths:
        labelled = Page.objects.filter(pk__in=VersionLabel.objects.filter(version=version).values("page_id"))
        return PageLengths(labelled)

    found = _cached(_LENGTHS, (version.pk, version.content_hash, version.created_at), build)
    return found.of(pages)


class PageLengths:
    """The text lengths of a set of pages (a queryset of them), read in one query, by key."""

    def __init__(self, pages) -> None:
        found = select_int_rows(pages.values_list("pk", Length("text")))
        found = found[np.argsort(found[:, 0])]
        self.keys, self.lengths = found[:, 0].copy(), found[:, 1].copy()

    def of(self, pages: np.ndarray) -> np.ndarray:
        """The length of each of `pages`; 0 for a key not among them."""
        at, hit = levels.sorted_rows(self.keys, pages)
        lengths = np.zeros(len(pages), dtype=np.int64)
        lengths[hit] = self.lengths[at[hit]]
        return lengths


def chunk_labels(version: Version, chunking: Chunking) -> ChunkLabels:
    """The version's labels and evidence on `chunking` (kept per process)."""

    def build() -> ChunkLabels:
        qrels, _ = scoring_inputs.get_or_build(version)
        positions = {query_id: i for i, query_id in enumerate(qrels.query_ids)}
        label_queries = qrels.query_index
        spans = chunk_labels_of.version_span_arrays(version, positions)
        table, projection = chunk_labels_of.project(version, chunking, label_queries, qrels.doc_keys, qrels.grades, positions, spans)
        chunk_qrels = QrelsArrays.from_arrays(
            qrels.query_ids,
            label_queries[projection.label_rows],
            table.keys[projection.chunk_rows],
            projection.grades,
        )
        evidence = _evidence(version, qrels, *spans)
        return ChunkLabels(chunk_qrels, table.rows(chunk_qrels.doc_keys), *evidence)

    key = (version.pk, version.content_hash, version.created_at, chunking.pk, chunking.written_at, chunking.chunk_count)
    return _cached(_LABELS, key, build)


def _evidence(version, qrels, span_queries, span_pages, span_starts, span_ends, span_grades):
    """Each query's relevant evidence, sorted by query: relevant spans, and [0, length of
    the text) for a relevant label with no span at all."""
    threshold = version.relevance_threshold
    relevant = qrels.grades >= threshold
    label_queries = qrels.query_index
    width = int(max(qrels.doc_keys.max(initial=0), span_pages.max(initial=0))) + 1
    with_spans = np.isin(label_queries * width + qrels.doc_keys, span_queries * width + span_pages)
    whole = relevant & ~with_spans
    whole_pages = qrels.doc_keys[whole]
    whole_ends = labelled_page_lengths(version, whole_pages)
    kept = span_grades >= threshold
    queries = np.concatenate((span_queries[kept], label_queries[whole]))
    pages = np.concatenate((span_pages[kept], whole_pages))
    starts = np.concatenate((span_starts[kept], np.zeros(len(whole_pages), np.int64)))
    ends = np.concatenate((span_ends[kept], whole_ends))
    nonempty = ends > starts
    queries, pages, starts, ends = queries[nonempty], pages[nonempty], starts[nonempty], ends[nonempty]
    order = np.lexsort((starts, pages, queries))
    offsets = np.concatenate(([0], np.cumsum(np.bincount(queries, minlength=len(qrels.query_ids))))).astype(np.int64)
    return offsets, pages[order], starts[order], ends[order]
