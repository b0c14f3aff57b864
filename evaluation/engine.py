"""Score a ranked run against labels: pure numpy and numba kernels, no Django.

The inputs are columnar (`QrelsArrays` here, `lib.runs.RankedRun` for the run), with doc ids
already mapped to integer keys. The run is looked up among the labels once (`match_run`:
each entry's label row, by a binary search within its query's labels), and one compiled
pass (evaluation.kernels.score_queries) computes every metric of every query from that,
to the bit what ranx 0.3.21's metric kernels give (tests/evaluation/test_engine.py holds
them equal). ranx's own kernels make one pass over every query per metric and per slice,
copying each query's labels each time: ten metrics and four label sets were forty passes,
the larger part of an evaluation (bench/recompute.py prints it). Building
`ranx.Qrels`/`ranx.Run` from Python dicts would cost more still, a dict per run entry.

The run's entries are handed over already in trec_eval order (lib.runs), so nothing
downstream can reorder tied scores: an entry's rank is its place in its query's rows.

Semantics (SEMANTICS.md, "Scores"):

- Binary metrics count a page relevant when its grade >= the relevance threshold; nDCG uses
  the grades as gains whatever the threshold (negative grades give 0), as trec_eval does
  (its -l changes binary relevance only).
- Unjudged pages, and pages outside the corpus, are non-relevant.
- A query the run does not answer scores 0 in every metric (trec_eval -c) and is counted.
- A query with no relevant page is left out of the averages and counted as a coverage gap.
  `average_queries_without_relevant=True` keeps it in (binary metrics then score it 0),
  which is trec_eval's rule and reproduces its averages exactly.
- A page slice keeps only the labels of the slice's pages: recall for the slice is
  |relevant slice pages in the top k| / |relevant slice pages|, and a query with no relevant
  page in the slice is left out like any query with none.
"""

import functools
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from evaluation.metrics import Metric, parse_metric
from lib.runs import RankedRun


@functools.cache
def kernels():
    """evaluation.kernels, imported when a score is first computed, not when the app loads:
    numba costs about half a second of every process start, which a management command or
    a web worker serving stored scores never needs (a Celery worker warms the kernels when
    it starts, evaluation.warmup)."""
    from evaluation import kernels as compiled

    return compiled


