"""What the results pages show, read and assembled here so the views only fetch and render.

One function per page (`results_report`, `runs_report`, `run_detail_report`,
`compare_report`, `run_versions_report`, `query_drilldown`) plus the small pure pieces
they share: the funnel's diagnosis, the cost of a larger final k, significance tests.

Units: every score is a fraction in [0, 1] tied to one version and one metric name (whose
`@k` is its cut-off); every difference between two scores is in points (hundredths).
Nothing here writes.
"""

import math
import shlex
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Count, OuterRef, Subquery
from django.http import Http404
from ranx.statistical_tests import paired_student_t_test

from evaluation import engine
from evaluation.models import Completeness, Evaluation, EvaluationSettings, Run, Score
from evaluation.selectors import (
    PerQuery,
    evaluation_per_query,
    evaluation_settings,
    run_ranked,
    version_labels,
    version_query_ids,
    version_slices,
)
from goldenset.models import GoldenSet, Page, Query, Version, VersionLabel, VersionQuery
from goldenset.selectors import version_diff
from lib import charts
from lib.ids import natural_key

# The seed's decision table (seeds/recall-at-k.txt, "Numbers worth knowing").
FIRST_STAGE_TARGET = 0.90  # recall@k_first to reach before investing in reranking or prompts
FIRST_STAGE_FLOOR = 0.85  # under this, fix the first stage
FINAL_TARGET = 0.80  # recall@k_final, what the prompt sees
# Significance of a difference between two runs: ranx's two-sided paired Student's t-test
# on the stored per-query values (what ranx.compare runs inside), significant when p <= this
# (ranx's own rule). Not ranx's default Fisher randomization test: that one is a numba
# parallel kernel with a random state, so it would have to queue behind the scoring kernels
# (engine._KERNEL_LOCK) in a web request and could differ between two loads of a page.
SIGNIFICANCE_LEVEL = 0.05
# The cost calculator's defaults: the seed's example (400 tokens a chunk, $3 per million
# input tokens, a million queries a month).
DEFAULT_TOKENS_PER_CHUNK = 400
DEFAULT_PRICE_PER_MILLION = 3.0
DEFAULT_MONTHLY_QUERIES = 1_000_000
WORST_QUERY_COUNT = 25


# --- completeness: Judged@k, leave-one-run-out, and the warning they raise ------------------

# How the warning tells a manager to pool a run (labeling's build_pool command), to the
# depth leave-one-run-out assumes the pool has.
POOL_COMMAND = "build_pool {slug} --runs {run} --depth {depth}"
# Float noise: a mean of exactly 0.9 may come out as 0.8999999999999999, which is not under 0.9.
_EPSILON = 1e-9


def _two_figures(value: float, floor: float) -> tuple[str, str]:
    """`value` and `floor` printed with the fewest decimals (2 or more) that tell them apart,
    so that 0.895 under a floor of 0.90 never reads "0.90 < 0.90"."""
    for digits in range(2, 7):
        a, b = f"{value:.{digits}f}", f"{floor:.{digits}f}"
        if a != b:
            return a, b
    return f"{value:.6f}", f"{floor:.6f}"


@dataclass(frozen=True)
class RunCompleteness:
    """One run's completeness figures on one version and whether its scores there are to
    be trusted. `judged_final` and `judged_first` are None when the evaluation was computed
    before they were stored; `row`, the stored row with the leave-one-run-out figures, may
    be absent where a page needs Judged@k alone.

    Judged@k values and the leave-one-run-out scores are fractions; the changes are points.
    The scores are unreliable when Judged@k_final is under the set's `floor`.
    """

    judged_final: float | None
    judged_first: float | None
    row: Completeness | None
    run_name: str
    slug: str
    version_number: int
    k_first: int
    k_final: int
    floor: float
    pool_depth: int

    @property
    def unreliable(self) -> bool:
        return self.judged_final is not None and self.judged_final < self.floor - _EPSILON

    @property
    def pool_command(self) -> str:
        return POOL_COMMAND.format(slug=self.slug, run=shlex.quote(self.run_name), depth=self.pool_depth)

    @property
    def warning(self) -> str:
        """"Judged@8 = 0.62 < 0.90 on v3: scores are unreliable; pool this run (build_pool ...)",
        or "" when the scores are reliable (or have no completeness figures)."""
        if not self.unreliable:
            return ""
        judged, floor = _two_figures(self.judged_final, self.floor)
        return (
            f"Judged@{self.k_final} = {judged} < {floor} on v{self.version_number}: scores are unreliable; "
            f"pool this run ({self.pool_command})"
        )

    @property
    def has_loro(self) -> bool:
        return self.row is not None and self.row.loro_other_runs is not None


def _completeness_rows(evaluations: Iterable[Evaluation], *, overall_only: bool = True) -> dict[int, dict[str, Completeness]]:
    """evaluation id -> slice name -> its Completeness row, in one query however many evaluations."""
    rows = Completeness.objects.filter(evaluation__in=[e.id for e in evaluations])
    if overall_only:
        rows = rows.filter(slice="")
    found: dict[int, dict[str, Completeness]] = defaultdict(dict)
    for row in rows:
        found[row.evaluation_id][row.slice] = row
    return found


def run_completeness(
    row: Completeness | None, run: Run, version: Version, settings: EvaluationSettings, slug: str,
) -> RunCompleteness:
    """The figures of `row` (None: not stored) for `run` on `version`, held to the set's
    Judged@k floor (`settings`; `slug` is the set's, for the pooling command)."""
    return RunCompleteness(
        judged_final=row.judged_at_k_final if row else None, judged_first=row.judged_at_k_first if row else None,
        row=row, run_name=run.name, slug=slug, version_number=version.number, k_first=version.k_first,
        k_final=version.k_final, floor=settings.judged_floor, pool_depth=settings.completeness_depth,
    )


# --- fetching with a check ------------------------------------------------------------

def run_get(golden_set: GoldenSet, run_id: int) -> Run:
    """Run `run_id` of the set, or Http404 (a run of another set is as absent as none)."""
    run = Run.objects.filter(golden_set=golden_set, pk=run_id).select_related("uploaded_by", "golden_set").first()
    if run is None:
        raise Http404("no such run")
    return run


