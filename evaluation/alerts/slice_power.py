"""What each slice's drop test can detect (slice_power): the minimum detectable drop of the
recall a run's slices are judged by, for the monitoring and results pages and the set's home,
from one rule (evaluation.alerts.noise)."""

from dataclasses import dataclass

import numpy as np

from evaluation.alerts import noise
from evaluation.alerts.rules import healthy_nights_before, night_alpha, slice_metric
from evaluation.models import Evaluation, EvaluationSettings
from evaluation.selectors import PerQuery, evaluation_settings


@dataclass(frozen=True)
class SlicePower:
    """How small a drop of `metric` a slice's paired test detects (evaluation.alerts.noise).

    `detectable_points` is the minimum detectable drop in points at `alpha` (the set's
    alert_alpha over a night's comparisons) and the set's alert_power, None under two
    queries or when every query scored the same (`constant`: no spread to judge by, as on a
    slice every query of which finds all its pages); `underpowered` is True when it is over
    the set's alert_drop_points or there are under two queries, and `needed` the queries the
    slice would need to detect that threshold (None when it does already). `paired` says where the spread came from: the
    paired differences of the series' latest two healthy nights on one version, or else
    (an uploaded run, a first night, two nights that agreed on every query) the run's own
    per-query spread, taken as two independent runs' (sd_d = sqrt(2) * sd)."""

    slice: str
    metric: str
    queries: int
    detectable_points: float | None
    underpowered: bool
    needed: int | None
    paired: bool
    alpha: float
    constant: bool = False


def slice_power(evaluation: Evaluation, *, settings: EvaluationSettings | None = None) -> dict[str, SlicePower]:
    """{slice name ("" for all queries): SlicePower} of `evaluation` for the recall its run's
    slices are judged by (rules.slice_metric); {} when the evaluation stored no per-query
    values per slice (an older evaluation) or is not done. What the monitoring page and the
    results page's slice rows show, from one rule. `settings`: the set's, when in hand."""
    return slice_powers([evaluation], settings=settings).get(evaluation.pk, {})


def slice_powers(
    evaluations: list[Evaluation],
    *,
    settings: EvaluationSettings | None = None,
    previous: dict[int, Evaluation | None] | None = None,
) -> dict[int, dict[str, SlicePower]]:
    """slice_power of each of `evaluations` (of one set), by evaluation id, with every
    per-query blob read in one query. For a run of a series the spread is paired with its
    previous healthy night on the same version (rules.healthy_nights_before, a query per
    series run), unless `previous` maps evaluation ids to it already (None: there is none),
    as the monitoring page, which holds every series' nights, does."""
    done = [e for e in evaluations if e.status == Evaluation.Status.DONE]
    if not done:
        return {}
    settings = settings or evaluation_settings(done[0].version.golden_set)
    previous_of = {}
    for evaluation in done:
        run = evaluation.run
        if previous is not None and evaluation.pk in previous:
            if previous[evaluation.pk] is not None:
                previous_of[evaluation.pk] = previous[evaluation.pk].pk
        elif run.series_id is not None and run.measured_at is not None:
            before = healthy_nights_before(evaluation, settings)
            if before:
                previous_of[evaluation.pk] = before[0].pk
    blobs = _per_queries([e.pk for e in done] + list(previous_of.values()))
    found = {}
    for evaluation in done:
        per_query = blobs.get(evaluation.pk)
        if per_query is not None and per_query.slices:
            found[evaluation.pk] = _slices_power(evaluation, per_query, blobs.get(previous_of.get(evaluation.pk)), settings)
    return found


def _per_queries(evaluation_ids: list[int]) -> dict[int, PerQuery]:
    rows = Evaluation.objects.filter(pk__in=evaluation_ids).exclude(per_query=None).values_list("pk", "per_query")
    return {pk: PerQuery.from_bytes(bytes(data)) for pk, data in rows if data}


def _slices_power(
    evaluation: Evaluation, per_query: PerQuery, previous: PerQuery | None, settings: EvaluationSettings
) -> dict[str, SlicePower]:
    version = evaluation.version
    metric = slice_metric(evaluation.run, version)
    recalls = {f"recall@{version.k_first}", f"recall@{version.k_final}"}
    # The night's figures: both recalls overall, the judged-by recall of each slice that
    # averaged a query (one that has a score), as rules._night_drops counts them.
    scored = [name for name in per_query.slices if len((per_query.slice_values(name, metric) or ((), []))[1])]
    alpha = night_alpha(settings, len(recalls) + len(scored))
    threshold, power = settings.alert_drop_points, settings.alert_power
    found = {}
    for name in ["", *per_query.slices]:
        tonight = per_query.slice_values(name, metric)
        if tonight is None:
            continue
        sd, paired = _paired_spread(previous, name, metric, tonight)
        if sd is None:
            sd = float(np.std(tonight[1], ddof=1)) * np.sqrt(2) if len(tonight[1]) > 1 else 0.0
        if len(tonight[1]) > 1 and sd <= noise.SD_ZERO:
            found[name] = SlicePower(name, metric, len(tonight[1]), None, False, None, paired, alpha, constant=True)
            continue
        detectable = noise.detectable_drop(sd, len(tonight[1]), alpha=alpha, power=power)
        points = None if detectable is None else detectable * 100
        underpowered = points is None or points > threshold
        needed = noise.queries_needed(sd, threshold / 100, alpha=alpha, power=power) if underpowered else None
        found[name] = SlicePower(name, metric, len(tonight[1]), points, underpowered, needed, paired, alpha)
    return found


def _paired_spread(previous: PerQuery | None, name: str, metric: str, tonight: tuple) -> tuple[float | None, bool]:
    """(sd of the paired differences with the previous night, True), or (None, False) when
    there is no previous night, it lacks the slice, or the two agreed on every query (a
    spread of 0 would claim any drop detectable)."""
    baseline = previous.slice_values(name, metric) if previous is not None else None
    if baseline is None:
        return None, False
    position = {query_id: i for i, query_id in enumerate(baseline[0])}
    rows = [(position[q], j) for j, q in enumerate(tonight[0]) if q in position]
    if len(rows) < 2:
        return None, False
    before, after = (list(side) for side in zip(*rows, strict=True))
    sd = float(np.std(baseline[1][before] - tonight[1][after], ddof=1))
    return (sd, True) if sd > noise.SD_ZERO else (None, False)
