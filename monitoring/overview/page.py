"""What the monitoring page draws from a MonitoringReport: charts, the latest night's row,
the canary grids and the slice chooser. Geometry and labels only, no markup and no query
(the report's reads are in monitoring.overview.selectors), so the page's query count stays
the report's.

Every figure of a chart is a fraction on the y axis except rerank loss, which is in points
(hundredths) and is scaled into the chart's [0, 1] with ticks labelled in points.
"""

import math
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from evaluation.models import Alert, Canary
from lib import charts
from lib.ids import natural_key
from monitoring.models import Endpoint, NightlyRun, Probe, ProbeRound
from monitoring.overview.selectors import CanaryStrip, MonitoringReport, Night, RerankNight, SeriesTrend

AGE_SLICE_PREFIX = "page:age="
# About this many dates under a trend; more would overlap at 390 px.
NIGHT_TICKS = 6
# One time label over every this many probe rounds (30 minutes of five-minute probes).
ROUND_LABEL_EVERY = 6

FIRST_COLOR, FINAL_COLOR = charts.color(0), charts.color(2)


def _local(moment: datetime) -> datetime:
    return timezone.localtime(moment)


def _night_label(moment: datetime) -> str:
    return _local(moment).strftime("%m-%d")


def _night_ticks(moments: list[datetime]) -> list[tuple[float, str]]:
    if not moments:
        return []
    every = max(1, math.ceil(len(moments) / NIGHT_TICKS))
    picked = list(range(0, len(moments), every))
    if picked[-1] != len(moments) - 1 and len(moments) - 1 - picked[-1] >= every / 2:
        picked.append(len(moments) - 1)
    return [(i, _night_label(moments[i])) for i in picked]


@dataclass(frozen=True)
class SeriesPanel:
    """One series on the page: its trend chart and what its latest night measured."""

    trend: SeriesTrend
    chart: charts.LineChart
    slice_missing: bool  # a slice was asked for and no night shown has a score for it

    @property
    def latest(self) -> Night | None:
        return self.trend.latest

    @property
    def anchor(self) -> str:
        return f"series-{self.trend.series.pk}"

    @property
    def failing_nights(self) -> list[Night]:
        return [night for night in self.trend.nights if night.failing]

    @property
    def progress(self) -> NightlyRun | None:
        return self.trend.running

    @property
    def asked(self) -> int:
        """Queries the latest night asked: those answered and those that failed."""
        run = self.latest.run if self.latest else None
        return run.query_count + run.failed_query_count if run else 0

    @property
    def failed_percent(self) -> float:
        return self.latest.run.failed_share * 100 if self.latest else 0.0


def recall_axis(values: list[float]) -> tuple[float, list[tuple[float, str]]]:
    """(bottom, ticks) of a recall axis that ends at 1.0 and starts a little under the
    lowest value, so that a 3-point drop between nights shows; 0 when a value is under 0.3.
    Ticks are (fraction of the axis, label)."""
    low = min(values, default=0.0)
    bottom = 0.0 if low < 0.3 else math.floor((low - 0.05) * 10) / 10
    span = 1.0 - bottom
    step = 0.05 if span <= 0.3 else 0.1 if span <= 0.6 else 0.2
    ticks, value = [], bottom
    while value <= 1.0 + 1e-9:
        ticks.append(((value - bottom) / span, f"{value:.2f}" if step < 0.1 else f"{value:.1f}"))
        value = round(value + step, 4)
    return bottom, ticks


