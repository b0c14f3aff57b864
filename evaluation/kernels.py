"""The compiled parts of scoring: numba kernels and ranx's metric functions.

Kept in a module of their own, imported by evaluation.engine and evaluation.completeness
only when a score or a Judged@k is computed (`kernels()` there), never when the app loads:
numba alone costs about half a second of every process start, and ranx brings scipy and
pandas with it, which a management command, a web worker serving stored scores or a test
of a page never needs. A Celery worker loads and warms them when it starts
(evaluation.tasks.warm_kernels_in_worker, evaluation.warmup).
"""

import functools

from numba import njit
from numba.typed import List as TypedList


@functools.cache
def metric_families() -> dict:
    """ranx's metric kernels, by metric family. Each takes (qrels typed list, run typed list,
    k, rel_lvl) and returns float64 per query; k = 0 means the whole ranking.

    Imported at the first score, not with this module: Judged@k (match_labels) needs numba
    but not ranx, whose scipy, pandas and matplotlib weigh some 150 MB in a web worker.
    """
    from ranx.metrics import average_precision, hit_rate, ndcg, precision, recall, reciprocal_rank

    return {
        "recall": recall, "precision": precision, "hit_rate": hit_rate, "mrr": reciprocal_rank,
        "map": average_precision, "ndcg": ndcg,
    }


@njit(cache=True)
def split_rows(table, starts, ends):
    """A typed list of the row ranges `table[starts[i]:ends[i]]` (views, not copies).

    Built inside numba: filling a typed list from Python costs about 25 ms per 10,000
    arrays and a second of compilation in every new process; this costs about 1 ms, and
    its compiled code is cached in NUMBA_CACHE_DIR with ranx's.
    """
    out = TypedList()
    for i in range(starts.shape[0]):
        out.append(table[starts[i] : ends[i]])
    return out


@njit(cache=True)
def match_labels(label_offsets, sorted_keys, label_rows, starts, ends, run_keys, judged_counts, label_hit):
    """For each query q, each run entry in starts[q]:ends[q] is searched among the query's
    labels (sorted_keys[label_offsets[q]:label_offsets[q + 1]], ascending); a match counts
    in judged_counts[q] and marks label_hit at the label's row (label_rows maps the sorted
    position back). Compiled: a million entries take a few milliseconds, where a numpy
    search over pair codes took a tenth of a second (random access into all the labels)."""
    for q in range(starts.shape[0]):
        low_bound, high_bound = label_offsets[q], label_offsets[q + 1]
        if low_bound == high_bound:
            continue
        for e in range(starts[q], ends[q]):
            key = run_keys[e]
            low, high = low_bound, high_bound
            while low < high:
                middle = (low + high) // 2
                if sorted_keys[middle] < key:
                    low = middle + 1
                else:
                    high = middle
            if low < high_bound and sorted_keys[low] == key:
                judged_counts[q] += 1
                label_hit[label_rows[low]] = True