@dataclass(frozen=True, eq=False)
class QrelsArrays:
    """The labels of a set of queries, columnar.

    Query i's labels are rows `offsets[i]:offsets[i + 1]` of `doc_keys` and `grades`, sorted
    by grade descending (ranx computes the ideal DCG from that order), then by key. A query
    may have no labels at all; it is still one of the set's queries. Grades are integers and
    may lie outside 0-3 or be negative.
    """

    query_ids: tuple[str, ...]
    offsets: np.ndarray  # int64, len(query_ids) + 1
    doc_keys: np.ndarray  # int64, one per label
    grades: np.ndarray  # int64, one per label

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, int, int]], *, query_ids: Iterable[str] | None = None) -> "QrelsArrays":
        """Labels from (query_id, doc_key, grade) rows, in any order.

        `query_ids` is the full query set (a golden set's queries include those with no label
        yet), in the order results should follow; without it, the queries of the rows in
        order of first appearance. ValueError when a row names a query outside `query_ids`
        or a (query, doc) pair repeats: a version holds one grade per pair.
        """
        positions: dict[str, int] = {}
        if query_ids is not None:
            for query_id in query_ids:
                positions.setdefault(query_id, len(positions))
        fixed = query_ids is not None
        owners: list[int] = []
        keys: list[int] = []
        grades: list[int] = []
        for query_id, doc_key, grade in rows:
            q = positions.get(query_id)
            if q is None:
                if fixed:
                    raise ValueError(f"label for query {query_id!r}, which is not in the query set")
                q = positions[query_id] = len(positions)
            owners.append(q)
            keys.append(doc_key)
            grades.append(grade)
        return cls.from_arrays(
            tuple(positions),
            np.asarray(owners, dtype=np.int64),
            np.asarray(keys, dtype=np.int64),
            np.asarray(grades, dtype=np.int64),
        )

    @classmethod
    def from_arrays(cls, query_ids: tuple[str, ...], query_index: np.ndarray, doc_keys: np.ndarray, grades: np.ndarray) -> "QrelsArrays":
        """Labels from parallel arrays: `query_index[j]` is the position in `query_ids` of label j."""
        query_index = np.asarray(query_index, dtype=np.int64)
        doc_keys = np.asarray(doc_keys, dtype=np.int64)
        grades = np.asarray(grades, dtype=np.int64)
        order = np.lexsort((doc_keys, -grades, query_index))
        query_index, doc_keys, grades = query_index[order], doc_keys[order], grades[order]
        if len(order) and (query_index[0] < 0 or query_index[-1] >= len(query_ids)):
            raise ValueError("query_index points outside query_ids")
        by_pair = np.lexsort((doc_keys, query_index))
        same = (query_index[by_pair][1:] == query_index[by_pair][:-1]) & (doc_keys[by_pair][1:] == doc_keys[by_pair][:-1])
        if same.any():
            row = by_pair[1:][same][0]
            raise ValueError(f"query {query_ids[query_index[row]]!r} has two labels for doc key {doc_keys[row]}")
        counts = np.bincount(query_index, minlength=len(query_ids))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(query_ids=tuple(query_ids), offsets=offsets, doc_keys=doc_keys, grades=grades)

    @property
    def query_index(self) -> np.ndarray:
        """int64 array: for each label, the index of its query in `query_ids`."""
        return np.repeat(np.arange(len(self.query_ids), dtype=np.int64), np.diff(self.offsets))

    @cached_property
    def key_order(self) -> np.ndarray:
        """The label rows sorted by query, then doc key: each query's labels in the order a
        binary search over their keys needs (match_run). Kept: a version's labels are
        matched against every run of a re-score."""
        return np.lexsort((self.doc_keys, self.query_index))


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Scores of one run against one set of labels, per query and averaged.

    `query_ids` are the queries averaged, in the labels' order; `values[name]` holds one
    float64 per such query, a fraction in [0, 1]. The counts say what the averages rest on:
    `unanswered_count` of the averaged queries had no entry in the run (each scored 0), and
    `no_relevant_count` queries in scope had no relevant page (left out, unless the
    evaluation was asked to average them in as trec_eval does).
    """

    metrics: tuple[Metric, ...]
    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    answered: np.ndarray  # bool per averaged query: the run has at least one entry for it
    relevant_counts: np.ndarray  # int64 per averaged query: relevant pages (within the page slice)
    no_relevant_query_ids: tuple[str, ...]
    relevance_threshold: int

    @property
    def query_count(self) -> int:
        """How many queries the averages are over."""
        return len(self.query_ids)

    @property
    def unanswered_count(self) -> int:
        return int(len(self.answered) - np.count_nonzero(self.answered))

    @property
    def unanswered_query_ids(self) -> tuple[str, ...]:
        return tuple(q for q, answered in zip(self.query_ids, self.answered.tolist()) if not answered)

    @property
    def no_relevant_count(self) -> int:
        return len(self.no_relevant_query_ids)

    @cached_property
    def means(self) -> dict[str, float | None]:
        """Metric name -> mean over `query_ids` (a fraction in [0, 1]), None when no query is averaged."""
        return {name: float(np.mean(v)) if len(v) else None for name, v in self.values.items()}

    def per_query(self, name: str) -> dict[str, float]:
        """query_id -> value of metric `name` for each averaged query."""
        return dict(zip(self.query_ids, self.values[name].tolist()))


@dataclass(frozen=True, eq=False)
class RunMatch:
    """A run's entries looked up among a set of labels once: what every figure of the run
    against those labels (scores of any slice, Judged@k, the pages it pools) is read from.

    Per query of `qrels`: `starts[q]:ends[q]` are its rows in the run (empty when the run
    does not answer it), `run_row[q]` its position in the run (-1 when unanswered). Per run
    entry: `entry_label[e]`, the row in `qrels` of the label of its page for its query, -1
    for an unlabelled page (pages outside the corpus included) or a query outside `qrels`.
    """

    qrels: QrelsArrays
    run: RankedRun
    run_row: np.ndarray  # int64 per query of qrels
    starts: np.ndarray  # int64 per query of qrels
    ends: np.ndarray  # int64 per query of qrels
    entry_label: np.ndarray  # int64 per run entry

    @cached_property
    def discounts(self) -> np.ndarray:
        """nDCG's log2(rank + 1) for every rank a query's entries or labels can reach."""
        longest = max(int(np.max(self.ends - self.starts, initial=0)), int(np.max(np.diff(self.qrels.offsets), initial=0)), 1)
        return kernels().discounts(longest)


@dataclass(frozen=True, eq=False)
class TableRows:
    """The labels and a run's entries as rows of one table whose keys they hold (a
    chunking's chunks): `labels[l]` label l's row, `entries[e]` entry e's, all below `count`."""

    labels: np.ndarray
    entries: np.ndarray
    count: int


