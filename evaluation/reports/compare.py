"""Two runs on one version, side by side (the compare page): each metric's difference, b - a
in points, and its paired t-test over the stored per-query values, overall and per slice."""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation import engine
from evaluation.models import Evaluation, Run, Score
from evaluation.reports.chunkings import ChunkingComparison, chunking_comparison, chunking_side, evaluation_level_figures, run_chunking_name
from evaluation.reports.completeness import RunCompleteness, completeness_rows, run_completeness
from evaluation.selectors import (
    PerQuery,
    evaluation_per_query,
    evaluation_settings,
    run_ranked,
    slice_label,
    version_labels,
    version_query_ids,
    version_slices,
)
from goldenset.models import Query, Version
from lib.ids import natural_key

# Significance of a difference between two runs: the two-sided paired Student's t-test on
# the stored per-query values (scipy's ttest_rel, which is what ranx.compare runs inside, so
# the p-values are ranx's without importing ranx on a page), significant when p <= this
# (ranx's own rule). Not ranx's default Fisher randomization test: that one is a numba
# parallel kernel with a random state, so two threads of a web server could not run it at
# once (numba's workqueue layer aborts the process) and it could differ between two loads
# of a page.
SIGNIFICANCE_LEVEL = 0.05


def paired_p_value(a: np.ndarray, b: np.ndarray) -> float | None:
    """Two-sided paired t-test p-value of per-query values `a` and `b` (ranx's test, run by scipy), or
    None with fewer than two queries. Identical values give 1; a constant non-zero
    difference, where t is infinite, gives 0."""
    if len(a) < 2:
        return None
    difference = b - a
    if np.all(difference == difference[0]):
        return 1.0 if difference[0] == 0 else 0.0
    with warnings.catch_warnings():
        # scipy warns of precision loss on nearly identical inputs; the p-value is still right.
        warnings.simplefilter("ignore", RuntimeWarning)
        from scipy.stats import ttest_rel  # imported by the compare page alone

        _, p_value = ttest_rel(a, b, alternative="two-sided")
    p_value = float(p_value)
    return None if math.isnan(p_value) else p_value


@dataclass(frozen=True)
class MetricDelta:
    """One metric of two runs on one version: b minus a, in points, and its significance."""

    metric: str
    a: float | None
    b: float | None
    p_value: float | None
    paired_queries: int

    @property
    def delta_points(self) -> float | None:
        return None if self.a is None or self.b is None else (self.b - self.a) * 100

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value <= SIGNIFICANCE_LEVEL and bool(self.delta_points)

    @property
    def better(self) -> str:
        """'a', 'b', or '' when the difference is not significant."""
        if not self.significant:
            return ""
        return "b" if self.delta_points > 0 else "a"


@dataclass
class SliceComparison:
    name: str
    label: str
    queries_averaged: int
    no_relevant: int
    unanswered_a: int
    unanswered_b: int
    deltas: list[MetricDelta]


@dataclass(frozen=True)
class QueryDuel:
    """One query on which the two runs differ in the duel metric."""

    query_id: str
    text: str
    a: float
    b: float

    @property
    def difference_points(self) -> float:
        """How far the winner is ahead, in points (always positive)."""
        return abs(self.b - self.a) * 100


# Queries listed on each side of the duel; the count says how many there are in all.
DUELS_SHOWN = 50


@dataclass
class CompareReport:
    version: Version
    run_a: Run
    run_b: Run
    evaluation_a: Evaluation | None
    evaluation_b: Evaluation | None
    overall: list[MetricDelta] = field(default_factory=list)
    slices: list[SliceComparison] = field(default_factory=list)
    slice_metrics: list[str] = field(default_factory=list)
    completeness_a: RunCompleteness | None = None
    completeness_b: RunCompleteness | None = None
    # Per query, on `duel_metric`: where a beats b and where b beats a, largest difference
    # first (the first DUELS_SHOWN of each; the counts are of all of them).
    duel_metric: str = ""
    a_wins: list[QueryDuel] = field(default_factory=list)
    b_wins: list[QueryDuel] = field(default_factory=list)
    a_win_count: int = 0
    b_win_count: int = 0
    tie_count: int = 0
    duels_shown: int = 0  # the most of each side listed
    # Runs of two chunkings: what each puts in the prompt and at what cost (None: one chunking).
    chunkings: ChunkingComparison | None = None

    @property
    def warnings(self) -> list[tuple[str, RunCompleteness]]:
        """("a" or "b", its completeness) for each run whose scores on the version are unreliable."""
        return [
            (side, completeness)
            for side, completeness in (("a", self.completeness_a), ("b", self.completeness_b))
            if completeness is not None and completeness.unreliable
        ]

    @property
    def ready(self) -> bool:
        done = Evaluation.Status.DONE
        return bool(self.evaluation_a and self.evaluation_b and self.evaluation_a.status == done and self.evaluation_b.status == done)

    @property
    def significance_level(self) -> float:
        return SIGNIFICANCE_LEVEL