def series_chart(trend: SeriesTrend, *, slice_name: str, slice_floor: float) -> tuple[charts.LineChart, bool]:
    """recall per night (x = the night's place, oldest first): recall@k_first and
    recall@k_final of a first stage, recall@k_final of a reranked one (asked k_final deep,
    its recall@k_first is the same number); the chosen slice's figures dashed beside them
    against the slice floor; a mark where the version changes and one on each failing night.
    The y axis starts under the lowest figure (recall_axis) and says so."""
    nights = trend.nights
    latest = trend.latest
    k_first = latest.k_first if latest else None
    k_final = latest.k_final if latest else None

    def points(value_of, metric_of) -> list[tuple[float, float, str]]:
        found = []
        for i, night in enumerate(nights):
            value = value_of(night)
            if value is None:
                continue
            when = _local(night.measured_at).strftime("%Y-%m-%d %H:%M")
            failing = ", failing night" if night.failing else ""
            found.append((i, value, f"{when}: {metric_of(night)} = {value:.3f} on v{night.version_number}{failing}"))
        return found

    first_label = f"recall@k_first{f' = {k_first}' if k_first else ''}"
    final_label = f"recall@k_final{f' = {k_final}' if k_final else ''}"
    wanted = [(final_label, "recall_final", "k_final", FINAL_COLOR)]
    if trend.stage != Endpoint.Stage.RERANKED:
        wanted.insert(0, (first_label, "recall_first", "k_first", FIRST_COLOR))
    lines = [
        (label, points(lambda n, a=attribute: getattr(n, a), lambda n, k=k: f"recall@{getattr(n, k)}"), colour, False)
        for label, attribute, k, colour in wanted
    ]
    y_rules: list[tuple[float, str]] = []
    slice_missing = False
    if slice_name:
        found_any = False
        for label, _, k, colour in wanted:
            found = points(lambda n, k=k: n.slices.get(f"recall@{getattr(n, k)}"), lambda n, k=k: f"recall@{getattr(n, k)} of {slice_name}")
            lines.append((f"{label}, {slice_name}", found, colour, True))
            found_any = found_any or bool(found)
        slice_missing = not found_any
        y_rules.append((slice_floor, f"slice floor {slice_floor:.2f}"))
    bottom, ticks = recall_axis([y for _, found, _, _ in lines for _, y, _ in found] + [y for y, _ in y_rules])

    def scaled(y: float) -> float:
        return (y - bottom) / (1.0 - bottom)

    series = [
        charts.Series(label, [(x, scaled(y), text) for x, y, text in found], colour, dashed=dashed, dots=True)
        for label, found, colour, dashed in lines
    ]
    place = {id(night): i for i, night in enumerate(nights)}
    x_rules = [
        (place[id(night)], f"v{number}", f"from {_night_label(night.measured_at)} the nights are scored on v{number}", "boundary")
        for night, number in trend.version_changes
    ]
    x_rules += [
        (i, "", f"{_local(night.measured_at):%Y-%m-%d}: over the failing share of queries failed", "failing")
        for i, night in enumerate(nights)
        if night.failing
    ]
    where = f", slice {slice_name}" if slice_name else ""
    chart = charts.line_chart(
        series,
        x_min=0,
        x_max=max(len(nights) - 1, 1),
        x_ticks=_night_ticks([n.measured_at for n in nights]),
        x_label=f"night ({len(nights)} shown, oldest first)",
        y_label="mean recall" + (f" (axis from {bottom:.1f})" if bottom else ""),
        title=f"{trend.series.name}: recall per night{where}",
        y_rules=[(scaled(y), label) for y, label in y_rules],
        x_rules=x_rules,
        y_ticks=ticks,
        width=440,
        height=250,
    )
    return chart, slice_missing


@dataclass(frozen=True)
class RerankPanel:
    system: str
    chart: charts.LineChart
    latest: RerankNight
    threshold_points: float

    @property
    def over(self) -> bool:
        return self.latest.loss_points > self.threshold_points


