"""Pools of runs of a chunking: a run of chunks pools documents.

SEMANTICS.md, "Documents, chunkings and levels": a run of chunks is read at document level
as trec_eval would read it after each chunk id is replaced by its document's id and the
later chunks of a document are dropped; a document stands at the rank of its first
(best) chunk. So a pool built from runs of a chunking judges documents, each entering at
its best rank as at document level, and remembers which chunks of each document the runs
returned in the document-level top `depth` (PoolChunk), for the judging screen to
highlight. A run's entries are Chunk primary keys when it has a chunking (Run.chunking);
negative keys (chunk ids outside the chunking) stay outside the corpus.
"""

from dataclasses import dataclass

import numpy as np

from evaluation.models import Run
from goldenset.models import Chunk
from labeling.models import Pool, PoolChunk
from lib.runs import RankedRun

CHUNK_BATCH = 5000


@dataclass
class ChunkRows:
    """The chunks a run returned within its document-level top: per row, the query's index
    in the run's query_ids, the document's page key and the chunk's primary key."""

    query_index: np.ndarray
    page_keys: np.ndarray
    chunk_pks: np.ndarray


def chunk_pages(run: Run, chunk_keys: np.ndarray) -> np.ndarray:
    """The page key of each of `chunk_keys` (Chunk pks of the run's chunking; a negative
    key, a chunk id outside it, stays as it is)."""
    wanted = np.unique(chunk_keys[chunk_keys > 0])
    rows = Chunk.objects.filter(chunking_id=run.chunking_id)
    if len(wanted) <= CHUNK_BATCH:  # beyond, the whole chunking beats a long IN list
        rows = rows.filter(pk__in=wanted.tolist())
    rows = rows.values_list("pk", "page_id")
    known = np.array(sorted(rows), dtype=np.int64).reshape(-1, 2)
    pages = chunk_keys.copy()
    if len(known) and len(chunk_keys):
        at = np.minimum(np.searchsorted(known[:, 0], chunk_keys), len(known) - 1)
        found = (known[at, 0] == chunk_keys) & (chunk_keys > 0)
        pages[found] = known[at[found], 1]
    return pages


def documents_of(run: Run, ranked: RankedRun, depth: int) -> tuple[RankedRun, ChunkRows]:
    """`ranked`, a run of chunks, read at document level (its documents best first, each at
    its first chunk's score), and the chunks of the documents in each query's top `depth`."""
    query_index = ranked.query_index
    pages = chunk_pages(run, ranked.doc_keys)
    if not len(pages):
        return ranked, ChunkRows(*(np.zeros(0, dtype=np.int64) for _ in range(3)))
    span = int(pages.max()) - int(pages.min()) + 1
    pair = query_index * span + (pages - int(pages.min()))
    _, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    order = np.argsort(first)
    kept = first[order]  # the first entry of each (query, document), in the run's order
    counts = np.bincount(query_index[kept], minlength=len(ranked.query_ids))
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    document_rank = np.empty(len(first), dtype=np.int64)
    document_rank[order] = np.arange(len(kept)) - offsets[query_index[kept]] + 1
    entry_rank = document_rank[inverse.ravel()]
    documents = RankedRun(
        query_ids=ranked.query_ids,
        offsets=offsets,
        doc_keys=pages[kept],
        scores=ranked.scores[kept],
        external_doc_ids=ranked.external_doc_ids,
        depth=ranked.depth,
        dropped_by_depth=ranked.dropped_by_depth,
    )
    top = (entry_rank <= depth) & (pages > 0) & (ranked.doc_keys > 0)
    return documents, ChunkRows(query_index[top], pages[top], ranked.doc_keys[top])


def pool_chunks_write(pool: Pool, query_pks: np.ndarray, page_pks: np.ndarray, chunk_pks: np.ndarray) -> int:
    """Store the chunks of the pool's pairs (rows already stored are kept); how many rows
    were offered. bulk_create with ignore_conflicts: a pool extended by a run that returns a
    chunk already recorded adds nothing, on PostgreSQL and SQLite alike."""
    if not len(chunk_pks):
        return 0
    rows = np.unique(np.stack([query_pks, page_pks, chunk_pks], axis=1), axis=0)
    PoolChunk.objects.bulk_create(
        (PoolChunk(pool=pool, query_id=int(query), page_id=int(page), chunk_id=int(chunk)) for query, page, chunk in rows.tolist()),
        batch_size=CHUNK_BATCH,
        ignore_conflicts=True,
    )
    return len(rows)