def paired_values(a: PerQuery, b: PerQuery, metric: str, keep: set[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' values of `metric` on the queries both averaged (and in `keep`), aligned."""
    position_b = {q: i for i, q in enumerate(b.query_ids)}
    rows_a, rows_b = [], []
    for i, query_id in enumerate(a.query_ids):
        j = position_b.get(query_id)
        if j is not None and (keep is None or query_id in keep):
            rows_a.append(i)
            rows_b.append(j)
    return a.values[metric][rows_a], b.values[metric][rows_b]


def stored_scores(evaluations: Sequence[Evaluation]) -> dict[tuple[int, str, str], tuple[float, int, int]]:
    rows = Score.objects.filter(evaluation__in=evaluations).values_list(
        "evaluation_id", "slice", "metric", "value", "queries_averaged", "no_relevant_count"
    )
    return {(e, s, m): (v, n, nr) for e, s, m, v, n, nr in rows}


def _key_metrics(metrics: Sequence[str], version: Version) -> list[str]:
    """The few metrics shown per slice: the funnel's two recalls and nDCG@10, when scored."""
    wanted = [f"recall@{version.k_first}", f"recall@{version.k_final}", "ndcg@10"]
    chosen = [m for m in dict.fromkeys(wanted) if m in metrics]
    return chosen or list(metrics[:3])


def _duels(report: CompareReport, per_a: PerQuery, per_b: PerQuery, metric: str) -> None:
    """Fill the report's per-query duel on `metric`, over the queries both runs are averaged on."""
    position_b = {q: i for i, q in enumerate(per_b.query_ids)}
    values_a, values_b = per_a.values[metric], per_b.values[metric]
    wins_a, wins_b, ties = [], [], 0
    for i, query_id in enumerate(per_a.query_ids):
        j = position_b.get(query_id)
        if j is None:
            continue
        a, b = float(values_a[i]), float(values_b[j])
        if a > b:
            wins_a.append((a - b, query_id, a, b))
        elif b > a:
            wins_b.append((b - a, query_id, a, b))
        else:
            ties += 1
    order = lambda row: (-row[0], natural_key(row[1]))  # noqa: E731 - largest difference first, then by id
    wins_a.sort(key=order)
    wins_b.sort(key=order)
    shown = [row[1] for row in wins_a[:DUELS_SHOWN] + wins_b[:DUELS_SHOWN]]
    texts = dict(Query.objects.filter(golden_set_id=report.version.golden_set_id, query_id__in=shown).values_list("query_id", "text"))
    report.duel_metric, report.tie_count = metric, ties
    report.a_win_count, report.b_win_count = len(wins_a), len(wins_b)
    report.duels_shown = DUELS_SHOWN
    report.a_wins = [QueryDuel(q, texts.get(q, ""), a, b) for _, q, a, b in wins_a[:DUELS_SHOWN]]
    report.b_wins = [QueryDuel(q, texts.get(q, ""), a, b) for _, q, a, b in wins_b[:DUELS_SHOWN]]


def compare_report(version: Version, run_a: Run, run_b: Run, *, duel_metric: str = "") -> CompareReport:
    """Run b against run a on `version`: each metric's difference (b - a, from the stored
    scores) and its paired t-test over the per-query values, overall and per slice, and the
    queries each run wins on `duel_metric` (default: recall@k_final, what the prompt sees).

    Per-query values of a query slice are the overall ones of its queries; a page slice
    changes which pages count, so its per-query values are recomputed with the engine.
    """
    evaluations = {e.run_id: e for e in Evaluation.objects.filter(version=version, run__in=[run_a, run_b]).defer("per_query")}
    report = CompareReport(
        version=version, run_a=run_a, run_b=run_b, evaluation_a=evaluations.get(run_a.id), evaluation_b=evaluations.get(run_b.id)
    )
    if not report.ready:
        return report
    eval_a, eval_b = report.evaluation_a, report.evaluation_b
    completeness = completeness_rows([eval_a, eval_b])
    settings = evaluation_settings(version.golden_set)
    slug = version.golden_set.slug
    report.completeness_a = run_completeness(completeness.get(eval_a.id, {}).get(""), run_a, version, settings, slug)
    report.completeness_b = run_completeness(completeness.get(eval_b.id, {}).get(""), run_b, version, settings, slug)
    per_a, per_b = evaluation_per_query(eval_a), evaluation_per_query(eval_b)
    metrics = [m for m in eval_a.metrics if m in eval_b.metrics and m in per_a.values and m in per_b.values]
    stored = stored_scores([eval_a, eval_b])

    def stored_value(evaluation: Evaluation, slice_name: str, metric: str) -> float | None:
        found = stored.get((evaluation.id, slice_name, metric))
        return None if found is None else found[0]

    for metric in metrics:
        a, b = paired_values(per_a, per_b, metric)
        report.overall.append(
            MetricDelta(
                metric=metric,
                a=stored_value(eval_a, "", metric),
                b=stored_value(eval_b, "", metric),
                p_value=paired_p_value(a, b),
                paired_queries=len(a),
            )
        )

    if run_a.chunking_id != run_b.chunking_id:
        figures = evaluation_level_figures([eval_a, eval_b], version.k_final)
        report.chunkings = chunking_comparison(
            version_number=version.number,
            k_final=version.k_final,
            a=chunking_side(run_a, figures[eval_a.pk], run_chunking_name(run_a)),
            b=chunking_side(run_b, figures[eval_b.pk], run_chunking_name(run_b)),
        )

    report.slice_metrics = _key_metrics(metrics, version)
    if metrics:
        prompt = f"recall@{version.k_final}"
        _duels(report, per_a, per_b, duel_metric if duel_metric in metrics else prompt if prompt in metrics else metrics[0])
    slices = version_slices(version)
    unanswered_a = {q for q, answered in zip(per_a.query_ids, per_a.answered.tolist()) if not answered}
    unanswered_b = {q for q, answered in zip(per_b.query_ids, per_b.answered.tolist()) if not answered}
    for name, query_ids in slices.query.items():
        deltas = []
        for metric in report.slice_metrics:
            a, b = paired_values(per_a, per_b, metric, keep=query_ids)
            deltas.append(
                MetricDelta(
                    metric=metric,
                    a=stored_value(eval_a, name, metric),
                    b=stored_value(eval_b, name, metric),
                    p_value=paired_p_value(a, b),
                    paired_queries=len(a),
                )
            )
        averaged = [q for q in per_a.query_ids if q in query_ids]
        report.slices.append(
            SliceComparison(
                name=name,
                label=slice_label(name),
                queries_averaged=len(averaged),
                no_relevant=len(query_ids) - len(averaged),
                unanswered_a=len(unanswered_a & query_ids),
                unanswered_b=len(unanswered_b & query_ids),
                deltas=deltas,
            )
        )
    if slices.page:
        qrels = engine.QrelsArrays.from_rows(version_labels(version), query_ids=version_query_ids(version))
        ranked_a, ranked_b = run_ranked(run_a), run_ranked(run_b)
        threshold = version.relevance_threshold
        for name, page_keys in slices.page.items():
            found_a = engine.evaluate_run(qrels, ranked_a, report.slice_metrics, relevance_threshold=threshold, page_slice=page_keys)
            found_b = engine.evaluate_run(qrels, ranked_b, report.slice_metrics, relevance_threshold=threshold, page_slice=page_keys)
            deltas = []
            for metric in report.slice_metrics:
                deltas.append(
                    MetricDelta(
                        metric=metric,
                        a=stored_value(eval_a, name, metric) if found_a.query_count else None,
                        b=stored_value(eval_b, name, metric) if found_b.query_count else None,
                        p_value=paired_p_value(found_a.values[metric], found_b.values[metric]),
                        paired_queries=found_a.query_count,
                    )
                )
            report.slices.append(
                SliceComparison(
                    name=name,
                    label=slice_label(name),
                    queries_averaged=found_a.query_count,
                    no_relevant=found_a.no_relevant_count,
                    unanswered_a=found_a.unanswered_count,
                    unanswered_b=found_b.unanswered_count,
                    deltas=deltas,
                )
            )
    return report
