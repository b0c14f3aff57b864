"""The numba kernels of lib.levels (the document mapping, the projection of spans onto
chunks, the evidence a run's top k covers), apart so that importing lib.levels loads no numba."""

import numpy as np
from numba import njit


@njit(cache=True)
def first_of_each_document(offsets, ranks, scores, rank_count, out_rows, out_offsets):
    """For each query, the rows of the first entry of each document (ranks[e] is the
    entry's document, as the doc-id order rank of the document: a number per document),
    then each run of tied scores reordered by document rank descending, trec_eval's tie
    order. Returns how many rows were written to out_rows."""
    seen = np.full(rank_count, -1, dtype=np.int64)
    written = 0
    for q in range(offsets.shape[0] - 1):
        first = written
        for e in range(offsets[q], offsets[q + 1]):
            r = ranks[e]
            if seen[r] == q:
                continue
            seen[r] = q
            out_rows[written] = e
            written += 1
        i = first
        while i < written:
            j = i + 1
            while j < written and scores[out_rows[j]] == scores[out_rows[i]]:
                j += 1
            if j - i > 1:
                group = out_rows[i:j].copy()
                order = np.argsort(-ranks[group], kind="mergesort")
                for g in range(j - i):
                    out_rows[i + g] = group[order[g]]
            i = j
        out_offsets[q + 1] = written
    return written


@njit(cache=True)
def project(
    label_grade,
    label_chunk_lo,
    label_chunk_hi,
    label_span_lo,
    label_span_hi,
    chunk_order,
    chunk_starts,
    chunk_ends,
    span_starts,
    span_ends,
    span_grades,
    min_chars,
    min_share,
    out_offsets,
    out_label,
    out_chunk,
    out_grade,
):
    for i in range(label_grade.shape[0]):
        at = out_offsets[i]
        for c in range(label_chunk_lo[i], label_chunk_hi[i]):
            row = chunk_order[c]
            if label_span_lo[i] == label_span_hi[i]:
                grade = label_grade[i]  # the document judged as a whole: each chunk carries its grade
            else:
                grade = 0  # judged, but meeting no span: the person read it and found nothing here
                met = False
                for s in range(label_span_lo[i], label_span_hi[i]):
                    overlap = min(chunk_ends[row], span_ends[s]) - max(chunk_starts[row], span_starts[s])
                    if overlap <= 0:
                        continue
                    if overlap >= min_chars or overlap >= min_share * (span_ends[s] - span_starts[s]):
                        if not met or span_grades[s] > grade:
                            grade = span_grades[s]
                            met = True
            out_label[at] = i
            out_chunk[at] = row
            out_grade[at] = grade
            at += 1


@njit(cache=True)
def evidence_covered(starts, ends, entry_page, entry_start, entry_end, ev_offsets, ev_page, ev_start, ev_end, k, out):
    clip_start = np.empty(max(k, 1), dtype=np.int64)
    clip_end = np.empty(max(k, 1), dtype=np.int64)
    for q in range(starts.shape[0]):
        stop = min(ends[q], starts[q] + k)
        covered = 0
        for v in range(ev_offsets[q], ev_offsets[q + 1]):
            m = 0
            for e in range(starts[q], stop):
                if entry_page[e] != ev_page[v]:
                    continue
                low = max(entry_start[e], ev_start[v])
                high = min(entry_end[e], ev_end[v])
                if high > low:
                    clip_start[m] = low
                    clip_end[m] = high
                    m += 1
            if m == 0:
                continue
            # The union of the clipped chunks: chunks may overlap, a character counts once.
            order = np.argsort(clip_start[:m])
            reach = -1
            for o in range(m):
                low, high = clip_start[order[o]], clip_end[order[o]]
                if low > reach:
                    covered += high - low
                    reach = high
                elif high > reach:
                    covered += high - reach
                    reach = high
        out[q] = covered
