"""Reads of the monitoring page and API: each series' nights, rerank loss, canary strips.

A night's figure is its score on the newest version it was scored on: a publish re-scores
a series' recent nights (evaluation.services.series_runs_past_rescoring), older nights keep
the scores of the versions they were scored on, so the trend marks where the version
changes under it. recall@k is at that version's k_first and k_final. Every figure is a
fraction; rerank loss is in points (hundredths).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from evaluation.alerts.rules import run_is_failing
from evaluation.alerts.slice_power import SlicePower, slice_powers
from evaluation.canaries import canaries_in_version
from evaluation.models import Alert, Canary, Evaluation, EvaluationSettings, Run, Score, Series
from evaluation.reports.unreliable import UnreliableSummary, golden_set_unreliable_summary, unreliable_summary
from evaluation.selectors import evaluation_settings
from goldenset.models import GoldenSet, Version
from lib.ids import natural_key
from monitoring.models import Endpoint, NightlyRun, Probe, ProbeRound
from monitoring.nightly.selectors import latest_nights
from monitoring.schedules import next_probe_at, next_run_at

NIGHTS_SHOWN = 60
ROUNDS_SHOWN = 48  # four hours of five-minute probes


@dataclass
class Night:
    """One run of a series with its figures on the newest version it was scored on."""

    run: Run
    version_number: int | None
    k_first: int | None
    k_final: int | None
    recall_first: float | None
    recall_final: float | None
    failing: bool
    slices: dict[str, float] = field(default_factory=dict)  # the slice asked for, by metric name
    nightly: NightlyRun | None = None
    evaluation: Evaluation | None = None  # the one its figures come from

    @property
    def measured_at(self) -> datetime:
        return self.run.measured_at


@dataclass
class SeriesTrend:
    series: Series
    endpoint: Endpoint | None
    system: str
    stage: str
    nights: list[Night]
    last_night: NightlyRun | None
    running: NightlyRun | None
    next_run_at: datetime | None
    next_probe_at: datetime | None
    # What each slice's drop test detects, on the latest healthy night (evaluation.alerts.selectors).
    power: list[SlicePower] = field(default_factory=list)

    @property
    def latest(self) -> Night | None:
        return self.nights[-1] if self.nights else None

    @property
    def version_changes(self) -> list[tuple[Night, int]]:
        """(first night scored on it, version number) where the version changes along the trend."""
        changes, previous = [], None
        for night in self.nights:
            if night.version_number is not None and night.version_number != previous:
                if previous is not None:
                    changes.append((night, night.version_number))
                previous = night.version_number
        return changes


@dataclass
class RerankNight:
    measured_at: datetime
    version_number: int
    recall_first: float
    recall_final: float

    @property
    def loss_points(self) -> float:
        return (self.recall_first - self.recall_final) * 100


@dataclass
class CanaryStrip:
    """The last probe rounds of one endpoint: per canary, found (True), missed (False) or not probed (None)."""

    endpoint: Endpoint
    canaries: list[Canary]
    rounds: list[ProbeRound]
    cells: dict[int, list[Probe | None]]  # canary id -> one cell per round, oldest first

    @property
    def latest_missed(self) -> int:
        return self.rounds[-1].missed if self.rounds else 0


@dataclass
class MonitoringReport:
    golden_set: GoldenSet
    version: Version | None
    series: list[SeriesTrend]
    rerank: dict[str, list[RerankNight]]  # system -> nights with both stages measured
    strips: list[CanaryStrip]
    open_alerts: list[Alert]
    recent_alerts: list[Alert]  # raised on the week's nights (_recent_night_alerts)
    slice_name: str
    slice_choices: list[str]
    alert_drop_points: float
    alert_slice_floor: float
    alert_rerank_loss_points: float
    recent_nights: int = 7  # how many of each series' latest nights recent_alerts covers
    # The nights shown whose Judged@k on the latest version is under the floor, said once per series.
    unreliable: UnreliableSummary = field(default_factory=lambda: unreliable_summary(()))
    alert_alpha: float = 0.05  # the drop test's significance and power (evaluation.alerts.noise)
    alert_power: float = 0.8


def _chosen_evaluations(run_ids: list[int]) -> dict[int, Evaluation]:
    """run id -> its done evaluation on the newest version it has one on."""
    chosen: dict[int, Evaluation] = {}
    rows = (
        Evaluation.objects.filter(run_id__in=run_ids, status=Evaluation.Status.DONE)
        .select_related("version")
        .order_by("run_id", "-version__number")
    )
    for evaluation in rows:
        chosen.setdefault(evaluation.run_id, evaluation)
    return chosen


def series_nights(series: Series, *, slice_name: str = "", limit: int = NIGHTS_SHOWN) -> list[Night]:
    """The last `limit` nights of `series`, oldest first, with their figures (3 queries)."""
    return _nights_of([series], slice_name=slice_name, limit=limit)[series.pk]


def series_latest_nights(all_series: list[Series]) -> dict[int, Night | None]:
    """series id -> its latest night with its figures, None for a series without runs; a
    few queries however many series (the API's list of series)."""
    return {pk: (nights[-1] if nights else None) for pk, nights in _nights_of(all_series, slice_name="", limit=1).items()}


def _nights_of(all_series: list[Series], *, slice_name: str, limit: int) -> dict[int, list[Night]]:
    runs_of: dict[int, list[Run]] = {series.pk: [] for series in all_series}
    # The last `limit` runs of every series in one query (a row number per series), not one a series.
    newest_first = (F("measured_at").desc(), F("id").desc())
    latest = (
        Run.objects.filter(series__in=[series.pk for series in all_series])
        .select_related("golden_set")
        .annotate(night_number=Window(RowNumber(), partition_by=[F("series_id")], order_by=newest_first))
        .filter(night_number__lte=limit)
        .order_by("series_id", "measured_at", "id")
    )
    for run in latest:
        runs_of[run.series_id].append(run)
    run_ids = [run.pk for runs in runs_of.values() for run in runs]
    chosen = _chosen_evaluations(run_ids)
    slices = {"", slice_name}
    scores: dict[int, dict[tuple[str, str], float]] = defaultdict(dict)
    for evaluation_id, metric, name, value in Score.objects.filter(
        evaluation_id__in=[e.pk for e in chosen.values()], slice__in=slices
    ).values_list("evaluation_id", "metric", "slice", "value"):
        scores[evaluation_id][(metric, name)] = value
    nightly = {n.run_id: n for n in NightlyRun.objects.filter(run_id__in=run_ids)}
    result: dict[int, list[Night]] = {}
    settings_of: dict[int, EvaluationSettings] = {}
    for series in all_series:
        nights = []
        if runs_of[series.pk] and series.golden_set_id not in settings_of:
            settings_of[series.golden_set_id] = evaluation_settings(series.golden_set)
        settings = settings_of.get(series.golden_set_id)
        for run in runs_of[series.pk]:
            evaluation = chosen.get(run.pk)
            version = evaluation.version if evaluation else None
            figures = scores.get(evaluation.pk, {}) if evaluation else {}
            first = f"recall@{version.k_first}" if version else None
            final = f"recall@{version.k_final}" if version else None
            nights.append(
                Night(
                    run=run,
                    version_number=version.number if version else None,
                    k_first=version.k_first if version else None,
                    k_final=version.k_final if version else None,
                    recall_first=figures.get((first, "")),
                    recall_final=figures.get((final, "")),
                    failing=run_is_failing(run, settings),
                    slices={metric: value for (metric, name), value in figures.items() if slice_name and name == slice_name},
                    nightly=nightly.get(run.pk),
                    evaluation=evaluation,
                )
            )
        result[series.pk] = nights
    return result


def _rerank(trends: list[SeriesTrend]) -> dict[str, list[RerankNight]]:
    """Per system, the nights on which both a first-stage and a reranked series were measured
    and scored on one version: recall@k_first of the first minus recall@k_final of the other."""
    by_system: dict[str, dict[str, dict[datetime, Night]]] = defaultdict(lambda: defaultdict(dict))
    for trend in trends:
        for night in trend.nights:
            by_system[trend.system][trend.stage][night.measured_at] = night
    result = {}
    for system, stages in by_system.items():
        firsts, finals = stages.get(Run.Stage.FIRST_STAGE, {}), stages.get(Run.Stage.RERANKED, {})
        nights = []
        for moment in sorted(set(firsts) & set(finals)):
            first, final = firsts[moment], finals[moment]
            if (
                first.version_number is not None
                and first.version_number == final.version_number
                and first.recall_first is not None
                and final.recall_final is not None
            ):
                nights.append(RerankNight(moment, first.version_number, first.recall_first, final.recall_final))
        if nights:
            result[system] = nights
    return result


def canary_strip(endpoint: Endpoint, canaries: list[Canary], *, limit: int = ROUNDS_SHOWN) -> CanaryStrip:
    return canary_strips([endpoint], canaries, limit=limit)[0]


def canary_strips(endpoints: list[Endpoint], canaries: list[Canary], *, limit: int = ROUNDS_SHOWN) -> list[CanaryStrip]:
    """The strip of each of `endpoints`, in their order: two queries however many endpoints."""
    rounds_of: dict[int, list[ProbeRound]] = {endpoint.pk: [] for endpoint in endpoints}
    latest = (
        ProbeRound.objects.filter(endpoint__in=[endpoint.pk for endpoint in endpoints])
        .exclude(finished_at=None)
        .annotate(round_number=Window(RowNumber(), partition_by=[F("endpoint_id")], order_by=F("slot").desc()))
        .filter(round_number__lte=limit)
        .order_by("endpoint_id", "slot")
    )
    for probe_round in latest:
        rounds_of[probe_round.endpoint_id].append(probe_round)
    round_ids = [r.pk for rounds in rounds_of.values() for r in rounds]
    by_pair = {(p.canary_id, p.round_id): p for p in Probe.objects.filter(round_id__in=round_ids).select_related("round")}
    strips = []
    for endpoint in endpoints:
        rounds = rounds_of[endpoint.pk]
        cells = {c.pk: [by_pair.get((c.pk, r.pk)) for r in rounds] for c in canaries}
        strips.append(CanaryStrip(endpoint=endpoint, canaries=canaries, rounds=rounds, cells=cells))
    return strips


def slice_names(golden_set: GoldenSet, version: Version | None) -> list[str]:
    """The slices the set's series runs have scores for on `version`, for the page's chooser."""
    if version is None:
        return []
    return list(
        Score.objects.filter(evaluation__version=version, evaluation__run__golden_set=golden_set, evaluation__run__series__isnull=False)
        .exclude(slice="")
        .values_list("slice", flat=True)
        .distinct()
        .order_by("slice")
    )


RECENT_NIGHTS = MonitoringReport.recent_nights  # the nights the alerts compare a night with: a week


def _recent_night_alerts(trends: list[SeriesTrend]) -> list[Alert]:
    """The alerts raised on each series' last RECENT_NIGHTS nights, each on the version the
    night is shown on (the drops, the slices under the floor, the rerank loss): what the
    week's nights are about, in one query; newest night first, then the overall figures
    before the slices' and drops before floors."""
    shown = {night.run.pk: night.version_number for trend in trends for night in trend.nights[-RECENT_NIGHTS:]}
    if not shown:
        return []
    alerts = (
        Alert.objects.filter(run_id__in=shown)
        .select_related("version", "run__series")
        .order_by("-run__measured_at", "kind", "slice", "metric", "id")
    )
    order = [Alert.Kind.DROP_VS_PREVIOUS_NIGHT, Alert.Kind.DROP_VS_MEDIAN, Alert.Kind.SLICE_UNDER_FLOOR, Alert.Kind.RERANK_LOSS]
    kept = [alert for alert in alerts if alert.version.number == shown[alert.run_id]]
    kept.sort(
        key=lambda alert: (
            -alert.run.measured_at.timestamp(),
            alert.slice != "",
            alert.slice,
            order.index(alert.kind) if alert.kind in order else len(order),
            alert.run.series.name,
            alert.metric,
        )
    )
    return kept


def _powers(trends: list[SeriesTrend], settings: EvaluationSettings) -> None:
    """Set each trend's `power`: slice_powers of its latest healthy night, paired with the
    healthy night before it on the same version (both among the nights in hand, so the
    page's queries do not grow with its series); overall first, then slices by name."""
    latest, previous = {}, {}
    for trend in trends:
        healthy = [night for night in trend.nights if night.evaluation is not None and not night.failing]
        if not healthy:
            continue
        night = healthy[-1]
        night.evaluation.run = night.run  # in hand: no query for it
        latest[trend.series.pk] = night.evaluation
        same_version = [n for n in healthy[:-1] if n.evaluation.version_id == night.evaluation.version_id]
        previous[night.evaluation.pk] = same_version[-1].evaluation if same_version else None
    found = slice_powers(list(latest.values()), settings=settings, previous=previous)
    for trend in trends:
        evaluation = latest.get(trend.series.pk)
        powers = found.get(evaluation.pk, {}) if evaluation is not None else {}
        trend.power = [powers[name] for name in sorted(powers, key=lambda name: (name != "", natural_key(name)))]


def monitoring_report(golden_set: GoldenSet, *, slice_name: str = "", limit: int = NIGHTS_SHOWN) -> MonitoringReport:
    """Everything the monitoring page shows; query count independent of the number of nights."""
    now = timezone.now()
    version = Version.objects.filter(golden_set=golden_set).order_by("-number").first()
    all_series = list(Series.objects.filter(golden_set=golden_set).select_related("golden_set").order_by("name"))
    endpoints = {e.series_id: e for e in Endpoint.objects.filter(golden_set=golden_set).select_related("series")}
    nights = _nights_of(all_series, slice_name=slice_name, limit=limit)
    latest = latest_nights(endpoint.pk for endpoint in endpoints.values())
    trends = []
    for series in all_series:
        endpoint = endpoints.get(series.pk)
        series_nights_ = nights[series.pk]
        sample = series_nights_[-1].run if series_nights_ else None
        if endpoint is None and sample is None:
            continue
        trends.append(
            SeriesTrend(
                series=series,
                endpoint=endpoint,
                system=endpoint.system if endpoint else sample.system,
                stage=endpoint.stage if endpoint else sample.stage,
                nights=series_nights_,
                last_night=latest[endpoint.pk].last if endpoint else None,
                running=latest[endpoint.pk].running if endpoint else None,
                next_run_at=next_run_at(endpoint, now) if endpoint else None,
                next_probe_at=next_probe_at(endpoint, now) if endpoint else None,
            )
        )
    canaries = []
    if version is not None:
        canaries = canaries_in_version(version)
    strips = canary_strips(
        [endpoint for endpoint in sorted(endpoints.values(), key=lambda e: e.name) if endpoint.stage == Endpoint.Stage.FIRST_STAGE],
        canaries,
    )
    open_alerts = list(
        Alert.objects.filter(golden_set=golden_set, kind__in=[Alert.Kind.PROBE_MISSED, Alert.Kind.ENDPOINT_FAILING], resolved_at=None)
        .select_related("version", "run", "canary__query", "canary__page")
        .order_by("-created_at")[:20]
    )
    settings = evaluation_settings(golden_set)
    _powers(trends, settings)
    return MonitoringReport(
        golden_set=golden_set,
        version=version,
        series=trends,
        rerank=_rerank(trends),
        strips=strips,
        open_alerts=open_alerts,
        recent_alerts=_recent_night_alerts(trends),
        slice_name=slice_name,
        slice_choices=slice_names(golden_set, version),
        alert_drop_points=settings.alert_drop_points,
        alert_slice_floor=settings.alert_slice_floor,
        alert_rerank_loss_points=settings.alert_rerank_loss_points,
        unreliable=golden_set_unreliable_summary(golden_set, run_ids=[n.run.pk for trend in trends for n in trend.nights]),
        alert_alpha=settings.alert_alpha,
        alert_power=settings.alert_power,
    )