def version_numbers(golden_set: GoldenSet) -> list[int]:
    """The set's version numbers, newest first, for the version choosers."""
    return list(golden_set.versions.order_by("-number").values_list("number", flat=True))


# --- progress of a recompute -------------------------------------------------------------

@dataclass(frozen=True)
class ScoringProgress:
    """How many of a version's evaluations are done. `total` counts every run scheduled."""

    version_number: int
    done: int
    running: int
    pending: int
    failed: int

    @property
    def total(self) -> int:
        return self.done + self.running + self.pending + self.failed

    @property
    def finished(self) -> bool:
        return self.running == 0 and self.pending == 0


def scoring_progress(version: Version) -> ScoringProgress:
    counts = dict(Evaluation.objects.filter(version=version).values("status").annotate(n=Count("id")).values_list("status", "n"))
    return _progress_from(version, Counter(counts))


def _progress_from(version: Version, counts: Counter) -> ScoringProgress:
    status = Evaluation.Status
    return ScoringProgress(
        version_number=version.number, done=counts[status.DONE], running=counts[status.RUNNING],
        pending=counts[status.PENDING], failed=counts[status.FAILED],
    )


# --- the funnel and its diagnosis ---------------------------------------------------------

@dataclass(frozen=True)
class Diagnosis:
    """Which row of the seed's decision table a funnel falls in, and what to do about it."""

    kind: str  # "first_stage", "reranker" or "downstream"
    headline: str
    advice: str
    notes: tuple[str, ...] = ()