def match_run(qrels: QrelsArrays, run: RankedRun, *, rows: TableRows | None = None) -> RunMatch:
    """`run` matched against `qrels` (RunMatch). The doc keys of both must come from the same
    mapping (lib.runs.rank_run's `doc_keys`). `rows`: both as rows of one table, where
    finding an entry's label is one read rather than a search among the query's labels."""
    n = len(qrels.query_ids)
    if run.query_ids == qrels.query_ids:  # the run answers every query, in the labels' order
        run_row = np.arange(n, dtype=np.int64)
    else:
        positions = run.query_positions
        run_row = np.fromiter((positions.get(q, -1) for q in qrels.query_ids), dtype=np.int64, count=n)
    answered = run_row >= 0
    starts = np.zeros(n, dtype=np.int64)
    starts[answered] = run.offsets[run_row[answered]]
    ends = starts.copy()
    ends[answered] = run.offsets[run_row[answered] + 1]
    entry_label = np.full(len(run.doc_keys), -1, dtype=np.int64)
    if rows is not None:
        kernels().entry_labels_by_row(qrels.offsets, rows.labels, starts, ends, rows.entries, rows.count, entry_label)
    else:
        # Each query's labels sorted by key, so that a page is found by a binary search
        # within the query's own few labels.
        by_key = qrels.key_order
        kernels().entry_labels(qrels.offsets, qrels.doc_keys[by_key], by_key, starts, ends, run.doc_keys, entry_label)
    return RunMatch(qrels=qrels, run=run, run_row=run_row, starts=starts, ends=ends, entry_label=entry_label)


def matched(qrels: QrelsArrays, run: RankedRun, match: RunMatch | None) -> RunMatch:
    """`match` when it is the match of `run` against `qrels`, else match_run's now; a match
    of another run or other labels is refused."""
    if match is None:
        return match_run(qrels, run)
    if match.qrels is not qrels or match.run is not run:
        raise ValueError("match is of another run or other labels")
    return match


