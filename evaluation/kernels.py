"""The compiled parts of scoring: numba kernels.

Kept in a module of their own, imported by evaluation.engine and evaluation.completeness
only when a score or a Judged@k is computed (`kernels()` there), never when the app loads:
numba costs about half a second of every process start, which a management command, a web
worker serving stored scores or a test of a page never needs. A Celery worker loads and
warms them when it starts (evaluation.tasks.warm_kernels_in_worker, evaluation.warmup).

None is parallel: a worker runs one evaluation a core already, and a single-threaded
kernel may be entered by two Python threads at once (numba's workqueue threading layer
aborts the process when two threads enter a parallel one).
"""

import numpy as np
from numba import njit

# Metric families as score_queries numbers them; evaluation.engine passes FAMILY_CODES.
RECALL, PRECISION, HIT_RATE, MRR, MAP, NDCG = 0, 1, 2, 3, 4, 5
FAMILY_CODES = {"recall": RECALL, "precision": PRECISION, "hit_rate": HIT_RATE, "mrr": MRR, "map": MAP, "ndcg": NDCG}


@njit(cache=True)
def discounts(n):
    """log2(rank + 1) for ranks 1..n, written as ranx's _dcg writes it, so that each
    element is the very float its nDCG divides by."""
    return np.log2(np.arange(1, n + 1) + 1)


@njit(cache=True)
def entry_labels(label_offsets, sorted_keys, label_rows, starts, ends, run_keys, out):
    """For each query q, each run entry e in starts[q]:ends[q] is searched among the query's
    labels (sorted_keys[label_offsets[q]:label_offsets[q + 1]], ascending); out[e] becomes
    the matching label's row (label_rows maps the sorted position back), and stays as it
    was (-1) for a page the query has no label for."""
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
                out[e] = label_rows[low]


@njit(cache=True)
def entry_labels_by_row(label_offsets, label_rows, starts, ends, entry_rows, row_count, out):
    """entry_labels when labels and run entries are rows of one table (label l is row
    label_rows[l], entry e row entry_rows[e], all below row_count): each query's labels are
    marked in an array by row, then each of its entries is one read of it."""
    mark = np.full(row_count, -1, dtype=np.int64)
    label_at = np.empty(row_count, dtype=np.int64)
    for q in range(starts.shape[0]):
        if label_offsets[q] == label_offsets[q + 1]:
            continue
        for label in range(label_offsets[q], label_offsets[q + 1]):
            mark[label_rows[label]] = q
            label_at[label_rows[label]] = label
        for e in range(starts[q], ends[q]):
            if mark[entry_rows[e]] == q:
                out[e] = label_at[entry_rows[e]]


@njit(cache=True)
def judged_within(starts, ends, entry_label, k, judged_counts):
    """judged_counts[q] = how many of query q's first k entries have a label."""
    for q in range(starts.shape[0]):
        end = min(ends[q], starts[q] + k)
        count = 0
        for e in range(starts[q], end):
            if entry_label[e] >= 0:
                count += 1
        judged_counts[q] = count


@njit(cache=True)
def labels_within(starts, ends, entry_label, k, label_hit):
    """label_hit[row] = True for each label whose page is among its query's first k entries."""
    for q in range(starts.shape[0]):
        end = min(ends[q], starts[q] + k)
        for e in range(starts[q], end):
            row = entry_label[e]
            if row >= 0:
                label_hit[row] = True


@njit(cache=True)
def _cut(k, length):
    """ranx's fix_k: the whole ranking for k = 0 or a k past its end."""
    return length if k == 0 or k > length else k


@njit(cache=True)
def score_queries(queries, starts, ends, entry_label, label_offsets, grades, kept, families, ks, rel_lvls, disc, out):
    """Every metric of every query in `queries` in one pass: out[m, i] is metric m of query
    queries[i], counting only the labels where `kept` is True (a page slice, or the labels
    leave-one-run-out keeps).

    The values are ranx 0.3.21's (its _recall, _precision, _hit_rate, _reciprocal_rank,
    _average_precision and _ndcg with Järvelin gains), to the bit: each family's
    arithmetic is done in ranx's order, and what ranx adds that is zero (a miss in a sum)
    is skipped, which changes no float. ranx runs one pass over the rankings per metric and
    slice, each filtering and copying every query's labels; here a query's run entries are
    read once (entry_label: each entry's label row, from entry_labels) and its few hits
    serve every metric (tests/evaluation/test_engine.py holds the two equal).
    """
    # How deep any metric looks: the whole ranking when one has no cut-off.
    deepest = 0
    for m in range(ks.shape[0]):
        if ks[m] == 0:
            deepest = -1
            break
        deepest = max(deepest, ks[m])
    found_rank = np.empty(disc.shape[0], dtype=np.int64)
    found_row = np.empty(disc.shape[0], dtype=np.int64)
    for i in range(queries.shape[0]):
        q = queries[i]
        start, length = starts[q], ends[q] - starts[q]
        low, high = label_offsets[q], label_offsets[q + 1]
        # The query's entries read once: the kept labelled pages, best rank first.
        found = 0
        for e in range(start, start + (length if deepest < 0 else min(deepest, length))):
            row = entry_label[e]
            if row >= 0 and kept[row]:
                found_rank[found] = e - start
                found_row[found] = row
                found += 1
        for m in range(families.shape[0]):
            family, k, rel_lvl = families[m], ks[m], rel_lvls[m]
            relevant = 0
            for row in range(low, high):
                if kept[row] and grades[row] >= rel_lvl:
                    relevant += 1
            value = 0.0
            if relevant == 0:
                out[m, i] = value  # ranx: no relevant label, 0 (precision's hits are 0 too)
                continue
            if family == RECALL or family == PRECISION:
                kk = k if k != 0 else length
                if kk == 0:
                    out[m, i] = value
                    continue
                cut = _cut(kk, length)
            else:
                cut = _cut(k, length)
            # Hits in rank order: ranx's sums run over the ranks in order, adding 0 at a miss.
            hits = 0
            first_rank = -1
            total = 0.0
            for f in range(found):
                rank = found_rank[f]
                if rank >= cut:
                    break
                row = found_row[f]
                if grades[row] < rel_lvl:
                    continue
                hits += 1
                if first_rank < 0:
                    first_rank = rank
                if family == MAP:
                    total += float(hits) / (rank + 1)
                elif family == NDCG:
                    total += float(grades[row]) / disc[rank]
            if family == RECALL:
                value = float(hits) / relevant
            elif family == PRECISION:
                value = float(hits) / (k if k != 0 else length)
            elif family == HIT_RATE:
                value = 1.0 if hits else 0.0
            elif family == MRR:
                if hits:
                    value = 1 / (first_rank + 1)
            elif family == MAP:
                value = total / relevant
            else:  # NDCG
                # The ideal ranking: the kept relevant labels in their order (best grade first).
                ideal = 0.0
                cut_ideal = _cut(k, relevant)
                placed = 0
                for row in range(low, high):
                    if placed == cut_ideal:
                        break
                    if kept[row] and grades[row] >= rel_lvl:
                        ideal += grades[row] / disc[placed]
                        placed += 1
                if ideal == 0.0:
                    ideal = 1.0
                value = total / ideal
            out[m, i] = value