def funnel_diagnosis(
    recall_first: float, recall_final: float, *, k_first: int, k_final: int, loss_limit_points: float = 10.0,
) -> Diagnosis:
    """The decision table: recall@k_first under 0.85 -> fix the first stage; recall@k_first
    high but recall@k_final under 0.80, or a rerank loss over `loss_limit_points` -> the
    reranker (depth or model); both high -> context assembly or generation (oracle test).

    Recalls are fractions; the loss is recall_first - recall_final in points.
    """
    # Rounded so that 0.91 - 0.81 is 10 points, not 10.000000000000009, and not "over 10".
    loss = round((recall_first - recall_final) * 100, 9)
    first, final = f"recall@{k_first}", f"recall@{k_final}"
    notes = []
    if recall_first < FIRST_STAGE_FLOOR:
        if loss > loss_limit_points:
            notes.append(
                f"The rerank loss ({loss:.1f} points) is over {loss_limit_points:g} points as well, but the reranker "
                f"can only keep what the first stage hands it: fix the first stage first."
            )
        return Diagnosis(
            kind="first_stage",
            headline="Fix the first stage",
            advice=(
                f"{first} is under {FIRST_STAGE_FLOOR:.2f}: relevant pages never reach the reranker. Try hybrid search, "
                f"query rewriting, chunking or metadata filters."
            ),
            notes=tuple(notes),
        )
    if recall_first < FIRST_STAGE_TARGET:
        notes.append(f"{first} is under the {FIRST_STAGE_TARGET:.2f} target for a first stage.")
    if recall_final < FINAL_TARGET or loss > loss_limit_points:
        reasons = []
        if recall_final < FINAL_TARGET:
            reasons.append(f"{final} is under {FINAL_TARGET:.2f}")
        if loss > loss_limit_points:
            reasons.append(f"the rerank loss is {loss:.1f} points, over {loss_limit_points:g}")
        return Diagnosis(
            kind="reranker",
            headline="Reranker depth or model",
            advice=(
                f"The first stage finds the pages ({first} is {recall_first:.3f}) but {' and '.join(reasons)}: "
                f"they are cut before the prompt. Try a better reranker, or a larger final k within the token "
                f"budget (see the cost below)."
            ),
            notes=tuple(notes),
        )
    return Diagnosis(
        kind="downstream",
        headline="Retrieval is not the bottleneck",
        advice=(
            f"{first} and {final} are both high. If answers are still wrong, look at context assembly or "
            f"generation: run an oracle experiment (hand the model the labelled relevant pages) to tell them apart."
        ),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class RerankCost:
    """The seed's cost maths: what raising the final k costs in input tokens.

    cost a month = (to_k - from_k) x tokens_per_chunk x price_per_million / 1e6 x monthly_queries
    """

    from_k: int
    to_k: int
    tokens_per_chunk: int
    price_per_million: float  # dollars per million input tokens
    monthly_queries: int

    @property
    def added_chunks(self) -> int:
        return self.to_k - self.from_k

    @property
    def added_tokens_per_query(self) -> int:
        return self.added_chunks * self.tokens_per_chunk

    @property
    def cost_per_query(self) -> float:
        """Dollars per query."""
        return self.added_tokens_per_query * self.price_per_million / 1_000_000

    @property
    def monthly_cost(self) -> float:
        """Dollars per month."""
        return self.cost_per_query * self.monthly_queries


@dataclass(frozen=True)
class RecallGain:
    """What a larger final k buys one system, read off its final run's recall curve."""

    system: str
    run_name: str
    version_number: int
    from_k: int
    to_k: int
    recall_from: float | None
    recall_to: float | None
    monthly_cost: float

    @property
    def gain_points(self) -> float | None:
        if self.recall_from is None or self.recall_to is None:
            return None
        return (self.recall_to - self.recall_from) * 100

    @property
    def cost_per_point(self) -> float | None:
        """Dollars a month for each point of recall gained; None when nothing is gained."""
        gain = self.gain_points
        return self.monthly_cost / gain if gain and gain > 0 else None


@dataclass
class RunResult:
    """One run's evaluation on the chosen version, with its overall and per-slice scores."""

    run: Run
    evaluation: Evaluation
    color: str
    scores: dict[str, float] = field(default_factory=dict)
    # slice name -> metric -> (fraction, queries averaged, queries left out for no relevant page)
    slices: dict[str, dict[str, tuple[float, int, int]]] = field(default_factory=dict)
    cells: list["Cell"] = field(default_factory=list)
    completeness: RunCompleteness | None = None
    # slice name -> Judged@k_final on it (fraction); query slices only
    slice_judged: dict[str, float] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.evaluation.status == Evaluation.Status.DONE

    @property
    def unreliable(self) -> bool:
        return self.scored and self.completeness is not None and self.completeness.unreliable

    @property
    def warning(self) -> str:
        return self.completeness.warning if self.scored and self.completeness is not None else ""

    def recall_at(self, k: int) -> float | None:
        """Mean recall@k: the stored score, else the stored curve's point at k."""
        found = self.scores.get(f"recall@{k}")
        if found is not None:
            return found
        return dict((int(at), value) for at, value in (self.evaluation.recall_curve or [])).get(k)


@dataclass(frozen=True)
class Cell:
    metric: str
    value: float | None


@dataclass
class Funnel:
    """A system's first stage and what reaches the prompt, on one version."""

    system: str
    first: RunResult
    final: RunResult
    version_number: int
    k_first: int
    k_final: int
    loss_limit_points: float
    # True when the system has no reranked run: its first stage's top k_final is taken as
    # what the prompt sees.
    single_stage: bool

    @property
    def recall_first(self) -> float | None:
        return self.first.recall_at(self.k_first)

    @property
    def recall_final(self) -> float | None:
        return self.final.recall_at(self.k_final)

    @property
    def loss_points(self) -> float | None:
        if self.recall_first is None or self.recall_final is None:
            return None
        return round((self.recall_first - self.recall_final) * 100, 9)

    @property
    def loss_over_limit(self) -> bool:
        return self.loss_points is not None and self.loss_points > self.loss_limit_points

    @property
    def diagnosis(self) -> Diagnosis | None:
        if self.recall_first is None or self.recall_final is None:
            return None
        return funnel_diagnosis(self.recall_first, self.recall_final, k_first=self.k_first, k_final=self.k_final,
                                loss_limit_points=self.loss_limit_points)

    @property
    def first_width(self) -> float:
        """Bar widths for the funnel drawing, in percent."""
        return round((self.recall_first or 0) * 100, 1)

    @property
    def final_width(self) -> float:
        return round((self.recall_final or 0) * 100, 1)


def _latest(results: Iterable[RunResult]) -> RunResult | None:
    return max(results, key=lambda r: (r.run.created_at, r.run.id), default=None)


def system_funnels(results: Sequence[RunResult], version: Version, *, loss_limit_points: float) -> list[Funnel]:
    """One funnel per system that has a scored first-stage (or other) run on the version.

    A system's latest first-stage run is its first stage and its latest reranked run what
    the prompt sees; with no reranked run, the first stage's own top k_final stands in.
    """
    by_system: dict[str, list[RunResult]] = defaultdict(list)
    for result in results:
        if result.scored:
            by_system[result.run.system].append(result)
    funnels = []
    for system in sorted(by_system, key=lambda s: (natural_key(s), s)):
        runs = by_system[system]
        first = _latest(r for r in runs if r.run.stage == Run.Stage.FIRST_STAGE) or _latest(
            r for r in runs if r.run.stage == Run.Stage.OTHER
        )
        if first is None:
            continue
        final = _latest(r for r in runs if r.run.stage == Run.Stage.RERANKED)
        funnels.append(Funnel(
            system=system, first=first, final=final or first, version_number=version.number, k_first=version.k_first,
            k_final=version.k_final, loss_limit_points=loss_limit_points, single_stage=final is None,
        ))
    return funnels


# --- the results page ----------------------------------------------------------------------

@dataclass
class ResultsReport:
    version: Version
    metrics: list[str]
    order: str
    results: list[RunResult]
    progress: ScoringProgress
    funnels: list[Funnel]
    slice_floor: float
    slice_metric: str
    slice_metrics: list[str]
    curve_chart: charts.LineChart
    curves_missing: list[str]
    slice_chart: charts.BarChart
    trend_first: charts.LineChart
    trend_final: charts.LineChart
    loss_limit_points: float
    version_numbers: list[int]  # every version of the set, newest first
    judged_floor: float = 0.9  # fraction: Judged@k_final under it marks a run unreliable

    @property
    def scored(self) -> list[RunResult]:
        return [r for r in self.results if r.scored]

    @property
    def unreliable(self) -> list[RunResult]:
        return [r for r in self.results if r.unreliable]

    @property
    def judged_slices(self) -> list[tuple[str, list[float | None]]]:
        """(slice label, Judged@k_final of each scored run, a fraction) for every query slice
        some scored run has the figure on; runs in `scored` order, None where absent."""
        scored = self.scored
        names = {name for r in scored for name in r.slice_judged}
        return [
            (slice_label(name), [r.slice_judged.get(name) for r in scored])
            for name in sorted(names, key=lambda n: (natural_key(n), n))
        ]


def _run_results(version: Version, *, settings: EvaluationSettings, slug: str) -> list[RunResult]:
    """Every evaluation of the version with its scores and completeness figures (Judged@k
    under the settings' floor marks a run unreliable): three queries however many runs and slices."""
    evaluations = (
        Evaluation.objects.filter(version=version).select_related("run").defer("per_query").order_by("run_id")
    )
    results = {e.id: RunResult(run=e.run, evaluation=e, color=charts.color(i)) for i, e in enumerate(evaluations)}
    found = _completeness_rows([result.evaluation for result in results.values()], overall_only=False)
    for evaluation_id, result in results.items():
        by_slice = found.get(evaluation_id, {})
        result.completeness = run_completeness(by_slice.get(""), result.run, version, settings, slug)
        result.slice_judged = {name: row.judged_at_k_final for name, row in by_slice.items() if name}
    rows = Score.objects.filter(evaluation__version=version).values_list(
        "evaluation_id", "slice", "metric", "value", "queries_averaged", "no_relevant_count"
    )
    for evaluation_id, slice_name, metric, value, averaged, no_relevant in rows.iterator(chunk_size=10_000):
        result = results[evaluation_id]
        if slice_name:
            result.slices.setdefault(slice_name, {})[metric] = (value, averaged, no_relevant)
        else:
            result.scores[metric] = value
    return list(results.values())


def results_report(golden_set: GoldenSet, version: Version, *, order: str = "", slice_metric: str = "") -> ResultsReport:
    """The results page of `version`: runs best first by `order` (a metric name; default
    recall@k_final), the funnels, recall curves, slices under `slice_metric` (default
    recall@k_first) and the trend of every run across the set's versions."""
    settings = evaluation_settings(golden_set)
    results = _run_results(version, settings=settings, slug=golden_set.slug)
    metrics: list[str] = []
    for result in results:
        for name in result.evaluation.metrics:
            if name not in metrics:
                metrics.append(name)
    default_order = f"recall@{version.k_final}"
    order = order if order in metrics else (default_order if default_order in metrics or not metrics else metrics[0])
    results.sort(key=lambda r: (not r.scored, -(r.scores.get(order, -1.0)), natural_key(r.run.name), r.run.name))
    for result in results:
        result.cells = [Cell(metric=m, value=result.scores.get(m)) for m in metrics]

    recall_metrics = [m for m in metrics if m.startswith("recall@")]
    default_slice = f"recall@{version.k_first}"
    slice_metric = slice_metric if slice_metric in metrics else (default_slice if default_slice in metrics else (recall_metrics or metrics or [""])[0])
    progress = _progress_from(version, Counter(r.evaluation.status for r in results))
    colors = {r.run.id: r.color for r in results}
    curve_chart, curves_missing = _curve_chart(results, version)
    versions = list(golden_set.versions.order_by("number").values_list("number", "k_first", "k_final", "label_count", "relevant_count", "query_count"))
    trend_first, trend_final = _trend_charts(golden_set, versions, colors)
    return ResultsReport(
        version=version, metrics=metrics, order=order, results=results, progress=progress,
        funnels=system_funnels(results, version, loss_limit_points=settings.alert_rerank_loss_points),
        slice_floor=settings.alert_slice_floor, slice_metric=slice_metric, slice_metrics=metrics,
        curve_chart=curve_chart, curves_missing=curves_missing,
        slice_chart=_slice_chart(results, version, slice_metric, settings.alert_slice_floor),
        trend_first=trend_first, trend_final=trend_final, loss_limit_points=settings.alert_rerank_loss_points,
        version_numbers=[number for number, *_ in reversed(versions)], judged_floor=settings.judged_floor,
    )


def _curve_chart(results: Sequence[RunResult], version: Version) -> tuple[charts.LineChart, list[str]]:
    series, missing = [], []
    for result in results:
        if not result.scored:
            continue
        curve = result.evaluation.recall_curve
        if not curve:
            missing.append(result.run.name)
            continue
        caveat = " (unreliable: see the warning above)" if result.unreliable else ""
        points = [(k, value, f"{result.run.name}: recall@{int(k)} = {value:.3f} on v{version.number}{caveat}") for k, value in curve]
        series.append(charts.Series(label=result.run.name + (" (unreliable)" if result.unreliable else ""), points=points, color=result.color))
    x_rules = [(version.k_final, f"k_final = {version.k_final}", "what the prompt sees", "cutoff")]
    chart = charts.line_chart(
        series, x_min=1, x_max=max(version.k_first, 2), x_ticks=charts.k_ticks(version.k_first),
        x_label=f"k (cut-off), 1 to k_first = {version.k_first}", y_label="mean recall@k",
        title=f"Recall@k on v{version.number}", x_rules=x_rules,
        y_rules=[(FIRST_STAGE_TARGET, f"{FIRST_STAGE_TARGET:.2f} first stage"), (FINAL_TARGET, f"{FINAL_TARGET:.2f} final")],
    )
    return chart, missing


def slice_label(name: str) -> str:
    """'query:lang=de' -> 'queries lang = de'; 'page:age=0-30d' -> 'pages age = 0-30d'."""
    kind, _, rest = name.partition(":")
    key, _, value = rest.partition("=")
    return f"{'queries' if kind == 'query' else 'pages'} {key} = {value}"


def _slice_chart(results: Sequence[RunResult], version: Version, metric: str, floor: float) -> charts.BarChart:
    scored = [r for r in results if r.scored]
    names = sorted({name for r in scored for name in r.slices}, key=lambda n: (natural_key(n), n))
    groups = []
    for name in names:
        bars = []
        for result in scored:
            found = result.slices.get(name, {}).get(metric)
            if found is None:
                bars.append((None, result.color, ""))
                continue
            value, averaged, no_relevant = found
            caveat = f"; {result.warning}" if result.unreliable else ""
            bars.append((value, result.color, (
                f"{result.run.name}, {slice_label(name)}: {metric} = {value:.3f} on v{version.number} "
                f"({averaged} queries averaged, {no_relevant} with no relevant page left out){caveat}"
            )))
        groups.append(charts.BarGroup(label=slice_label(name), bars=bars))
    return charts.bar_chart(
        groups, target=floor, target_label=f"{floor:.2f} slice floor", title=f"{metric} per slice on v{version.number}",
        x_label=f"{metric} on v{version.number}",
    )


def _trend_charts(golden_set: GoldenSet, versions: list[tuple], colors: dict[int, str]) -> tuple[charts.LineChart, charts.LineChart]:
    """recall@k_first and recall@k_final of every run on every version it was scored on,
    with a marker at each new version: a move across one is partly the labels' doing.
    `versions` are (number, k_first, k_final, labels, relevant labels, queries), oldest first."""
    rows = Score.objects.filter(
        evaluation__run__golden_set=golden_set, evaluation__status=Evaluation.Status.DONE, slice="", metric__startswith="recall@",
    ).values_list("evaluation__run_id", "evaluation__run__name", "evaluation__version__number", "metric", "value")
    k_of = {number: (k_first, k_final) for number, k_first, k_final, *_ in versions}
    first: dict[int, list] = defaultdict(list)
    final: dict[int, list] = defaultdict(list)
    names: dict[int, str] = {}
    for run_id, run_name, number, metric, value in rows:
        names[run_id] = run_name
        k_first, k_final = k_of[number]
        if metric == f"recall@{k_first}":
            first[run_id].append((number, value, f"{run_name}: {metric} = {value:.3f} on v{number}"))
        if metric == f"recall@{k_final}":
            final[run_id].append((number, value, f"{run_name}: {metric} = {value:.3f} on v{number}"))

    numbers = [number for number, *_ in versions]
    boundaries = []
    for (_, _, _, labels_before, relevant_before, queries_before), (number, _, _, labels, relevant, queries) in zip(versions, versions[1:]):
        tooltip = (
            f"v{number} was published: the labels changed ({labels_before} → {labels} labels, {relevant_before} → {relevant} "
            f"relevant, {queries_before} → {queries} queries)"
        )
        boundaries.append((number - 0.5, "labels changed" if len(numbers) <= 6 else "", tooltip, "boundary"))
    x_min, x_max = (numbers[0] - 0.3, numbers[-1] + 0.3) if numbers else (0, 1)
    ticks = [(number, f"v{number}") for number in numbers]

    def chart(points: dict[int, list], what: str) -> charts.LineChart:
        series = [
            charts.Series(label=names[run_id], points=sorted(found), color=colors.get(run_id, charts.color(i)), dots=True)
            for i, (run_id, found) in enumerate(sorted(points.items()))
        ]
        return charts.line_chart(series, x_min=x_min, x_max=x_max, x_ticks=ticks, x_label="version", y_label=f"mean {what}",
                                 title=f"{what} across versions", x_rules=boundaries, width=460, height=260)

    return chart(first, "recall@k_first"), chart(final, "recall@k_final")


# --- the cost calculator -------------------------------------------------------------------

@dataclass
class CalculatorReport:
    cost: RerankCost
    gains: list[RecallGain]
    version_number: int
    k_first: int


def calculator_report(version: Version, cost: RerankCost, results: Sequence[RunResult] | None = None) -> CalculatorReport:
    """The cost of raising the final k, and what each system's final run would gain by it
    (`results` are the version's run results when the caller has them already)."""
    if results is None:
        evaluations = (
            Evaluation.objects.filter(version=version, status=Evaluation.Status.DONE).select_related("run").defer("per_query")
        )
        results = [RunResult(run=e.run, evaluation=e, color="") for e in evaluations]
    gains = []
    for funnel in system_funnels(results, version, loss_limit_points=0.0):
        gains.append(RecallGain(
            system=funnel.system, run_name=funnel.final.run.name, version_number=version.number, from_k=cost.from_k,
            to_k=cost.to_k, recall_from=funnel.final.recall_at(cost.from_k), recall_to=funnel.final.recall_at(cost.to_k),
            monthly_cost=cost.monthly_cost,
        ))
    return CalculatorReport(cost=cost, gains=gains, version_number=version.number, k_first=version.k_first)


# --- significance ------------------------------------------------------------------------

def paired_p_value(a: np.ndarray, b: np.ndarray) -> float | None:
    """Two-sided paired t-test p-value of per-query values `a` and `b` (ranx's test), or
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
        p_value, _ = paired_student_t_test(a, b, SIGNIFICANCE_LEVEL)
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

    @property
    def warnings(self) -> list[tuple[str, str]]:
        """("a" or "b", warning) for each run whose scores on the version are unreliable."""
        found = []
        for side, completeness in (("a", self.completeness_a), ("b", self.completeness_b)):
            if completeness is not None and completeness.warning:
                found.append((side, completeness.warning))
        return found

    @property
    def ready(self) -> bool:
        done = Evaluation.Status.DONE
        return bool(self.evaluation_a and self.evaluation_b and self.evaluation_a.status == done and self.evaluation_b.status == done)

    @property
    def significance_level(self) -> float:
        return SIGNIFICANCE_LEVEL


def _paired(a: PerQuery, b: PerQuery, metric: str, keep: set[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' values of `metric` on the queries both averaged (and in `keep`), aligned."""
    position_b = {q: i for i, q in enumerate(b.query_ids)}
    rows_a, rows_b = [], []
    for i, query_id in enumerate(a.query_ids):
        j = position_b.get(query_id)
        if j is not None and (keep is None or query_id in keep):
            rows_a.append(i)
            rows_b.append(j)
    return a.values[metric][rows_a], b.values[metric][rows_b]


def _stored_scores(evaluations: Sequence[Evaluation]) -> dict[tuple[int, str, str], tuple[float, int, int]]:
    rows = Score.objects.filter(evaluation__in=evaluations).values_list(
        "evaluation_id", "slice", "metric", "value", "queries_averaged", "no_relevant_count"
    )
    return {(e, s, m): (v, n, nr) for e, s, m, v, n, nr in rows}


def _key_metrics(metrics: Sequence[str], version: Version) -> list[str]:
    """The few metrics shown per slice: the funnel's two recalls and nDCG@10, when scored."""
    wanted = [f"recall@{version.k_first}", f"recall@{version.k_final}", "ndcg@10"]
    chosen = [m for m in dict.fromkeys(wanted) if m in metrics]
    return chosen or list(metrics[:3])


def compare_report(version: Version, run_a: Run, run_b: Run) -> CompareReport:
    """Run b against run a on `version`: each metric's difference (b - a, from the stored
    scores) and its paired t-test over the per-query values, overall and per slice.

    Per-query values of a query slice are the overall ones of its queries; a page slice
    changes which pages count, so its per-query values are recomputed with the engine.
    """
    evaluations = {
        e.run_id: e for e in Evaluation.objects.filter(version=version, run__in=[run_a, run_b]).defer("per_query")
    }
    report = CompareReport(version=version, run_a=run_a, run_b=run_b, evaluation_a=evaluations.get(run_a.id),
                           evaluation_b=evaluations.get(run_b.id))
    if not report.ready:
        return report
    eval_a, eval_b = report.evaluation_a, report.evaluation_b
    completeness = _completeness_rows([eval_a, eval_b])
    settings = evaluation_settings(version.golden_set)
    slug = version.golden_set.slug
    report.completeness_a = run_completeness(completeness.get(eval_a.id, {}).get(""), run_a, version, settings, slug)
    report.completeness_b = run_completeness(completeness.get(eval_b.id, {}).get(""), run_b, version, settings, slug)
    per_a, per_b = evaluation_per_query(eval_a), evaluation_per_query(eval_b)
    metrics = [m for m in eval_a.metrics if m in eval_b.metrics and m in per_a.values and m in per_b.values]
    stored = _stored_scores([eval_a, eval_b])

    def stored_value(evaluation: Evaluation, slice_name: str, metric: str) -> float | None:
        found = stored.get((evaluation.id, slice_name, metric))
        return None if found is None else found[0]

    for metric in metrics:
        a, b = _paired(per_a, per_b, metric)
        report.overall.append(MetricDelta(metric=metric, a=stored_value(eval_a, "", metric), b=stored_value(eval_b, "", metric),
                                          p_value=paired_p_value(a, b), paired_queries=len(a)))

    report.slice_metrics = _key_metrics(metrics, version)
    slices = version_slices(version)
    unanswered_a = {q for q, answered in zip(per_a.query_ids, per_a.answered.tolist()) if not answered}
    unanswered_b = {q for q, answered in zip(per_b.query_ids, per_b.answered.tolist()) if not answered}
    for name, query_ids in slices.query.items():
        deltas = []
        for metric in report.slice_metrics:
            a, b = _paired(per_a, per_b, metric, keep=query_ids)
            deltas.append(MetricDelta(metric=metric, a=stored_value(eval_a, name, metric), b=stored_value(eval_b, name, metric),
                                      p_value=paired_p_value(a, b), paired_queries=len(a)))
        averaged = [q for q in per_a.query_ids if q in query_ids]
        report.slices.append(SliceComparison(
            name=name, label=slice_label(name), queries_averaged=len(averaged), no_relevant=len(query_ids) - len(averaged),
            unanswered_a=len(unanswered_a & query_ids), unanswered_b=len(unanswered_b & query_ids), deltas=deltas,
        ))
    if slices.page:
        qrels = engine.QrelsArrays.from_rows(version_labels(version), query_ids=version_query_ids(version))
        ranked_a, ranked_b = run_ranked(run_a), run_ranked(run_b)
        threshold = version.relevance_threshold
        for name, page_keys in slices.page.items():
            found_a = engine.evaluate_run(qrels, ranked_a, report.slice_metrics, relevance_threshold=threshold, page_slice=page_keys)
            found_b = engine.evaluate_run(qrels, ranked_b, report.slice_metrics, relevance_threshold=threshold, page_slice=page_keys)
            deltas = []
            for metric in report.slice_metrics:
                deltas.append(MetricDelta(
                    metric=metric,
                    a=stored_value(eval_a, name, metric) if found_a.query_count else None,
                    b=stored_value(eval_b, name, metric) if found_b.query_count else None,
                    p_value=paired_p_value(found_a.values[metric], found_b.values[metric]), paired_queries=found_a.query_count,
                ))
            report.slices.append(SliceComparison(
                name=name, label=slice_label(name), queries_averaged=found_a.query_count, no_relevant=found_a.no_relevant_count,
                unanswered_a=found_a.unanswered_count, unanswered_b=found_b.unanswered_count, deltas=deltas,
            ))
    return report


# --- one run across two versions -----------------------------------------------------------

@dataclass(frozen=True)
class MetricMove:
    """How one metric of an unchanged run moved between two versions, in points.

    `common_points` is the move over the queries averaged in both versions, so it comes
    from their labels alone; `query_set_points` is the rest: queries that entered or left
    the average (added, retired, or gaining or losing their last relevant page).
    """

    metric: str
    old: float
    new: float
    old_common: float | None
    new_common: float | None

    @property
    def total_points(self) -> float:
        return (self.new - self.old) * 100

    @property
    def common_points(self) -> float | None:
        if self.old_common is None or self.new_common is None:
            return None
        return (self.new_common - self.old_common) * 100

    @property
    def query_set_points(self) -> float | None:
        common = self.common_points
        return None if common is None else self.total_points - common


@dataclass(frozen=True)
class QueryMove:
    query_id: str
    old: float
    new: float

    @property
    def delta_points(self) -> float:
        """new - old, in points."""
        return (self.new - self.old) * 100


@dataclass
class VersionMoveReport:
    run: Run
    old: Version
    new: Version
    evaluation_old: Evaluation | None
    evaluation_new: Evaluation | None
    moves: list[MetricMove] = field(default_factory=list)
    only_old_metrics: list[str] = field(default_factory=list)
    only_new_metrics: list[str] = field(default_factory=list)
    common_queries: int = 0
    only_old_queries: int = 0
    only_new_queries: int = 0
    moved_metric: str = ""
    moved_queries: list[QueryMove] = field(default_factory=list)
    moved_query_count: int = 0
    diff: object = None  # goldenset.selectors.VersionDiff
    completeness_old: RunCompleteness | None = None
    completeness_new: RunCompleteness | None = None

    @property
    def warnings(self) -> list[str]:
        """The warning of each of the two versions on which the run's scores are unreliable."""
        return [c.warning for c in (self.completeness_old, self.completeness_new) if c is not None and c.warning]

    @property
    def ready(self) -> bool:
        done = Evaluation.Status.DONE
        return bool(self.evaluation_old and self.evaluation_new and self.evaluation_old.status == done and self.evaluation_new.status == done)


def run_versions_report(run: Run, old: Version, new: Version) -> VersionMoveReport:
    """How `run`'s scores moved from version `old` to version `new`. The run did not change,
    so every move is the labels' (and the query set's) doing; it is split into the part on
    queries averaged in both versions and the part from queries entering or leaving."""
    evaluations = {e.version_id: e for e in Evaluation.objects.filter(run=run, version__in=[old, new]).defer("per_query")}
    report = VersionMoveReport(run=run, old=old, new=new, evaluation_old=evaluations.get(old.id), evaluation_new=evaluations.get(new.id))
    report.diff = version_diff(old, new) if old.number < new.number else version_diff(new, old)
    if not report.ready:
        return report
    completeness = _completeness_rows([report.evaluation_old, report.evaluation_new])
    settings = evaluation_settings(run.golden_set)
    slug = run.golden_set.slug
    report.completeness_old = run_completeness(completeness.get(report.evaluation_old.id, {}).get(""), run, old, settings, slug)
    report.completeness_new = run_completeness(completeness.get(report.evaluation_new.id, {}).get(""), run, new, settings, slug)
    stored = _stored_scores([report.evaluation_old, report.evaluation_new])
    per_old, per_new = evaluation_per_query(report.evaluation_old), evaluation_per_query(report.evaluation_new)
    old_metrics, new_metrics = report.evaluation_old.metrics, report.evaluation_new.metrics
    report.only_old_metrics = [m for m in old_metrics if m not in new_metrics]
    report.only_new_metrics = [m for m in new_metrics if m not in old_metrics]
    common = set(per_old.query_ids) & set(per_new.query_ids)
    report.common_queries = len(common)
    report.only_old_queries = len(per_old.query_ids) - len(common)
    report.only_new_queries = len(per_new.query_ids) - len(common)
    for metric in old_metrics:
        if metric not in new_metrics:
            continue
        old_value = stored.get((report.evaluation_old.id, "", metric))
        new_value = stored.get((report.evaluation_new.id, "", metric))
        if old_value is None or new_value is None:
            continue
        a, b = _paired(per_old, per_new, metric)
        report.moves.append(MetricMove(
            metric=metric, old=old_value[0], new=new_value[0],
            old_common=float(a.mean()) if len(a) else None, new_common=float(b.mean()) if len(b) else None,
        ))

    common_metrics = [m.metric for m in report.moves]
    preferred = f"recall@{new.k_final}"
    report.moved_metric = preferred if preferred in common_metrics else (common_metrics[0] if common_metrics else "")
    if report.moved_metric:
        old_values = per_old.values[report.moved_metric]
        new_values = per_new.values[report.moved_metric]
        position = {q: i for i, q in enumerate(per_new.query_ids)}
        moved = [
            QueryMove(query_id=q, old=float(old_values[i]), new=float(new_values[position[q]]))
            for i, q in enumerate(per_old.query_ids)
            if q in position and old_values[i] != new_values[position[q]]
        ]
        moved.sort(key=lambda m: (-abs(m.new - m.old), natural_key(m.query_id), m.query_id))
        report.moved_query_count = len(moved)
        report.moved_queries = moved[:WORST_QUERY_COUNT]
    return report


# --- the runs list and one run ---------------------------------------------------------------

@dataclass
class RunRow:
    run: Run
    evaluation: Evaluation | None
    recall_first: float | None
    recall_final: float | None
    completeness: RunCompleteness | None = None


@dataclass
class RunsReport:
    rows: list[RunRow]
    latest: Version | None


def runs_report(golden_set: GoldenSet) -> RunsReport:
    """Every run of the set with its status, funnel recalls and Judged@k on the latest
    version: five queries however many runs."""
    latest = golden_set.versions.order_by("-number").first()
    runs = list(Run.objects.filter(golden_set=golden_set).select_related("uploaded_by").order_by("system", "stage", "name"))
    evaluations: dict[int, Evaluation] = {}
    scores: dict[tuple[int, str], float] = {}
    settings = None
    if latest is not None:
        names = [f"recall@{latest.k_first}", f"recall@{latest.k_final}"]
        overall = Completeness.objects.filter(evaluation=OuterRef("pk"), slice="")
        evaluations = {
            e.run_id: e for e in Evaluation.objects.filter(version=latest).defer("per_query", "recall_curve").annotate(
                judged_final=Subquery(overall.values("judged_at_k_final")[:1]),
                judged_first=Subquery(overall.values("judged_at_k_first")[:1]),
            )
        }
        found = Score.objects.filter(evaluation__version=latest, slice="", metric__in=names).values_list("evaluation__run_id", "metric", "value")
        scores = {(run_id, metric): value for run_id, metric, value in found}
        settings = evaluation_settings(golden_set)
    rows = []
    for run in runs:
        evaluation = evaluations.get(run.id)
        completeness = None
        if evaluation is not None and evaluation.status == Evaluation.Status.DONE:
            completeness = RunCompleteness(
                judged_final=evaluation.judged_final, judged_first=evaluation.judged_first, row=None, run_name=run.name,
                slug=golden_set.slug, version_number=latest.number, k_first=latest.k_first, k_final=latest.k_final,
                floor=settings.judged_floor, pool_depth=settings.completeness_depth,
            )
        rows.append(RunRow(
            run=run, evaluation=evaluation,
            recall_first=scores.get((run.id, f"recall@{latest.k_first}")) if latest else None,
            recall_final=scores.get((run.id, f"recall@{latest.k_final}")) if latest else None,
            completeness=completeness,
        ))
    return RunsReport(rows=rows, latest=latest)


@dataclass
class RunEvaluationRow:
    evaluation: Evaluation
    version: Version
    recall_first: float | None
    recall_final: float | None
    ndcg: float | None
    completeness: RunCompleteness | None = None

    @property
    def warning(self) -> str:
        done = self.evaluation.status == Evaluation.Status.DONE
        return self.completeness.warning if done and self.completeness is not None else ""


@dataclass(frozen=True)
class QueryScore:
    query_id: str
    value: float
    relevant: int
    answered: bool


@dataclass
class RunDetailReport:
    run: Run
    rows: list[RunEvaluationRow]
    worst_version: Version | None = None
    worst_metric: str = ""
    worst: list[QueryScore] = field(default_factory=list)
    worst_warning: str = ""  # the unreliable-scores warning of worst_version, if any

    @property
    def scored_versions(self) -> list[int]:
        """Numbers of the versions the run has figures on, newest first."""
        return [row.version.number for row in self.rows if row.evaluation.status == Evaluation.Status.DONE]

    @property
    def completeness_rows(self) -> list[RunEvaluationRow]:
        """The finished evaluations that have completeness figures, newest version first."""
        return [
            row for row in self.rows
            if row.evaluation.status == Evaluation.Status.DONE and row.completeness is not None and row.completeness.row is not None
        ]


def run_version_numbers(run: Run) -> list[int]:
    """Numbers of the versions `run` has figures on, newest first."""
    done = Evaluation.objects.filter(run=run, status=Evaluation.Status.DONE)
    return list(done.order_by("-version__number").values_list("version__number", flat=True))


def run_detail_report(run: Run) -> RunDetailReport:
    """The run's evaluations on every version, newest first, and its weakest queries on the
    newest version it was scored on."""
    evaluations = list(
        Evaluation.objects.filter(run=run).select_related("version").defer("per_query", "recall_curve").order_by("-version__number")
    )
    rows = Score.objects.filter(evaluation__run=run, slice="").values_list("evaluation_id", "metric", "value")
    scores: dict[tuple[int, str], float] = {(e, m): v for e, m, v in rows}
    completeness = _completeness_rows(evaluations)
    settings = evaluation_settings(run.golden_set)
    report = RunDetailReport(run=run, rows=[
        RunEvaluationRow(
            evaluation=e, version=e.version,
            recall_first=scores.get((e.id, f"recall@{e.version.k_first}")),
            recall_final=scores.get((e.id, f"recall@{e.version.k_final}")),
            ndcg=scores.get((e.id, "ndcg@10")),
            completeness=run_completeness(completeness.get(e.id, {}).get(""), run, e.version, settings, run.golden_set.slug),
        )
        for e in evaluations
    ])
    latest_done = next((e for e in evaluations if e.status == Evaluation.Status.DONE), None)
    if latest_done is not None:
        per_query = evaluation_per_query(latest_done)
        metric = f"recall@{latest_done.version.k_final}"
        if per_query is not None and metric not in per_query.values and per_query.values:
            metric = next(iter(per_query.values))
        if per_query is not None and metric in per_query.values:
            values = per_query.values[metric]
            order = sorted(range(len(values)), key=lambda i: (values[i], natural_key(per_query.query_ids[i]), per_query.query_ids[i]))
            report.worst_version, report.worst_metric = latest_done.version, metric
            report.worst_warning = next(row.warning for row in report.rows if row.evaluation.id == latest_done.id)
            report.worst = [
                QueryScore(query_id=per_query.query_ids[i], value=float(values[i]), relevant=int(per_query.relevant_counts[i]),
                           answered=bool(per_query.answered[i]))
                for i in order[:WORST_QUERY_COUNT]
            ]
    return report


# --- one query of one run --------------------------------------------------------------------

@dataclass(frozen=True)
class RankedPage:
    rank: int
    doc_id: str
    title: str
    url: str
    grade: int | None  # None: unjudged
    grade_label: str
    relevant: bool
    in_corpus: bool
    reaches_prompt: bool  # within k_final


@dataclass(frozen=True)
class MissedPage:
    doc_id: str
    title: str
    url: str
    grade: int
    grade_label: str
    rank: int | None  # where the run has it, deeper than k_first; None when it never retrieved it


@dataclass
class Drilldown:
    run: Run
    version: Version
    query: Query
    metadata: dict
    top: list[RankedPage]
    missed: list[MissedPage]
    relevant_count: int
    found_count: int
    found_in_final: int
    run_entries: int  # entries the run has for the query (up to its depth cap)
    values: list[tuple[str, float]]  # (metric, fraction) from the stored per-query values, if scored
    completeness: RunCompleteness | None = None  # the run's, over all queries of the version

    @property
    def recall_first(self) -> float | None:
        """The query's recall@k_first (a fraction); None when it has no relevant page."""
        return self.found_count / self.relevant_count if self.relevant_count else None

    @property
    def recall_final(self) -> float | None:
        """The query's recall@k_final (a fraction); None when it has no relevant page."""
        return self.found_in_final / self.relevant_count if self.relevant_count else None


def _linkable(url: str) -> str:
    """The page's URL if it is a web address, else "": an imported javascript: URL must not become a link."""
    return url if url.lower().startswith(("https://", "http://")) else ""


def query_drilldown(golden_set: GoldenSet, run: Run, version: Version, query_id: str) -> Drilldown:
    """The run's top k_first for one query with the version's grades, and the relevant pages
    it left out of them. Http404 when the query is not in the version."""
    query = Query.objects.filter(golden_set_id=run.golden_set_id, query_id=query_id).first()
    snapshot = VersionQuery.objects.filter(version=version, query=query).values_list("metadata", flat=True).first() if query else None
    if query is None or snapshot is None:
        raise Http404(f"query {query_id!r} is not in version {version.number}")

    labels = {
        page_id: grade for page_id, grade in VersionLabel.objects.filter(version=version, query=query).values_list("page_id", "grade")
    }
    threshold = version.relevance_threshold
    ranked = run_ranked(run)
    rows = ranked.rows(query_id)
    keys = ranked.doc_keys[rows].tolist()
    top_keys = keys[: version.k_first]
    relevant_keys = {key for key, grade in labels.items() if grade >= threshold}
    wanted = {key for key in top_keys if key > 0} | relevant_keys
    pages = {
        pk: (doc_id, title, _linkable(url))
        for pk, doc_id, title, url in Page.objects.filter(id__in=wanted).values_list("id", "doc_id", "title", "url")
    }

    top = []
    for rank, key in enumerate(top_keys, start=1):
        in_corpus = key > 0
        doc_id, title, url = pages[key] if in_corpus else (ranked.external_doc_ids[-key - 1], "", "")
        grade = labels.get(key)
        top.append(RankedPage(
            rank=rank, doc_id=doc_id, title=title, url=url, grade=grade,
            grade_label=golden_set.grade_label(grade) if grade is not None else "unjudged",
            relevant=grade is not None and grade >= threshold, in_corpus=in_corpus, reaches_prompt=rank <= version.k_final,
        ))
    rank_of = {key: rank for rank, key in enumerate(keys, start=1)}
    in_top = set(top_keys)
    missed = [
        MissedPage(doc_id=pages[key][0], title=pages[key][1], url=pages[key][2], grade=labels[key],
                   grade_label=golden_set.grade_label(labels[key]), rank=rank_of.get(key))
        for key in relevant_keys
        if key not in in_top
    ]
    missed.sort(key=lambda m: (-m.grade, m.rank is None, m.rank or 0, natural_key(m.doc_id), m.doc_id))

    values: list[tuple[str, float]] = []
    evaluation = Evaluation.objects.filter(run=run, version=version, status=Evaluation.Status.DONE).only("id").first()
    per_query = evaluation_per_query(evaluation) if evaluation else None
    completeness = None
    if evaluation is not None:
        row = _completeness_rows([evaluation]).get(evaluation.id, {}).get("")
        completeness = run_completeness(row, run, version, evaluation_settings(golden_set), golden_set.slug)
    if per_query is not None and query_id in per_query.query_ids:
        i = per_query.query_ids.index(query_id)
        values = [(metric, float(array[i])) for metric, array in per_query.values.items()]
    found = sum(1 for page in top if page.relevant)
    return Drilldown(
        run=run, version=version, query=query, metadata=snapshot, top=top, missed=missed, relevant_count=len(relevant_keys),
        found_count=found, found_in_final=sum(1 for page in top if page.relevant and page.reaches_prompt),
        run_entries=len(keys), values=values, completeness=completeness,
    )
