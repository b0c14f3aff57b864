"""How a pair's judgments resolve to its label, as numpy columns."""

import numpy as np

# Source codes of the judgment columns resolve_columns takes.
_IMPORTED, _HUMAN, _ADJUDICATED = 0, 1, 2


def _first_of_runs(*keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows where any of `keys` (sorted together) differs from the row before."""
    first = np.zeros(len(keys[0]), dtype=bool)
    if len(first):
        first[0] = True
        for key in keys:
            first[1:] |= key[1:] != key[:-1]
    return first


def resolve_columns(
    query: np.ndarray, page: np.ndarray, grade: np.ndarray, source: np.ndarray, annotator: np.ndarray, ident: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The label of each pair from its judgments, given as parallel columns in any order
    (source coded _IMPORTED/_HUMAN/_ADJUDICATED, annotator 0 for none, ident the
    judgment's id: "latest" is the highest). Returns (query, page, label) by pair, sorted
    by (query, page). The rules are resolved_labels'; see there."""
    # Pair by pair, newest judgment first.
    order = np.lexsort((-ident, page, query))
    query, page, grade, source, annotator, ident = (column[order] for column in (query, page, grade, source, annotator, ident))
    starts = _first_of_runs(query, page)
    pair = np.cumsum(starts) - 1
    firsts = np.flatnonzero(starts)
    label = np.empty(len(firsts), dtype=np.int64)
    decided = np.zeros(len(firsts), dtype=bool)

    # 1. The latest adjudication of a pair overrides every other grade.
    rows = np.flatnonzero(source == _ADJUDICATED)
    rows = rows[_first_of_runs(pair[rows])]
    label[pair[rows]] = grade[rows]
    decided[pair[rows]] = True

    # 2. Else the lower median of each person's latest grade.
    rows = np.flatnonzero((source == _HUMAN) & ~decided[pair])
    rows = rows[np.lexsort((-ident[rows], annotator[rows], pair[rows]))]
    rows = rows[_first_of_runs(pair[rows], annotator[rows])]  # each person's latest
    rows = rows[np.lexsort((grade[rows], pair[rows]))]
    group_starts = np.flatnonzero(_first_of_runs(pair[rows]))
    counts = np.diff(np.append(group_starts, len(rows)))
    medians = rows[group_starts + (counts - 1) // 2]
    label[pair[medians]] = grade[medians]
    decided[pair[medians]] = True

    # 3. Else the latest import: the pair's rows are all imports, its first row the newest.
    label[~decided] = grade[firsts[~decided]]
    return query[firsts], page[firsts], label
