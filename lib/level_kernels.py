"""The numba kernels of lib.levels (the document mapping, the projection of spans onto
chunks, the evidence a run's top k covers), apart so that importing lib.levels loads no numba."""

import numpy as np
from numba import njit

# Groups of up to this many (tied entries, clips of one page) are sorted in place by
# insertion, with no allocation; longer ones by np.argsort, so that a long tie stays
# n log n. (numba reads a module's globals as constants when it compiles.)
SORTED_IN_PLACE_UP_TO = 16


@njit(cache=True)
def dense_rows(dense, first_key, wanted, out):
    """out[i] = dense[wanted[i] - first_key], the row of key wanted[i] (lib.levels.dense_index);
    returns the index of the first key with no row, -1 when every key has one."""
    for i in range(wanted.shape[0]):
        offset = wanted[i] - first_key
        if offset < 0 or offset >= dense.shape[0] or dense[offset] < 0:
            return i
        out[i] = dense[offset]
    return -1


@njit(cache=True)
def first_of_each_document(offsets, entry_rows, row_ranks, scores, rank_count, out_rows, out_offsets):
    """For each query, the rows of the first entry of each document (entry e's document is
    row_ranks[entry_rows[e]], as the doc-id order rank of the document: a number per
    document), then each run of tied scores reordered by document rank descending,
    trec_eval's tie order. Returns how many rows were written to out_rows."""
    seen = np.full(rank_count, -1, dtype=np.int64)
    written = 0
    for q in range(offsets.shape[0] - 1):
        first = written
        for e in range(offsets[q], offsets[q + 1]):
            r = row_ranks[entry_rows[e]]
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
            if j - i > SORTED_IN_PLACE_UP_TO:  # a long tie (a run of equal scores): a stable sort
                group = out_rows[i:j].copy()
                order = np.argsort(-row_ranks[entry_rows[group]], kind="mergesort")
                for g in range(j - i):
                    out_rows[i + g] = group[order[g]]
                i = j
                continue
            # A few tied entries: insertion sort, stable.
            for a in range(i + 1, j):
                row = out_rows[a]
                b = a - 1
                while b >= i and row_ranks[entry_rows[out_rows[b]]] < row_ranks[entry_rows[row]]:
                    out_rows[b + 1] = out_rows[b]
                    b -= 1
                out_rows[b + 1] = row
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
def top_chunks_cover(
    starts,
    ends,
    entry_rows,
    entry_label,
    chunk_page,
    chunk_start,
    chunk_end,
    ev_offsets,
    ev_page,
    ev_start,
    ev_end,
    ks,
    prompt_k,
    out_covered,
    out_characters,
):
    """One pass over each query's top max(ks) entries (entry e is chunk row entry_rows[e]):
    out_covered[j, q] the characters of q's evidence that its top ks[j] cover (ks
    ascending), out_characters[q] the characters of its top prompt_k. Entries with no
    label (entry_label[e] < 0) cover no evidence and are passed over."""
    k_max = ks[ks.shape[0] - 1]
    clip_start = np.empty(max(k_max, 1), dtype=np.int64)
    clip_end = np.empty(max(k_max, 1), dtype=np.int64)
    clip_place = np.empty(max(k_max, 1), dtype=np.int64)
    # A query's labelled entries among its top: their place and page.
    top_place = np.empty(max(k_max, 1), dtype=np.int64)
    top_page = np.empty(max(k_max, 1), dtype=np.int64)
    for q in range(starts.shape[0]):
        first = starts[q]
        characters = 0
        for e in range(first, min(ends[q], first + prompt_k)):
            characters += chunk_end[entry_rows[e]] - chunk_start[entry_rows[e]]
        out_characters[q] = characters
        if ev_offsets[q] == ev_offsets[q + 1]:
            continue
        n_top = 0
        for e in range(first, min(ends[q], first + k_max)):
            if entry_label[e] >= 0:
                top_place[n_top] = e
                top_page[n_top] = chunk_page[entry_rows[e]]
                n_top += 1
        for v in range(ev_offsets[q], ev_offsets[q + 1]):
            m = 0
            for t in range(n_top):
                if top_page[t] != ev_page[v]:
                    continue
                r = entry_rows[top_place[t]]
                low = max(chunk_start[r], ev_start[v])
                high = min(chunk_end[r], ev_end[v])
                if high > low:
                    clip_start[m] = low
                    clip_end[m] = high
                    clip_place[m] = top_place[t] - first
                    m += 1
            # Sorted by start: many chunks of one page by a sort, a few by insertion.
            if m > SORTED_IN_PLACE_UP_TO:
                order = np.argsort(clip_start[:m])
                clip_start[:m], clip_end[:m], clip_place[:m] = clip_start[order], clip_end[order], clip_place[order]
            else:
                for a in range(1, m):
                    low, high, place = clip_start[a], clip_end[a], clip_place[a]
                    b = a - 1
                    while b >= 0 and clip_start[b] > low:
                        clip_start[b + 1], clip_end[b + 1], clip_place[b + 1] = clip_start[b], clip_end[b], clip_place[b]
                        b -= 1
                    clip_start[b + 1], clip_end[b + 1], clip_place[b + 1] = low, high, place
            for j in range(ks.shape[0]):
                # The union of the clips of the top ks[j]: chunks may overlap, a character
                # counts once.
                reach = -1
                covered = 0
                for o in range(m):
                    if clip_place[o] >= ks[j]:
                        continue
                    low, high = clip_start[o], clip_end[o]
                    if low > reach:
                        covered += high - low
                        reach = high
                    elif high > reach:
                        covered += high - reach
                        reach = high
                out_covered[j, q] += covered
