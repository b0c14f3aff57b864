"""Pools of runs of a chunking: a run of chunks pools documents.

SEMANTICS.md, "Documents, chunkings and levels": a run of chunks is read at document level
as trec_eval would read it after each chunk id is replaced by its document's id and the
later chunks of a document are dropped; a document stands at the rank of its first
(best) chunk, by the one rule scoring reads it with (evaluation.chunk_inputs.documents_ranked). So a pool built from runs of a chunking judges documents, each entering at
its best rank as at document level, and remembers which chunks of each document the runs
returned in the document-level top `depth` (PoolChunk), for the judging screen to
highlight. A run's entries are Chunk primary keys when it has a chunking (Run.chunking);
negative keys (chunk ids outside the chunking) stay outside the corpus.
"""

from dataclasses import dataclass

import numpy as np

from evaluation.chunk_inputs import documents_ranked
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
    """`ranked`, a run of chunks, read at document level as scoring reads it
    (evaluation.chunk_inputs.documents_ranked: each document at its first chunk, in
    trec_eval's order among documents), and the chunks of the documents in each query's top
    `depth`."""
    pages = chunk_pages(run, ranked.doc_keys)
    if not len(pages):
        return ranked, ChunkRows(*(np.zeros(0, dtype=np.int64) for _ in range(3)))
    documents = documents_ranked(ranked=ranked, documents=pages, corpus_id=run.golden_set.corpus_id)
    document_query = np.repeat(np.arange(len(documents.query_ids), dtype=np.int64), np.diff(documents.offsets))
    document_rank = np.arange(len(documents.doc_keys)) - documents.offsets[document_query] + 1
    in_top = document_rank <= depth
    # (query, document) pairs as one int64 key each, documents' keys shifted to start at 0.
    low = int(min(pages.min(), documents.doc_keys.min()))
    span = max(int(pages.max()), int(documents.doc_keys.max())) - low + 1
    top_pairs = document_query[in_top] * span + (documents.doc_keys[in_top] - low)
    query_index = ranked.query_index
    top = np.isin(query_index * span + (pages - low), top_pairs) & (pages > 0) & (ranked.doc_keys > 0)
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
