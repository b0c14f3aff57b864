"""Warm the scoring's numba kernels (evaluation.kernels, and lib.level_kernels for runs of a
chunking), so that no user request or task pays their compilation.

With NUMBA_CACHE_DIR on a persistent disk the first warm-up of a machine compiles (a few
seconds on 2 cores) and every later one loads from the cache (well under a second).
"""

import time

import numpy as np

from evaluation import completeness, engine
from evaluation.metrics import SUPPORTED_FAMILIES
from lib import levels
from lib.runs import RankedRun


def warm_kernels() -> float:
    """Run every metric family, and a chunk run's two levels, once on a two-page example;
    return the seconds it took."""
    started = time.perf_counter()
    qrels = engine.QrelsArrays.from_rows([("q", 1, 2), ("q", 2, 0)], query_ids=["q"])
    run = RankedRun(
        query_ids=("q",),
        offsets=np.array([0, 2], dtype=np.int64),
        doc_keys=np.array([2, 1], dtype=np.int64),
        scores=np.array([2.0, 1.0]),
        external_doc_ids=(),
        depth=2,
        dropped_by_depth=0,
    )
    names = [f"{family}@2" if family != "mrr" else "mrr" for family in SUPPORTED_FAMILIES]
    engine.evaluate_run(qrels, run, names)
    engine.evaluate_run(qrels, run, names, page_slice=np.array([1], dtype=np.int64))
    completeness.judged_at_k(qrels, run, 2)
    completeness.pooled_labels(qrels, run, 2)
    _warm_levels(qrels, run)
    return time.perf_counter() - started


def _warm_levels(qrels: engine.QrelsArrays, run: RankedRun) -> None:
    """The two pages as two chunks of one page: the run matched by the chunks' rows, the
    document mapping, the projection and what the top chunks cover (lib.levels)."""
    one = np.array([1, 1], dtype=np.int64)
    chunks = levels.ChunkTable(keys=np.array([1, 2]), pages=one, starts=np.array([0, 5]), ends=np.array([5, 9]))
    engine.match_run(qrels, run, rows=engine.TableRows(labels=np.array([0, 1]), entries=chunks.rows(np.array([2, 1])), count=2))
    levels.documents_in_order(run, one, np.zeros(2, dtype=np.int64), 1)
    levels.project_labels(
        label_queries=np.zeros(1, dtype=np.int64),
        label_pages=one[:1],
        label_grades=one[:1],
        span_queries=np.zeros(1, dtype=np.int64),
        span_pages=one[:1],
        span_starts=np.array([2]),
        span_ends=np.array([7]),
        span_grades=one[:1],
        chunks=chunks,
        min_chars=1,
        min_share=0.5,
    )
    levels.top_chunks_cover(
        starts=np.zeros(1, dtype=np.int64),
        ends=np.array([2]),
        entry_rows=np.array([1, 0]),
        entry_label=np.array([0, -1]),
        chunks=chunks,
        evidence_offsets=np.array([0, 1]),
        evidence_pages=one[:1],
        evidence_starts=np.array([2]),
        evidence_ends=np.array([7]),
        ks=[1, 2],
        prompt_k=1,
    )
