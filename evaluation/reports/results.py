"""The results page of one version: every run's scores best first, each system's funnel,
the recall curves, the slices and the trend across versions; and the progress of a
recompute, which the page polls."""

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db.models import Count

from evaluation.alerts.slice_power import SlicePower, slice_powers
from evaluation.models import Evaluation, EvaluationSettings, Run, Score
from evaluation.reports.completeness import RunCompleteness, completeness_rows, run_completeness
from evaluation.reports.targets import FINAL_TARGET, FIRST_STAGE_TARGET, Diagnosis, funnel_diagnosis
from evaluation.reports.unreliable import UNRELIABLE_MARK, UnreliableSummary, unreliable_summary
from evaluation.selectors import evaluation_settings, later_night, run_not_archived, slice_label
from goldenset.models import GoldenSet, Version
from lib import charts
from lib.ids import natural_key

# --- progress of a recompute ----------------------------------------------------------


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
        version_number=version.number,
        done=counts[status.DONE],
        running=counts[status.RUNNING],
        pending=counts[status.PENDING],
        failed=counts[status.FAILED],
    )


# --- the runs' scores and the systems' funnels ----------------------------------------


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
    # slice name ("" overall) -> what its drop test detects (evaluation.alerts.selectors.slice_power)
    power: dict[str, SlicePower] = field(default_factory=dict)

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
        return funnel_diagnosis(
            self.recall_first, self.recall_final, k_first=self.k_first, k_final=self.k_final, loss_limit_points=self.loss_limit_points
        )

    @property
    def hops_first(self) -> dict | None:
        """The first stage's hop figures at k_first over all queries (evaluation.hops), for
        a version whose labels carry hops: {"k", "per_hop_recall", "all_hops", "missing_hop",
        "queries"}; None otherwise."""
        return _hops_at(self.first.evaluation, self.k_first)

    @property
    def hops_final(self) -> dict | None:
        return _hops_at(self.final.evaluation, self.k_final)

    @property
    def first_width(self) -> float:
        """Bar widths for the funnel drawing, in percent."""
        return round((self.recall_first or 0) * 100, 1)

    @property
    def final_width(self) -> float:
        return round((self.recall_final or 0) * 100, 1)


def _hops_at(evaluation: Evaluation, k: int) -> dict | None:
    overall = (evaluation.hop_figures or {}).get("slices", {}).get("")
    if not overall:
        return None
    at = next((figures for figures in overall["at"] if figures["k"] == k), None)
    return None if at is None else {**at, "queries": overall["queries"]}


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
    for system in sorted(by_system, key=natural_key):
        runs = by_system[system]
        first = _latest(r for r in runs if r.run.stage == Run.Stage.FIRST_STAGE) or _latest(
            r for r in runs if r.run.stage == Run.Stage.OTHER
        )
        if first is None:
            continue
        final = _latest(r for r in runs if r.run.stage == Run.Stage.RERANKED)
        funnels.append(
            Funnel(
                system=system,
                first=first,
                final=final or first,
                version_number=version.number,
                k_first=version.k_first,
                k_final=version.k_final,
                loss_limit_points=loss_limit_points,
                single_stage=final is None,
            )
        )
    return funnels


# --- the results page -----------------------------------------------------------------


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
    # The drop test's settings, for the slices' detectable drops (evaluation.alerts.noise).
    drop_points: float = 3.0
    alert_alpha: float = 0.05
    alert_power: float = 0.8

    @property
    def scored(self) -> list[RunResult]:
        return [r for r in self.results if r.scored]

    @property
    def unreliable(self) -> list[RunResult]:
        return [r for r in self.results if r.unreliable]

    @property
    def unreliable_summary(self) -> UnreliableSummary:
        """The page's one warning about the scored runs under the floor, per series."""
        return unreliable_summary((r.run, r.completeness) for r in self.scored)

    @property
    def power_slices(self) -> list[tuple[str, list[SlicePower | None]]]:
        """(slice label, what the drop test detects for each scored run) for every slice
        some scored run has it for, overall first; runs in `scored` order, None where absent."""
        scored = self.scored
        names = sorted({name for r in scored for name in r.power}, key=lambda name: (name != "", natural_key(name)))
        return [(slice_label(name) if name else "overall", [r.power.get(name) for r in scored]) for name in names]

    @property
    def power_paired(self) -> bool:
        """True when every figure of power_slices comes from two nights' paired differences."""
        return all(p.paired for r in self.scored for p in r.power.values())

    @property
    def judged_slices(self) -> list[tuple[str, list[float | None]]]:
        """(slice label, Judged@k_final of each scored run, a fraction) for every query slice
        some scored run has the figure on; runs in `scored` order, None where absent."""
        scored = self.scored
        names = {name for r in scored for name in r.slice_judged}
        return [(slice_label(name), [r.slice_judged.get(name) for r in scored]) for name in sorted(names, key=natural_key)]


