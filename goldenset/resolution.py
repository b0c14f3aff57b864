"""How a pair's judgments resolve to its label: the one place the rule is written.

A pair's label, from its judgments:

1. the latest adjudicated judgment, if there is one: an adjudicator's decision overrides
   every other grade of the pair;
2. else, if people judged it, the median of each person's latest grade (a person's later
   judgment supersedes their earlier one). For an even count it is the LOWER median: a tie
   between 1 and 2 resolves to 1, never an invented 1.5 and never the more generous grade.
   The lower median is the highest grade that a strict majority of the judges gave or
   exceeded, so "label >= relevance threshold" is exactly the majority vote on "relevant",
   a tie counting as not relevant (a pair becomes relevant in a version only when most of
   its judges say so);
3. else the latest imported grade. An import is what the set knew before anyone judged the
   pair in Goldset: once a person has, the people's grades decide, so that an annotator can
   correct an imported grade up as well as down (with the import counted as a judge, the
   lower median of {imported 1, person 3} would keep the 1).

"Latest" is the highest judgment id, not the latest timestamp, so two judgments written in
the same microsecond still resolve the same way every time.

resolve_columns is the rule, over numpy columns, so that a publish resolves a million
judgments at once; every other reader hands it rows through labels_of_rows: a version's
publish (goldenset.version_rows), the set's labels and one pair's (goldenset.selectors
resolved_labels, label_of, pair_label, and labeling's look-ups through them) and the demo's
expected labels (goldset.demo.labels). The module imports no model, so that the demo can
use it without a database.
"""

from collections.abc import Iterable

import numpy as np

# Source codes of the judgment columns resolve_columns takes, and the Judgment.Source value
# each stands for (tests/goldenset/test_resolution.py holds the two equal).
IMPORTED, HUMAN, ADJUDICATED = 0, 1, 2
SOURCE_CODES = {"imported": IMPORTED, "human": HUMAN, "adjudicated": ADJUDICATED}


def _first_of_runs(*keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows where any of `keys` (sorted together) differs from the row before."""
    first = np.zeros(len(keys[0]), dtype=bool)
    if len(first):
        first[0] = True
        for key in keys:
            first[1:] |= key[1:] != key[:-1]
    return first


def resolve_columns(
    query: np.ndarray,
    page: np.ndarray,
    grade: np.ndarray,
    source: np.ndarray,
    annotator: np.ndarray,
    ident: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The label of each pair from its judgments, given as parallel int64 columns in any
    order (source coded IMPORTED/HUMAN/ADJUDICATED, annotator 0 for none, ident the
    judgment's id: "latest" is the highest). Returns (query, page, label), int64, one row
    a pair, sorted by (query, page). The rule is the module's; see there."""
    return resolve_columns_deciding(query, page, grade, source, annotator, ident)[:3]


def resolve_columns_deciding(
    query: np.ndarray,
    page: np.ndarray,
    grade: np.ndarray,
    source: np.ndarray,
    annotator: np.ndarray,
    ident: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """resolve_columns, with a fourth column: the ident of the judgment whose grade is the
    label (the adjudication, the judge whose grade is the lower median, the latest
    import). A version takes that judgment's evidence spans and hop with its grade."""
    # Pair by pair, newest judgment first.
    order = np.lexsort((-ident, page, query))
    query, page, grade, source, annotator, ident = (column[order] for column in (query, page, grade, source, annotator, ident))
    starts = _first_of_runs(query, page)
    pair = np.cumsum(starts) - 1
    firsts = np.flatnonzero(starts)
    label = np.empty(len(firsts), dtype=np.int64)
    decider = np.empty(len(firsts), dtype=np.int64)
    decided = np.zeros(len(firsts), dtype=bool)

    # 1. The latest adjudication of a pair overrides every other grade.
    rows = np.flatnonzero(source == ADJUDICATED)
    rows = rows[_first_of_runs(pair[rows])]
    label[pair[rows]] = grade[rows]
    decider[pair[rows]] = ident[rows]
    decided[pair[rows]] = True

    # 2. Else the lower median of each person's latest grade.
    rows = np.flatnonzero((source == HUMAN) & ~decided[pair])
    rows = rows[np.lexsort((-ident[rows], annotator[rows], pair[rows]))]
    rows = rows[_first_of_runs(pair[rows], annotator[rows])]  # each person's latest
    rows = rows[np.lexsort((grade[rows], pair[rows]))]
    group_starts = np.flatnonzero(_first_of_runs(pair[rows]))
    counts = np.diff(np.append(group_starts, len(rows)))
    medians = rows[group_starts + (counts - 1) // 2]
    label[pair[medians]] = grade[medians]
    decider[pair[medians]] = ident[medians]
    decided[pair[medians]] = True

    # 3. Else the latest import: the pair's rows are all imports, its first row the newest.
    label[~decided] = grade[firsts[~decided]]
    decider[~decided] = ident[firsts[~decided]]
    return query[firsts], page[firsts], label, decider


def labels_of_rows(rows: Iterable[tuple[int, int, int, str, int | None, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """resolve_columns of judgments given as (query, page, grade, source, annotator or None,
    judgment id) rows in any order, `source` a Judgment.Source value; any integers that tell
    queries, pages, people and judgments apart will do (the demo numbers its ids)."""
    rows = list(rows)
    count = len(rows)
    if not count:
        return tuple(np.empty(0, dtype=np.int64) for _ in range(3))
    query, page, grade, source, annotator, ident = zip(*rows)
    return resolve_columns(
        np.array(query, dtype=np.int64),
        np.array(page, dtype=np.int64),
        np.array(grade, dtype=np.int64),
        np.fromiter((SOURCE_CODES[value] for value in source), dtype=np.int64, count=count),
        np.fromiter((person or 0 for person in annotator), dtype=np.int64, count=count),
        np.array(ident, dtype=np.int64),
    )
