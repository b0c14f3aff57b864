"""How far a run's scores can be trusted: pure numpy, no Django.

Unjudged pages count as non-relevant (SEMANTICS.md), so a score is only as good as the labels
under the run's top k. Two figures say how good that is:

- Judged@k (`judged_at_k`): the share of a run's top k that has a label. It is
  ir_measures' `Judged@k` (its `judged` provider), with the conventions below.
- Leave-one-run-out (`leave_one_run_out`): the run rescored against the labels with the
  pages only it contributed to the pool removed. The change tells how much a new system
  that was never pooled would be under-scored by the same labels.

Judged@k, convention by convention (ir_measures 0.4.1, providers/judged_provider.py):

- A page is judged when the query has a label for it, whatever the grade: 0 counts, and
  so do negative grades (TREC's -1, "unjudged" in Cranfield's original qrels, is a label
  present in the qrels, so ir_measures counts it; we follow it). Pages outside the corpus
  have no label, so they are unjudged.
- A run that returns fewer than k pages for a query is divided by what it returned, not
  by k: a short ranking fully judged is fully trustworthy, and pooling could add nothing.
  (ir_measures divides by min(k, pages returned), as here.)
- A query the run does not answer counts 0, as in ir_measures (its default value for a
  query of the qrels missing from the run) and as every score here does (trec_eval -c).
- The average is over the queries the scores beside it average: those with a relevant
  page (grade >= the relevance threshold), within the query slice if one is given. This
  is the one difference from ir_measures, which averages over every query with at least
  one label of any grade. The two agree whenever every labelled query has a relevant
  page, as in Cranfield; where they differ, ours describes the queries the score rests on.
- Ties in run scores are broken as everywhere in Goldset (trec_eval: doc id descending),
  because the run arrives already ranked (lib.runs). ir_measures breaks them by doc id
  ascending, so a tie straddling rank k can make the two differ by one page on that query.

Judged@k is a property of the run's top k, not of which relevant pages count, so it is
computed overall and per query slice. A page slice changes only which relevant pages are
counted; the run's top k, and so its judged share, is the same page for page, and only
the set of queries averaged would change, so no page-slice figure is made.

Leave-one-run-out, in short: the labels of the pages in the run's top `depth` that no other
run of the pool has in its own top `depth` are removed (whatever their grade), and the run
is rescored over the same queries as before, a query left with no relevant page counting
0. Which runs make the pool is the caller's choice: evaluation.services pools a run
against the runs of the set's other systems.

Units: Judged@k and scores are fractions in [0, 1]; changes are points (hundredths).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation import engine
from lib.runs import RankedRun


@dataclass(frozen=True, eq=False)
class Judged:
    """Judged@k of one run: one fraction in [0, 1] per averaged query, in the labels' order."""

    k: int
    query_ids: tuple[str, ...]
    values: np.ndarray  # float64, one per query in query_ids

    @property
    def query_count(self) -> int:
        return len(self.query_ids)

    @property
    def mean(self) -> float | None:
        """The mean over `query_ids` (a fraction), None when no query is averaged."""
        return float(self.values.mean()) if len(self.values) else None

    def per_query(self) -> dict[str, float]:
        return dict(zip(self.query_ids, self.values.tolist()))


def judged_at_k(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    k: int,
    *,
    relevance_threshold: int = 1,
    query_slice: Collection[str] | None = None,
) -> Judged:
    """Judged@k of `ranked` against `qrels`: per query, the labelled pages among the run's
    first min(k, returned) pages divided by that number; 0 for an unanswered query.

    Averaged over the queries of `query_slice` (all of `qrels` when None) that have a
    relevant page (grade >= `relevance_threshold`), as the scores are. See the module
    docstring for how this relates to ir_measures' Judged@k.
    """
    found = judged_at_k_by_slice(qrels, ranked, k, {"": query_slice}, relevance_threshold=relevance_threshold)
    return found[""]