def rerank_chart(system: str, nights: list[RerankNight], threshold_points: float) -> charts.LineChart:
    """Rerank loss in points per night; the y axis runs from 0 to a round number of points
    above both the worst night and the threshold. A gain (negative loss) sits on 0."""
    top = max([threshold_points, *(n.loss_points for n in nights)]) * 1.15
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50) if top / s <= 6)
    top = max(step, math.ceil(top / step) * step)
    ticks = [(v / top, f"{v:g}") for v in range(0, int(top) + 1, step)]
    points = [
        (
            i,
            max(n.loss_points, 0.0) / top,
            f"{_local(n.measured_at):%Y-%m-%d %H:%M}: {n.loss_points:.1f} points (recall@k_first {n.recall_first:.3f} − "
            f"recall@k_final {n.recall_final:.3f}) on v{n.version_number}",
        )
        for i, n in enumerate(nights)
    ]
    return charts.line_chart(
        [charts.Series(f"{system}: rerank loss", points, charts.color(3), dots=True)],
        x_min=0,
        x_max=max(len(nights) - 1, 1),
        x_ticks=_night_ticks([n.measured_at for n in nights]),
        x_label="night, oldest first",
        y_label="loss (points)",
        title=f"{system}: rerank loss per night",
        y_rules=[(threshold_points / top, f"alert over {threshold_points:g}")],
        y_ticks=ticks,
        width=440,
        height=230,
    )


@dataclass(frozen=True)
class Cell:
    """One canary in one probe round: found, missed, or not probed (the canary is newer)."""

    state: str  # found, missed, none
    symbol: str
    text: str  # what a screen reader and the tooltip say


@dataclass(frozen=True)
class Column:
    probe_round: ProbeRound
    when: str


@dataclass(frozen=True)
class ColumnGroup:
    """The time label over ROUND_LABEL_EVERY rounds: the first one's time (with its date when
    the day changes), so the labels never crowd the cells."""

    label: str
    span: int
    title: str


@dataclass(frozen=True)
class StripRow:
    canary: Canary
    cells: list[Cell]
    missed_now: bool

    @property
    def missed_count(self) -> int:
        return sum(cell.state == "missed" for cell in self.cells)


@dataclass(frozen=True)
class StripPanel:
    strip: CanaryStrip
    columns: list[Column]
    groups: list[ColumnGroup]
    rows: list[StripRow]
    next_probe_at: datetime | None

    @property
    def endpoint(self):
        return self.strip.endpoint

    @property
    def latest(self) -> ProbeRound | None:
        return self.strip.rounds[-1] if self.strip.rounds else None


def _cell(probe: Probe | None, when: str) -> Cell:
    if probe is None:
        return Cell("none", "·", f"{when}: not probed")
    if probe.found:
        return Cell("found", "✓", f"{when}: found at rank {probe.rank} (top {probe.k})")
    if probe.error:
        return Cell("missed", "✗", f"{when}: missed, the endpoint did not answer ({probe.error[:120]})")
    where = f"at rank {probe.rank}, below the top {probe.k}" if probe.rank else f"not in the top {probe.k}"
    return Cell("missed", "✗", f"{when}: missed, {where}")