def evaluate_run(
    qrels: QrelsArrays,
    run: RankedRun,
    metrics: Iterable[Metric | str],
    *,
    relevance_threshold: int = 1,
    query_slice: Collection[str] | None = None,
    page_slice: Collection[int] | np.ndarray | None = None,
    average_queries_without_relevant: bool = False,
    labels_kept: np.ndarray | None = None,
    match: RunMatch | None = None,
) -> Evaluation:
    """Score `run` against `qrels` with each of `metrics` (Metric objects or ranx names).

    `query_slice` restricts the queries to those ids (ids outside `qrels` are ignored);
    `page_slice` (doc keys) restricts the labels that count to those pages, and
    `labels_kept` (one bool per label row of `qrels`) to those rows. Run queries outside
    `qrels` are ignored. The run's doc keys and the labels' doc keys must come from the same
    mapping (lib.runs.rank_run's `doc_keys`). `match`, match_run(qrels, run) when the caller
    scores the run more than once (several slices), spares looking the run up again.
    """
    chosen: dict[str, Metric] = {}
    for metric in metrics:
        metric = metric if isinstance(metric, Metric) else parse_metric(metric)
        chosen.setdefault(metric.name, metric)
    match = matched(qrels, run, match)

    n = len(qrels.query_ids)
    in_scope = np.ones(n, dtype=bool) if query_slice is None else query_mask(qrels.query_ids, query_slice)

    owners, keys, grades = qrels.query_index, qrels.doc_keys, qrels.grades
    kept = np.ones(len(keys), dtype=bool) if labels_kept is None else np.asarray(labels_kept, dtype=bool).copy()
    if page_slice is not None:
        if isinstance(page_slice, np.ndarray):
            slice_keys = page_slice.astype(np.int64, copy=False)
        else:
            slice_keys = np.fromiter(page_slice, dtype=np.int64)
        kept &= np.isin(keys, slice_keys)
    label_counts = np.bincount(owners[kept], minlength=n)
    relevant_counts = np.bincount(owners[kept & (grades >= relevance_threshold)], minlength=n)

    has_relevant = relevant_counts > 0
    no_relevant = in_scope & ~has_relevant
    averaged = in_scope if average_queries_without_relevant else in_scope & has_relevant
    averaged_index = np.flatnonzero(averaged)

    answered = match.run_row[averaged_index] >= 0
    # A query with no label at all scores 0 everywhere; the kernel need not look at it.
    computed = np.flatnonzero(answered & (label_counts[averaged_index] > 0))

    values = {name: np.zeros(len(averaged_index), dtype=np.float64) for name in chosen}
    if len(computed) and chosen:
        metric_list = list(chosen.values())
        families = np.asarray([kernels().FAMILY_CODES[m.family] for m in metric_list], dtype=np.int64)
        ks = np.asarray([m.k or 0 for m in metric_list], dtype=np.int64)
        rel_lvls = np.asarray([relevance_threshold if m.binary else 1 for m in metric_list], dtype=np.int64)
        out = np.empty((len(metric_list), len(computed)), dtype=np.float64)
        kernels().score_queries(
            averaged_index[computed],
            match.starts,
            match.ends,
            match.entry_label,
            qrels.offsets,
            grades,
            kept,
            families,
            ks,
            rel_lvls,
            match.discounts,
            out,
        )
        for m, name in enumerate(chosen):
            values[name][computed] = out[m]

    return Evaluation(
        metrics=tuple(chosen.values()),
        query_ids=tuple(qrels.query_ids[i] for i in averaged_index.tolist()),
        values=values,
        answered=answered,
        relevant_counts=relevant_counts[averaged_index],
        no_relevant_query_ids=tuple(qrels.query_ids[i] for i in np.flatnonzero(no_relevant).tolist()),
        relevance_threshold=relevance_threshold,
    )


def query_mask(query_ids: tuple[str, ...], query_slice: Collection[str]) -> np.ndarray:
    """One bool per id of `query_ids`: whether it is in the query slice `query_slice` (a
    collection of query ids; a lone id is refused)."""
    if isinstance(query_slice, str):
        raise TypeError("a query slice is a collection of query ids, not one id")
    wanted = query_slice if isinstance(query_slice, (set, frozenset, dict)) else set(query_slice)
    return np.fromiter((q in wanted for q in query_ids), dtype=bool, count=len(query_ids))


def restrict_to_queries(overall: Evaluation, query_slice: Collection[str]) -> Evaluation:
    """What evaluate_run gives with `query_slice`, taken from `overall`, its evaluation of
    the same run and labels over all queries (no query_slice, no page_slice, queries without
    a relevant page left out of the averages): a query's values do not depend on which other
    queries are scored, so a query slice is the overall's values of its queries, with no
    kernel run again. That was three of the eight kernel passes of each evaluation of the
    benches' sets (bench/recompute.py)."""
    inside = query_mask(overall.query_ids, query_slice)
    no_relevant = overall.no_relevant_query_ids
    return Evaluation(
        metrics=overall.metrics,
        query_ids=tuple(q for q, keep in zip(overall.query_ids, inside.tolist()) if keep),
        values={name: values[inside] for name, values in overall.values.items()},
        answered=overall.answered[inside],
        relevant_counts=overall.relevant_counts[inside],
        no_relevant_query_ids=tuple(q for q, keep in zip(no_relevant, query_mask(no_relevant, query_slice).tolist()) if keep),
        relevance_threshold=overall.relevance_threshold,
    )