def _run_results(version: Version, *, settings: EvaluationSettings, slug: str) -> list[RunResult]:
    """Every evaluation of the version with its scores and completeness figures (Judged@k
    under the settings' floor marks a run unreliable): three queries however many runs and slices."""
    evaluations = (
        # Archived runs keep their scores but leave the leaderboard (the runs page lists them).
        Evaluation.objects.filter(run_not_archived("run__"), version=version)
        .exclude(later_night("run__"))
        .select_related("run__series", "run__chunking")
        .defer("per_query")
        .order_by("run_id")
    )
    results = {e.id: RunResult(run=e.run, evaluation=e, color=charts.color(i)) for i, e in enumerate(evaluations)}
    found = completeness_rows([result.evaluation for result in results.values()], overall_only=False)
    for evaluation_id, result in results.items():
        by_slice = found.get(evaluation_id, {})
        result.completeness = run_completeness(by_slice.get(""), result.run, version, settings, slug)
        result.slice_judged = {name: row.judged_at_k_final for name, row in by_slice.items() if name}
    rows = Score.objects.filter(evaluation_id__in=list(results)).values_list(
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
    results.sort(key=lambda r: (not r.scored, -(r.scores.get(order, -1.0)), natural_key(r.run.name)))
    for result in results:
        result.cells = [Cell(metric=m, value=result.scores.get(m)) for m in metrics]
        result.evaluation.version = version  # the one in hand: no query per run for it
    powers = slice_powers([r.evaluation for r in results], settings=settings)
    for result in results:
        result.power = powers.get(result.evaluation.pk, {})

    recall_metrics = [m for m in metrics if m.startswith("recall@")]
    default_slice = f"recall@{version.k_first}"
    slice_metric = (
        slice_metric if slice_metric in metrics else (default_slice if default_slice in metrics else (recall_metrics or metrics or [""])[0])
    )
    progress = _progress_from(version, Counter(r.evaluation.status for r in results))
    colors = {r.run.id: r.color for r in results}
    curve_chart, curves_missing = _curve_chart(results, version)
    versions = list(
        golden_set.versions.order_by("number").values_list("number", "k_first", "k_final", "label_count", "relevant_count", "query_count")
    )
    trend_first, trend_final = _trend_charts(golden_set, versions, colors)
    return ResultsReport(
        version=version,
        metrics=metrics,
        order=order,
        results=results,
        progress=progress,
        funnels=system_funnels(results, version, loss_limit_points=settings.alert_rerank_loss_points),
        slice_floor=settings.alert_slice_floor,
        slice_metric=slice_metric,
        slice_metrics=metrics,
        curve_chart=curve_chart,
        curves_missing=curves_missing,
        slice_chart=_slice_chart(results, version, slice_metric, settings.alert_slice_floor),
        trend_first=trend_first,
        trend_final=trend_final,
        loss_limit_points=settings.alert_rerank_loss_points,
        version_numbers=[number for number, *_ in reversed(versions)],
        judged_floor=settings.judged_floor,
        drop_points=settings.alert_drop_points,
        alert_alpha=settings.alert_alpha,
        alert_power=settings.alert_power,
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
        # The legend carries the mark alone; the page's legend line says what it means once.
        caveat = f" {UNRELIABLE_MARK} {result.completeness.finding}" if result.unreliable else ""
        points = [(k, value, f"{result.run.name}: recall@{int(k)} = {value:.3f} on v{version.number}{caveat}") for k, value in curve]
        series.append(
            charts.Series(label=result.run.name + (f" {UNRELIABLE_MARK}" if result.unreliable else ""), points=points, color=result.color)
        )
    x_rules = [(version.k_final, f"k_final = {version.k_final}", "what the prompt sees", "cutoff")]
    chart = charts.line_chart(
        series,
        x_min=1,
        x_max=max(version.k_first, 2),
        x_ticks=charts.k_ticks(version.k_first),
        x_label=f"k (cut-off), 1 to k_first = {version.k_first}",
        y_label="mean recall@k",
        title=f"Recall@k on v{version.number}",
        x_rules=x_rules,
        y_rules=[(FIRST_STAGE_TARGET, f"{FIRST_STAGE_TARGET:.2f} first stage"), (FINAL_TARGET, f"{FINAL_TARGET:.2f} final")],
    )
    return chart, missing


def _slice_chart(results: Sequence[RunResult], version: Version, metric: str, floor: float) -> charts.BarChart:
    scored = [r for r in results if r.scored]
    names = sorted({name for r in scored for name in r.slices}, key=natural_key)
    groups = []
    for name in names:
        bars = []
        for result in scored:
            found = result.slices.get(name, {}).get(metric)
            if found is None:
                bars.append((None, result.color, ""))
                continue
            value, averaged, no_relevant = found
            caveat = f"; {UNRELIABLE_MARK} {result.completeness.finding}" if result.unreliable else ""
            bars.append(
                (
                    value,
                    result.color,
                    (
                        f"{result.run.name}, {slice_label(name)}: {metric} = {value:.3f} on v{version.number} "
                        f"({averaged} queries averaged, {no_relevant} with no relevant page left out){caveat}"
                    ),
                )
            )
        groups.append(charts.BarGroup(label=slice_label(name), bars=bars))
    return charts.bar_chart(
        groups,
        target=floor,
        target_label=f"{floor:.2f} slice floor",
        title=f"{metric} per slice on v{version.number}",
        x_label=f"{metric} on v{version.number}",
    )


def _trend_charts(golden_set: GoldenSet, versions: list[tuple], colors: dict[int, str]) -> tuple[charts.LineChart, charts.LineChart]:
    """recall@k_first and recall@k_final of every run on every version it was scored on,
    with a marker at each new version: a move across one is partly the labels' doing.
    `versions` are (number, k_first, k_final, labels, relevant labels, queries), oldest first."""
    rows = (
        Score.objects.filter(
            run_not_archived("evaluation__run__"),
            evaluation__run__golden_set=golden_set,
            evaluation__status=Evaluation.Status.DONE,
            slice="",
            metric__startswith="recall@",
        )
        .exclude(evaluation__run__in=Run.objects.filter(later_night()))
        .values_list("evaluation__run_id", "evaluation__run__name", "evaluation__version__number", "metric", "value")
    )
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
        return charts.line_chart(
            series,
            x_min=x_min,
            x_max=x_max,
            x_ticks=ticks,
            x_label="version",
            y_label=f"mean {what}",
            title=f"{what} across versions",
            x_rules=boundaries,
            width=460,
            height=260,
        )

    return chart(first, "recall@k_first"), chart(final, "recall@k_final")
