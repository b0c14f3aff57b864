"""Documents, chunkings and levels (SEMANTICS.md, "Documents, chunkings and levels"):
the arrays a run of any chunking is scored from at its two levels. Pure numpy and numba,
no Django, one floor down so that scoring (evaluation.chunk_inputs) and the export of
projected qrels (goldenset.chunk_labels) apply the one rule.

- `documents_in_order`: a run read as trec_eval would read it after each of its ids is
  replaced by its document's (a chunk's page, a duplicate's group page) and the later
  entries of a document are dropped: each document keeps its best entry's score (its
  first, as the run is in trec_eval order already) and the documents are ordered again
  by score descending, doc id descending.
- `project_labels`: a version's labels and evidence spans projected onto a chunking.
- `top_chunks_cover`: what the top k chunks of each query cover of its relevant evidence,
  and how many characters they hand to a prompt.
"""

import functools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from lib.runs import RankedRun


@functools.cache
def _kernels():
    """lib.level_kernels, compiled by numba, imported when a chunk run is first scored or
    projected, not when the app loads (numba costs every process start half a second)."""
    from lib import level_kernels

    return level_kernels


# Characters per token, the usual estimate for English text (SEMANTICS.md, prompt tokens@k).
CHARACTERS_PER_TOKEN = 4


@dataclass(frozen=True, eq=False)
class ChunkTable:
    """A chunking's chunks, columnar, sorted by key (the Chunk primary key a run's
    RankedRun holds): chunk i is characters [starts[i], ends[i]) of page pages[i]."""

    keys: np.ndarray  # int64, ascending
    pages: np.ndarray  # int64 page key of each chunk
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """The row of each of `keys`; ValueError when one is not a chunk of the table
        (a run of the chunking holds only its chunk keys: run_import refuses others)."""
        return dense_lookup(self.keys, self._dense, keys, "a key of the run is not a chunk of this chunking")

    @cached_property
    def _dense(self) -> np.ndarray | None:
        return dense_index(self.keys)


def dense_index(keys: np.ndarray) -> np.ndarray | None:
    """For sorted, distinct `keys` that are nearly contiguous (primary keys written
    together): an array whose element key - keys[0] is the key's row, -1 between keys;
    None when they spread too far for it. A run's million look-ups are then one read each
    rather than a binary search each."""
    if not len(keys) or int(keys[-1] - keys[0]) > 4 * len(keys) + 1_000_000:
        return None
    dense = np.full(int(keys[-1] - keys[0]) + 1, -1, dtype=np.int64)
    dense[keys - keys[0]] = np.arange(len(keys))
    return dense