def _groups(rounds: list[ProbeRound]) -> list[ColumnGroup]:
    groups, previous_day = [], None
    for start in range(0, len(rounds), ROUND_LABEL_EVERY):
        chunk = rounds[start : start + ROUND_LABEL_EVERY]
        first, last = _local(chunk[0].slot), _local(chunk[-1].slot)
        label = first.strftime("%H:%M") if first.date() == previous_day else first.strftime("%m-%d %H:%M")
        previous_day = first.date()
        groups.append(ColumnGroup(label, len(chunk), f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M}"))
    return groups


def strip_panel(strip: CanaryStrip, next_probe_at: datetime | None) -> StripPanel:
    columns = [Column(probe_round, _local(probe_round.slot).strftime("%Y-%m-%d %H:%M")) for probe_round in strip.rounds]
    rows = []
    for canary in strip.canaries:
        probes = strip.cells.get(canary.pk, [])
        cells = [_cell(probe, column.when) for probe, column in zip(probes, columns)]
        rows.append(StripRow(canary, cells, missed_now=bool(cells) and cells[-1].state == "missed"))
    return StripPanel(strip=strip, columns=columns, groups=_groups(strip.rounds), rows=rows, next_probe_at=next_probe_at)


# Night alerts listed at once; the rest of the week's fold under "more".
NIGHT_ALERTS_OPEN = 8


@dataclass(frozen=True)
class NightAlertRow:
    """One alert of a recent night as a table row; `message` (the alert's whole text) is its tooltip."""

    when: str
    series: str
    kind: str
    slice: str
    metric: str
    figure: str  # "0.937 → 0.878 (−5.9 points)", or the value alone when nothing was compared
    message: str
    within_noise: bool = False  # recorded, not sent: the paired test cannot tell it from chance


# A canary alert's figure is the share of canaries found: "1.000 → 0.000, −100 points" says
# nothing a person can act on, so its row names the pages missed instead (its message's tail).
CANARY_KINDS = (Alert.Kind.CANARY_MISSED, Alert.Kind.PROBE_MISSED)
CANARY_FIGURE_CHARS = 160


def night_alert_row(alert: Alert) -> NightAlertRow:
    figure = f"{alert.value:.3f}"
    if alert.kind in CANARY_KINDS:
        missed = alert.message.split(": ", 1)[-1]
        figure = missed if len(missed) <= CANARY_FIGURE_CHARS else missed[: CANARY_FIGURE_CHARS - 1] + "…"
    elif alert.reference is not None:
        figure = f"{alert.reference:.3f} → {alert.value:.3f} ({(alert.value - alert.reference) * 100:+.1f} points)".replace("-", "−")
    return NightAlertRow(
        when=_local(alert.run.measured_at).strftime("%m-%d %H:%M"),
        series=alert.run.series.name if alert.run.series_id else alert.run.name,
        kind=alert.get_kind_display(),
        slice=alert.slice,
        metric=alert.metric,
        figure=figure,
        message=alert.message,
        within_noise=alert.within_noise,
    )


@dataclass(frozen=True)
class MonitoringPage:
    report: MonitoringReport
    panels: list[SeriesPanel]
    rerank: list[RerankPanel]
    strips: list[StripPanel]
    slice_suggestions: list[str]  # the age slices first: the seed's incident is about new pages
    slice_others: list[str]
    night_alerts: list[NightAlertRow]

    @property
    def night_alerts_open(self) -> list[NightAlertRow]:
        return self.night_alerts[:NIGHT_ALERTS_OPEN]

    @property
    def night_alerts_more(self) -> list[NightAlertRow]:
        return self.night_alerts[NIGHT_ALERTS_OPEN:]

    @property
    def running(self) -> list[NightlyRun]:
        return [panel.progress for panel in self.panels if panel.progress is not None]


def slice_order(choices: list[str]) -> tuple[list[str], list[str]]:
    """(age slices, youngest first; the others): the page suggests the age slices first."""
    ages = sorted((name for name in choices if name.startswith(AGE_SLICE_PREFIX)), key=natural_key)
    return ages, [name for name in choices if name not in ages]


def monitoring_page(report: MonitoringReport) -> MonitoringPage:
    panels = []
    for trend in report.series:
        chart, missing = series_chart(trend, slice_name=report.slice_name, slice_floor=report.alert_slice_floor)
        panels.append(SeriesPanel(trend=trend, chart=chart, slice_missing=missing))
    rerank = [
        RerankPanel(system, rerank_chart(system, nights, report.alert_rerank_loss_points), nights[-1], report.alert_rerank_loss_points)
        for system, nights in sorted(report.rerank.items())
    ]
    for panel in panels:
        if panel.progress is not None and panel.trend.endpoint is not None:
            panel.progress.endpoint = panel.trend.endpoint  # the template names it: no query per night
    next_probes = {trend.endpoint.pk: trend.next_probe_at for trend in report.series if trend.endpoint is not None}
    strips = [strip_panel(strip, next_probes.get(strip.endpoint.pk)) for strip in report.strips]
    ages, others = slice_order(report.slice_choices)
    return MonitoringPage(report, panels, rerank, strips, ages, others, [night_alert_row(alert) for alert in report.recent_alerts])
