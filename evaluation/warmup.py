"""Warm the scoring's numba kernels (evaluation.kernels), so that no user request or task pays
their compilation.

With NUMBA_CACHE_DIR on a persistent disk the first warm-up of a machine compiles (a few
seconds on 2 cores) and every later one loads from the cache (well under a second).
"""

import time

import numpy as np

from evaluation import completeness, engine
from evaluation.metrics import SUPPORTED_FAMILIES
from lib.runs import RankedRun


def warm_kernels() -> float:
    """Run every metric family once on a two-page example; return the seconds it took."""
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
    return time.perf_counter() - started