def sorted_rows(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, found) for each of `wanted` in sorted, distinct `keys`: its row where found, a
    row of no meaning where not."""
    if not len(keys):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    rows = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return rows, keys[rows] == wanted


def dense_lookup(keys: np.ndarray, dense: np.ndarray | None, wanted: np.ndarray, missing: str) -> np.ndarray:
    """The row in sorted `keys` of each of `wanted` (dense: dense_index(keys)); ValueError
    `missing` when one is not among them."""
    if not len(wanted):
        return np.zeros(0, dtype=np.int64)
    if not len(keys):
        raise ValueError(missing)
    if dense is not None:
        rows = np.empty(len(wanted), dtype=np.int64)
        if _kernels().dense_rows(dense, int(keys[0]), np.asarray(wanted, dtype=np.int64), rows) >= 0:
            raise ValueError(missing)
        return rows
    rows, found = sorted_rows(keys, wanted)
    if not found.all():
        raise ValueError(missing)
    return rows


# --- document level -------------------------------------------------------------------


def documents_in_order(
    run: RankedRun, documents: np.ndarray, ranks: np.ndarray, rank_count: int, *, entry_rows: np.ndarray | None = None
) -> RankedRun:
    """`run` at document level: `documents[e]` is entry e's document key (a page key, or a
    negative key for a doc id outside the corpus), `ranks[e]` that document's place in doc
    id order (byte order ascending; one number per document, all below `rank_count`).
    Each document keeps its first entry, the one with its best score, and each query's
    documents are ordered score descending, doc id descending, as trec_eval orders any run.
    `entry_rows`: when given, `documents` and `ranks` are by rows of a table (a chunking's
    chunks) and entry e is row entry_rows[e], so that they are not gathered per entry first.
    """
    if entry_rows is None:
        entry_rows = np.arange(len(run), dtype=np.int64)
    out_rows = np.empty(len(run), dtype=np.int64)
    out_offsets = np.zeros(len(run.query_ids) + 1, dtype=np.int64)
    written = _kernels().first_of_each_document(
        run.offsets, entry_rows, np.asarray(ranks, dtype=np.int64), run.scores, int(rank_count), out_rows, out_offsets
    )
    rows = out_rows[:written]
    return RankedRun(
        query_ids=run.query_ids,
        offsets=out_offsets,
        doc_keys=np.asarray(documents, dtype=np.int64)[entry_rows[rows]],
        scores=run.scores[rows],
        external_doc_ids=run.external_doc_ids,
        depth=run.depth,
        dropped_by_depth=run.dropped_by_depth,
    )


# --- chunk level ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Projection:
    """Labels projected onto a chunking: one row per (label, chunk of its document),
    `label_rows` the label's row in the arrays given, `chunk_rows` the chunk's row in the
    ChunkTable, `grades` the chunk's grade for the label's query."""

    label_rows: np.ndarray
    chunk_rows: np.ndarray
    grades: np.ndarray


def _pair_keys(queries: np.ndarray, pages: np.ndarray, other_queries: np.ndarray, other_pages: np.ndarray):
    """(query, page) pairs of two arrays as comparable int64 keys (dense page numbers)."""
    both = np.concatenate((pages, other_pages))
    _, dense = np.unique(both, return_inverse=True)
    width = int(dense.max()) + 1 if len(dense) else 1
    first, second = dense[: len(pages)], dense[len(pages) :]
    return queries.astype(np.int64) * width + first, other_queries.astype(np.int64) * width + second


def project_labels(
    *,
    label_queries: np.ndarray,
    label_pages: np.ndarray,
    label_grades: np.ndarray,
    span_queries: np.ndarray,
    span_pages: np.ndarray,
    span_starts: np.ndarray,
    span_ends: np.ndarray,
    span_grades: np.ndarray,
    chunks: ChunkTable,
    min_chars: int,
    min_share: float,
) -> Projection:
    """Every label's grade carried onto each chunk of its document (SEMANTICS.md, "Chunk
    level"): with no span, the document's grade; with spans, the highest grade of the spans
    the chunk overlaps by at least `min_chars` characters or `min_share` of the span's
    length, whichever is reached first, else 0. Queries are numbers (an index into the
    caller's query ids); a span belongs to the label of its (query, page).
    """
    label_queries = np.asarray(label_queries, dtype=np.int64)
    label_pages = np.asarray(label_pages, dtype=np.int64)
    chunk_order = np.lexsort((chunks.starts, chunks.pages))
    sorted_pages = chunks.pages[chunk_order]
    chunk_lo = np.searchsorted(sorted_pages, label_pages, side="left")
    chunk_hi = np.searchsorted(sorted_pages, label_pages, side="right")

    label_keys, span_keys = _pair_keys(label_queries, label_pages, np.asarray(span_queries, np.int64), np.asarray(span_pages, np.int64))
    span_order = np.argsort(span_keys, kind="stable")
    sorted_span_keys = span_keys[span_order]
    span_lo = np.searchsorted(sorted_span_keys, label_keys, side="left")
    span_hi = np.searchsorted(sorted_span_keys, label_keys, side="right")

    counts = chunk_hi - chunk_lo
    out_offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    total = int(out_offsets[-1])
    out_label = np.empty(total, dtype=np.int64)
    out_chunk = np.empty(total, dtype=np.int64)
    out_grade = np.empty(total, dtype=np.int64)
    _kernels().project(
        np.asarray(label_grades, dtype=np.int64),
        chunk_lo.astype(np.int64),
        chunk_hi.astype(np.int64),
        span_lo.astype(np.int64),
        span_hi.astype(np.int64),
        chunk_order.astype(np.int64),
        chunks.starts,
        chunks.ends,
        np.asarray(span_starts, dtype=np.int64)[span_order],
        np.asarray(span_ends, dtype=np.int64)[span_order],
        np.asarray(span_grades, dtype=np.int64)[span_order],
        int(min_chars),
        float(min_share),
        out_offsets,
        out_label,
        out_chunk,
        out_grade,
    )
    return Projection(label_rows=out_label, chunk_rows=out_chunk, grades=out_grade)


# --- what the top k chunks hand to the prompt ------------------------------------------


@dataclass(frozen=True, eq=False)
class TopChunks:
    """What the first k entries of each query hand to a prompt (top_chunks_cover):
    `covered[j, q]` the characters of query q's evidence its first ks[j] entries cover,
    `characters[q]` the characters of its first prompt_k entries, overlaps counted as often
    as they are sent."""

    covered: np.ndarray  # int64 [len(ks), queries]
    characters: np.ndarray  # int64 [queries]


def top_chunks_cover(
    *,
    starts: np.ndarray,
    ends: np.ndarray,
    entry_rows: np.ndarray,
    entry_label: np.ndarray,
    chunks: ChunkTable,
    evidence_offsets: np.ndarray,
    evidence_pages: np.ndarray,
    evidence_starts: np.ndarray,
    evidence_ends: np.ndarray,
    ks: list[int],
    prompt_k: int,
) -> TopChunks:
    """Per query, what the union of its first k run entries covers of its relevant evidence
    (rows evidence_offsets[q]:[q + 1], which must not overlap one another), for each k of
    `ks`, and the characters of its first prompt_k entries. Query q's entries are rows
    starts[q]:ends[q] (engine.RunMatch); entry e is the chunk at row entry_rows[e] of
    `chunks` (a page and [start, end); its key is not read). `entry_label[e]`: the entry's
    label for its query, -1 for none (RunMatch.entry_label): a query's evidence lies in the
    pages labelled for it, so an entry with no label covers none of it and is not looked at."""
    ks_sorted = np.asarray(sorted(ks), dtype=np.int64)
    covered = np.zeros((len(ks_sorted), len(starts)), dtype=np.int64)
    characters = np.zeros(len(starts), dtype=np.int64)
    _kernels().top_chunks_cover(
        starts,
        ends,
        entry_rows,
        entry_label,
        chunks.pages,
        chunks.starts,
        chunks.ends,
        evidence_offsets,
        evidence_pages,
        evidence_starts,
        evidence_ends,
        ks_sorted,
        int(prompt_k),
        covered,
        characters,
    )
    at = {int(k): j for j, k in enumerate(ks_sorted.tolist())}
    return TopChunks(covered=covered[[at[int(k)] for k in ks]], characters=characters)