def judged_at_k_by_slice(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    k: int,
    slices: Mapping[str, Collection[str] | None],
    *,
    relevance_threshold: int = 1,
    match: engine.RunMatch | None = None,
) -> dict[str, Judged]:
    """`judged_at_k` for each of `slices` (name -> query ids, None for all queries), with
    the run's top k looked up once: a version with twenty query slices costs one lookup,
    not twenty. `match` is engine.match_run(qrels, ranked) when the caller has it."""
    found = judged_at_ks_by_slice(qrels, ranked, [k], slices, relevance_threshold=relevance_threshold, match=match)
    return found[k]


def judged_at_ks_by_slice(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    ks: Iterable[int],
    slices: Mapping[str, Collection[str] | None],
    *,
    relevance_threshold: int = 1,
    match: engine.RunMatch | None = None,
) -> dict[int, dict[str, Judged]]:
    """judged_at_k_by_slice at each of `ks`: {k: {slice name: Judged}}, each slice's queries
    found once for every k (an evaluation stores Judged@k_final and Judged@k_first)."""
    ks = list(dict.fromkeys(ks))
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
    n = len(qrels.query_ids)
    has_relevant = np.bincount(qrels.query_index[qrels.grades >= relevance_threshold], minlength=n) > 0
    match = engine.matched(qrels, ranked, match)

    averaged_by_slice = {}
    for name, query_slice in slices.items():
        averaged = has_relevant if query_slice is None else has_relevant & engine.query_mask(qrels.query_ids, query_slice)
        index = np.flatnonzero(averaged)
        averaged_by_slice[name] = (index, tuple(qrels.query_ids[i] for i in index.tolist()))

    found: dict[int, dict[str, Judged]] = {}
    for k in ks:
        judged_counts = np.zeros(n, dtype=np.int64)
        engine.kernels().judged_within(match.starts, match.ends, match.entry_label, k, judged_counts)
        returned = np.minimum(match.ends - match.starts, k)
        fractions = np.zeros(n, dtype=np.float64)
        answered = returned > 0
        fractions[answered] = judged_counts[answered] / returned[answered]
        found[k] = {
            name: Judged(k=k, query_ids=query_ids, values=fractions[index]) for name, (index, query_ids) in averaged_by_slice.items()
        }
    return found


@dataclass(frozen=True)
class LeaveOneRunOut:
    """A run rescored without the labels of the pages only it contributed to the pool.

    `full` and `reduced` map each metric name to its mean (a fraction) over the same
    queries: those with a relevant page under the full labels (`query_count`). A query
    whose every relevant page only this run found keeps its place in the reduced average
    and scores 0 there (`emptied_query_count` of them): leaving it out would hide exactly
    the under-scoring the figure is meant to show. `unique_relevant_count` counts the
    removed labels with a relevant grade, `unique_label_count` all the removed labels
    (grade 0 included); `other_run_count` the runs the pool is made of besides this one;
    `depth` the pool depth assumed.
    """

    depth: int
    other_run_count: int
    query_count: int
    full: dict[str, float | None]
    reduced: dict[str, float | None]
    unique_relevant_count: int
    unique_label_count: int
    emptied_query_count: int

    def change_points(self, metric: str) -> float | None:
        """reduced - full for `metric`, in points (hundredths); negative means the run would
        be under-scored had it not been pooled. None when no query is averaged."""
        full, reduced = self.full.get(metric), self.reduced.get(metric)
        if full is None or reduced is None:
            return None
        return (reduced - full) * 100


def leave_one_run_out(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    other_runs: Sequence[RankedRun],
    *,
    depth: int,
    metrics: Iterable[str],
    relevance_threshold: int = 1,
) -> LeaveOneRunOut:
    """Score `ranked` with `metrics` (ranx names) against `qrels` and against `qrels`
    without the labels of the pages in its top `depth` that no run of `other_runs` has in
    its own top `depth`, per query.

    This assumes the labels came from pooling these runs to `depth`: a page only this run
    retrieved would not have been judged had the run not been pooled. Every such label is
    removed, whatever its grade (a grade-0 label changes no score; a grade between 1 and a
    higher threshold still changes nDCG's gains). Run and label doc keys must come from
    the same mapping (lib.runs.rank_run's `doc_keys`).
    """
    pooled_elsewhere = np.zeros(len(qrels.doc_keys), dtype=bool)
    for other in other_runs:
        pooled_elsewhere[pooled_labels(qrels, other, depth)] = True
    return leave_one_run_out_of_pool(
        qrels,
        ranked,
        pooled_elsewhere,
        other_run_count=len(other_runs),
        depth=depth,
        metrics=metrics,
        relevance_threshold=relevance_threshold,
    )


def leave_one_run_out_of_pool(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    pooled_elsewhere: np.ndarray,
    *,
    other_run_count: int,
    depth: int,
    metrics: Iterable[str],
    relevance_threshold: int = 1,
    full: engine.Evaluation | None = None,
    match: engine.RunMatch | None = None,
) -> LeaveOneRunOut:
    """`leave_one_run_out` with the other runs already reduced to what it needs of them:
    `pooled_elsewhere`, one bool per label of `qrels` (its rows), True where some other run
    has the label's page in its top `depth` (`pooled_labels`). A worker keeps those small
    arrays between the evaluations of one version instead of decoding every other run for
    each (evaluation.pooled_labels.get_or_build).

    `full` may be the run's evaluation against all of `qrels` over all its queries, at
    `relevance_threshold`, when the caller has it already (evaluation_compute does): it is
    used for the metrics it holds instead of scoring them again; `match` may be
    engine.match_run(qrels, ranked), which every figure here is read from.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    metrics = tuple(dict.fromkeys(metrics))
    n = len(qrels.query_ids)
    owners, keys, grades = qrels.query_index, qrels.doc_keys, qrels.grades
    match = engine.matched(qrels, ranked, match)
    unique = np.zeros(len(keys), dtype=bool)
    unique[pooled_labels(qrels, ranked, depth, match=match)] = True
    unique &= ~pooled_elsewhere

    if full is None or any(metric not in full.values for metric in metrics):
        full = engine.evaluate_run(qrels, ranked, metrics, relevance_threshold=relevance_threshold, match=match)
    kept = ~unique
    # Only the queries that lost a label can score differently: they are rescored against
    # the labels kept and the others keep their full values. Over the same queries as the
    # full figures: one that lost every relevant page stays in, as 0.
    position = {query_id: i for i, query_id in enumerate(full.query_ids)}
    affected = {qrels.query_ids[q] for q in np.unique(owners[unique]).tolist()} & position.keys()
    rescored = engine.evaluate_run(
        qrels,
        ranked,
        metrics,
        relevance_threshold=relevance_threshold,
        query_slice=affected,
        average_queries_without_relevant=True,
        labels_kept=kept,
        match=match,
    )
    rows = np.fromiter((position[q] for q in rescored.query_ids), dtype=np.int64, count=rescored.query_count)
    reduced_means = {}
    for metric in metrics:
        values = full.values[metric].copy()
        values[rows] = rescored.values[metric]
        reduced_means[metric] = float(values.mean()) if len(values) else None
    relevant = grades >= relevance_threshold
    had_relevant = np.bincount(owners[relevant], minlength=n) > 0
    relevant_left = np.bincount(owners[kept & relevant], minlength=n)
    return LeaveOneRunOut(
        depth=depth,
        other_run_count=other_run_count,
        query_count=full.query_count,
        full={metric: full.means[metric] for metric in metrics},
        reduced=reduced_means,
        unique_relevant_count=int(np.count_nonzero(unique & relevant)),
        unique_label_count=int(np.count_nonzero(unique)),
        emptied_query_count=int(np.count_nonzero(had_relevant & (relevant_left == 0))),
    )


def pooled_labels(
    qrels: engine.QrelsArrays,
    ranked: RankedRun,
    depth: int,
    *,
    match: engine.RunMatch | None = None,
) -> np.ndarray:
    """The labels of `qrels` (indices of its rows, ascending, int64) whose page `ranked`
    has in its top `depth` for the label's query. `match` as for judged_at_k_by_slice."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    match = engine.matched(qrels, ranked, match)
    label_hit = np.zeros(len(qrels.doc_keys), dtype=np.bool_)
    engine.kernels().labels_within(match.starts, match.ends, match.entry_label, depth, label_hit)
    return np.flatnonzero(label_hit)
