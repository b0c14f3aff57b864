"""The alert rules checked after every evaluation, and alerts_check, which stores an Alert
for each threshold crossed, adds it to its incident (evaluation.alerts.incidents) and sends
alert_raised, whose receiver enqueues the delivery of the incident's message
(evaluation.alerts.delivery) on commit.

The rules follow the seed's "Operating it" list, with thresholds from the golden set's
EvaluationSettings (points are hundredths of a fraction: 3.0 points = 0.03):

- DROP_VS_VERSION: recall@k_first or recall@k_final of a run on version N is more than
  `alert_drop_points` below the same run's figure on version N-1. Different versions hold
  different labels, so the message says so: such a drop may be the labels, not the system.
- DROP_VS_RUN: the same, against the system's previous run of the same stage (the one
  uploaded just before it) on the same version. Runs of a series use the night rules
  instead:
- DROP_VS_PREVIOUS_NIGHT and DROP_VS_MEDIAN: a series run's recall@k_first and
  recall@k_final overall, and per slice the recall its stage is judged by (as for the
  floor), more than `alert_drop_points` below the series' previous night, or else below
  the median of its previous 7 nights (at least 3: a slow slide), every figure scored on
  the same version: a label change never looks like a system change. Nights whose
  endpoint was failing are never a baseline. Every slice is compared, however few its
  queries: the paired test below is what keeps a thin slice's noise from alerting. When
  the runs report their index size and it grew, the message says so (the seed's "after a
  corpus growth step"). Uploaded series runs (`import_run --series S --measured-at T`)
  are nights like those Goldset fetched and get the same rules.
- Every drop is also tested query by query (evaluation.alerts.noise): a one-sided paired
  t-test of the run against its baseline (the previous run, version or night; for the
  median, each query's mean over the nights that made it, see _query_means) over the queries both
  averaged, at `alert_alpha` divided among the comparisons (Bonferroni: the recalls
  compared for a run or version; for a night, its figures times two baselines). A drop
  past the threshold that is not significant is stored with `within_noise` and its
  p-value, the slice's minimum detectable drop at `alert_power` and the queries compared,
  and is never sent (no alert_raised). A baseline stored before per-query values were
  kept per slice falls back to the plain threshold, and the message says so.
- For a series run, a state (a slice under the floor, rerank loss over its limit, a canary
  missed) is raised on the night it begins, not again each night it lasts; a drop under
  the median likewise, when the previous night was as far under it already.
- A series run whose share of failed queries is over `failing_share` measured an outage,
  not recall: it raises none of these rules (monitoring raises ENDPOINT_FAILING for it).
- SLICE_UNDER_FLOOR: a slice's recall is under `alert_slice_floor`. The recall is the one
  that stage is judged by: recall@k_final for `reranked` runs (what the prompt sees),
  recall@k_first for `first_stage` and `other` runs (what a later stage can work with, the
  seed's recall@100). Slices averaged over no query have no figure and are skipped.
- RERANK_LOSS: recall@k_first of a system's first-stage run minus recall@k_final of its
  reranked run, on one version, is over `alert_rerank_loss_points`. The alert belongs to the
  reranked run. A reranked run is paired with the first-stage run of its system measured
  (or, outside a series, uploaded) most recently at or before it (or, if none was, the
  earliest one after it): a nightly reranked run pairs with the same night's first stage.
- CANARY_MISSED: a canary page of the set (evaluation.canaries) is not in the run's top
  k_first for its query (the ranks the evaluation stored; a canary added since is looked
  up in the run's entries). One alert per (run, version), whatever the number of canaries
  missed (its message names them); `value` is the share of the version's canaries found,
  `reference` 1.0, `metric` recall@k_first.

k_first and k_final are the version's. Every rule compares two finished evaluations, and it
is checked from whichever of the two finishes last, so the order in which a publish's
fan-out completes changes nothing. A threshold is crossed only when strictly exceeded:
a drop of exactly 3.0 points, or a slice at exactly 0.75, raises nothing.
"""

from dataclasses import dataclass, replace

import numpy as np
from django.db import transaction
from django.db.models import Q

from evaluation.alerts import noise
from evaluation.alerts.incidents import incident_alert_add
from evaluation.canaries import evaluation_canary_results
from evaluation.models import Alert, Evaluation, EvaluationSettings, Run, Score
from evaluation.selectors import PerQuery, evaluation_per_query, evaluation_settings, run_counted
from evaluation.signals import alert_raised
from goldenset.models import Version

# Float noise: 0.8 - 0.7 is 0.10000000000000009, which must not count as over 10 points.
EPSILON = 1e-9


def _points(fraction: float) -> float:
    return fraction * 100


@dataclass(frozen=True)
class _Crossing:
    """A figure over a threshold, before it is stored as an Alert."""

    run: Run
    version: Version
    kind: str
    metric: str
    slice: str
    value: float
    reference: float | None
    message: str
    # A drop's paired test (evaluation.alerts.noise): within_noise crossings are stored, not sent.
    within_noise: bool = False
    p_value: float | None = None
    detectable_points: float | None = None
    queries_compared: int | None = None


def _who(run: Run) -> str:
    """How a message names a run: "bm25 first_stage", plus its name when that says more."""
    label = f"{run.system} {run.stage}"
    return label if run.name == label else f'{label} (run "{run.name}")'


def _done(**filters) -> Evaluation | None:
    return Evaluation.objects.select_related("run", "version__golden_set").filter(status=Evaluation.Status.DONE, **filters).first()


def _overall(evaluation: Evaluation, metric: str) -> float | None:
    """The all-queries figure of `metric` in `evaluation`, None when it was not scored."""
    return Score.objects.filter(evaluation=evaluation, slice="", metric=metric).values_list("value", flat=True).first()


def _recall_names(version: Version) -> list[str]:
    return list(dict.fromkeys([f"recall@{version.k_first}", f"recall@{version.k_final}"]))


# --- is it noise? ------------------------------------------------------------------------

Values = tuple[tuple[str, ...], np.ndarray]  # (query ids, per-query values), aligned


class _PerQueries:
    """The per-query values of the evaluations one check compares, each blob read once and
    only when a figure is past its threshold (most nights none is)."""

    def __init__(self) -> None:
        self._read: dict[int, PerQuery | None] = {}

    def values(self, evaluation: Evaluation, metric: str, slice_name: str) -> Values | None:
        if evaluation.pk not in self._read:
            self._read[evaluation.pk] = evaluation_per_query(evaluation)
        per_query = self._read[evaluation.pk]
        return per_query.slice_values(slice_name, metric) if per_query is not None else None


def _paired(baseline: Values, tonight: Values) -> tuple[np.ndarray, np.ndarray]:
    """The two figures' values on the queries both averaged, aligned."""
    position = {query_id: i for i, query_id in enumerate(baseline[0])}
    rows = [(position[q], j) for j, q in enumerate(tonight[0]) if q in position]
    if not rows:
        return np.empty(0), np.empty(0)
    before, after = zip(*rows, strict=True)
    return baseline[1][list(before)], tonight[1][list(after)]


def _query_means(nights: list[Values]) -> Values:
    """Each query's mean over `nights` (the queries every night averaged): the baseline a
    night is paired with for the median rule. Not each query's median: a query's values are
    skewed (a query that comes back empty one night in eight has a median that never sees
    it), so tonight sits below its medians on average with no change at all; over 40 such
    queries a paired test against per-query medians rejected on 80% of unchanged nights,
    against per-query means on 2% (at 0.05)."""
    common = set(nights[0][0]).intersection(*(ids for ids, _ in nights[1:]))
    ids = tuple(q for q in nights[0][0] if q in common)
    if not ids:
        return ids, np.empty(0)
    columns = []
    for night_ids, values in nights:
        position = {query_id: i for i, query_id in enumerate(night_ids)}
        columns.append(values[[position[q] for q in ids]])
    return ids, np.mean(np.vstack(columns), axis=0)


def _judged(crossing: _Crossing, baseline: Values | None, tonight: Values | None, alpha: float, power: float) -> _Crossing:
    """`crossing` (a drop past the threshold) with its paired test: within noise when the
    test at `alpha` (already divided among the comparisons) cannot reject "no drop", with
    the plain threshold and a note when a side has no per-query values."""
    if baseline is None or tonight is None:
        note = "; no per-query values stored for the baseline (an older evaluation), so the plain threshold decided"
        return replace(crossing, message=crossing.message + note)
    before, after = _paired(baseline, tonight)
    test = noise.paired_drop_test(before, after)
    detectable = noise.detectable_drop(test.sd, test.queries, alpha=alpha, power=power)
    detectable_points = None if detectable is None else _points(detectable)
    detects = (
        "too few queries to test" if detectable_points is None else f"this slice detects drops of {detectable_points:.1f} points or more"
    )
    within_noise = test.p_value > alpha
    if within_noise:
        note = f"; within noise: p = {test.p_value:.2g}, {detects} (not sent)"
    else:
        note = f"; p = {test.p_value:.2g} over {test.queries} queries (significant at {alpha:.2g})"
    return replace(
        crossing,
        message=crossing.message + note,
        within_noise=within_noise,
        p_value=test.p_value,
        detectable_points=detectable_points,
        queries_compared=test.queries,
    )


# --- the rules -------------------------------------------------------------------------


def _drops(subject: Evaluation, reference: Evaluation, kind: str, settings: EvaluationSettings) -> list[_Crossing]:
    """recall@k_first and recall@k_final of `subject` more than the threshold below
    `reference`, each with its paired test (Bonferroni over the recalls compared)."""
    threshold_points = settings.alert_drop_points
    metrics = _recall_names(subject.version)
    alpha = noise.corrected_alpha(settings.alert_alpha, noise.comparisons(len(metrics), 1))
    per_queries = _PerQueries()
    found = []
    for metric in metrics:
        value, before = _overall(subject, metric), _overall(reference, metric)
        if value is None or before is None or before - value <= threshold_points / 100 + EPSILON:
            continue
        drop = _points(before - value)
        head = f"{metric} of {_who(subject.run)} on {subject.version} dropped {drop:.1f} points"
        if kind == Alert.Kind.DROP_VS_VERSION:
            message = f"{head} against v{reference.version.number} ({before:.3f} → {value:.3f}); the labels changed between versions"
        else:
            message = f'{head} against the previous run "{reference.run.name}" ({before:.3f} → {value:.3f})'
        crossing = _Crossing(subject.run, subject.version, kind, metric, "", value, before, message)
        baseline, tonight = per_queries.values(reference, metric, ""), per_queries.values(subject, metric, "")
        found.append(_judged(crossing, baseline, tonight, alpha, settings.alert_power))
    return found


def _drops_vs_version(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    found = []
    previous = _done(run=run, version__golden_set_id=version.golden_set_id, version__number=version.number - 1)
    if previous is not None:
        found += _drops(evaluation, previous, Alert.Kind.DROP_VS_VERSION, settings)
    following = _done(run=run, version__golden_set_id=version.golden_set_id, version__number=version.number + 1)
    if following is not None:
        found += _drops(following, evaluation, Alert.Kind.DROP_VS_VERSION, settings)
    return found


def _drops_vs_run(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    if run.series_id is not None:
        return []  # the night rules compare it within its series
    # An archived or partial run is nobody's "previous run": a test run of 8 queries would
    # make the next full run look like a leap, or its own drop look like the system's.
    siblings = Run.objects.filter(run_counted(), golden_set_id=run.golden_set_id, system=run.system, stage=run.stage).exclude(pk=run.pk)
    # Upload order, ties (same microsecond) broken by id, so "previous" is always one run.
    earlier = Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, id__lt=run.id)
    found = []
    previous_run = siblings.filter(earlier).order_by("-created_at", "-id").first()
    previous = previous_run and _done(run=previous_run, version=version)
    if previous is not None:
        found += _drops(evaluation, previous, Alert.Kind.DROP_VS_RUN, settings)
    next_run = siblings.exclude(earlier).order_by("created_at", "id").first()
    following = next_run and _done(run=next_run, version=version)
    if following is not None:
        found += _drops(following, evaluation, Alert.Kind.DROP_VS_RUN, settings)
    return found


# --- the night rules (runs of a series) --------------------------------------------------

MEDIAN_NIGHTS = 7
MEDIAN_MIN_NIGHTS = 3


def run_is_failing(run: Run, settings: EvaluationSettings) -> bool:
    """True when over `failing_share` of the run's queries failed: it measured an outage."""
    return run.failed_query_count > 0 and run.failed_share > settings.failing_share + EPSILON


def healthy_nights_before(evaluation: Evaluation, settings: EvaluationSettings) -> list[Evaluation]:
    """The done evaluations, on `evaluation`'s version, of up to MEDIAN_NIGHTS nights of its
    series before it, newest first, leaving out nights whose endpoint was failing (looked
    for among the 3 x MEDIAN_NIGHTS nights before it): the baselines of the night rules."""
    run = evaluation.run
    earlier = (
        Evaluation.objects.select_related("run", "version__golden_set")
        .filter(
            status=Evaluation.Status.DONE, version=evaluation.version, run__series_id=run.series_id, run__measured_at__lt=run.measured_at
        )
        .order_by("-run__measured_at", "-run_id")
    )
    return [e for e in earlier[: MEDIAN_NIGHTS * 3] if not run_is_failing(e.run, settings)][:MEDIAN_NIGHTS]


def _night_figures(evaluation: Evaluation, metrics: list[str]) -> dict[tuple[str, str], float]:
    """{(metric, slice): value} of `evaluation` for `metrics`, overall and every slice: a
    slice of few queries is compared too, its paired test is what guards against noise."""
    rows = Score.objects.filter(evaluation=evaluation, metric__in=metrics).values_list("metric", "slice", "value")
    return {(metric, name): value for metric, name, value in rows}


def night_alpha(settings: EvaluationSettings, figures: int) -> float:
    """The significance each test of a night runs at: alert_alpha over the night's
    comparisons, `figures` (metric, slice) figures each against the previous night and the
    median (both counted on every night, so that one series has one a')."""
    return noise.corrected_alpha(settings.alert_alpha, noise.comparisons(figures, 2))


def _size(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1_000:.0f}k"
    return f"{count:,}"


def index_growth_note(before: Run, after: Run) -> str:
    """'; after the index grew from 1.2M to 1.5M documents' when both runs report an index
    size and it grew, else ''."""
    if before.index_size and after.index_size and after.index_size > before.index_size:
        return f"; after the index grew from {_size(before.index_size)} to {_size(after.index_size)} documents"
    return ""


def _night_drops(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    """The series run of `evaluation` against its previous healthy night and the median of
    its previous MEDIAN_NIGHTS healthy nights, all on `evaluation`'s version."""
    run, version = evaluation.run, evaluation.version
    if run.series_id is None or run.measured_at is None:
        return []
    nights = healthy_nights_before(evaluation, settings)
    if not nights:
        return []
    metrics = _recall_names(version)
    threshold = settings.alert_drop_points / 100 + EPSILON
    # Overall, both recalls; per slice, the one the stage is judged by (slice_metric), so
    # that a bad night is a handful of alerts that say where, not one per figure.
    judged_by = slice_metric(run, version)
    tonight = {key: value for key, value in _night_figures(evaluation, metrics).items() if key[1] == "" or key[0] == judged_by}
    alpha, power = night_alpha(settings, len(tonight)), settings.alert_power
    per_queries = _PerQueries()
    previous = nights[0]
    found = []
    before = _night_figures(previous, metrics)
    when = f"{run.measured_at:%Y-%m-%d %H:%M}"
    for (metric, name), value in sorted(tonight.items()):
        reference = before.get((metric, name))
        if reference is None or reference - value <= threshold:
            continue
        where = f" in slice {name}" if name else ""
        message = (
            f"{metric}{where} of {_who(run)} on {version} dropped {_points(reference - value):.1f} points overnight "
            f"({reference:.3f} on {previous.run.measured_at:%Y-%m-%d %H:%M} → {value:.3f} on {when})"
            f"{index_growth_note(previous.run, run)}"
        )
        crossing = _Crossing(run, version, Alert.Kind.DROP_VS_PREVIOUS_NIGHT, metric, name, value, reference, message)
        baseline, tonight_values = per_queries.values(previous, metric, name), per_queries.values(evaluation, metric, name)
        found.append(_judged(crossing, baseline, tonight_values, alpha, power))
    overnight = {(crossing.metric, crossing.slice) for crossing in found}
    if len(nights) >= MEDIAN_MIN_NIGHTS:
        history = [_night_figures(night, metrics) for night in nights]
        oldest = nights[-1].run
        for (metric, name), value in sorted(tonight.items()):
            if (metric, name) in overnight:
                continue  # said already: the median adds a slow slide, not the same drop again
            values = sorted(figures[(metric, name)] for figures in history if (metric, name) in figures)
            if len(values) < MEDIAN_MIN_NIGHTS:
                continue
            middle = len(values) // 2
            median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
            if median - value <= threshold:
                continue
            last_night = before.get((metric, name))
            if last_night is not None and median - last_night > threshold:
                continue  # the previous night was as far under already: said then, not every night
            where = f" in slice {name}" if name else ""
            message = (
                f"{metric}{where} of {_who(run)} on {version} is {_points(median - value):.1f} points under its "
                f"{len(values)}-night median ({median:.3f} → {value:.3f} on {when})"
                f"{index_growth_note(oldest, run)}"
            )
            crossing = _Crossing(run, version, Alert.Kind.DROP_VS_MEDIAN, metric, name, value, median, message)
            # Paired against each query's mean over the nights whose figures made the median.
            baselines = [per_queries.values(night, metric, name) for night, figures in zip(nights, history) if (metric, name) in figures]
            baseline = None if any(b is None for b in baselines) else _query_means(baselines)
            found.append(_judged(crossing, baseline, per_queries.values(evaluation, metric, name), alpha, power))
    return found


# The rules that describe a state (a slice under its floor, a rerank loss over its limit, a
# canary missed) rather than a change: for a series run they are raised on the night the
# state begins, not again every night it lasts.
def _lasting(evaluation: Evaluation, settings: EvaluationSettings, crossings: list[_Crossing]) -> list[_Crossing]:
    """`crossings` without the state crossings the series' previous healthy night scored on
    the same version had too; all of them for a run outside a series."""
    run = evaluation.run
    state_kinds = {Alert.Kind.SLICE_UNDER_FLOOR, Alert.Kind.RERANK_LOSS, Alert.Kind.CANARY_MISSED}
    if run.series_id is None or run.measured_at is None or not any(c.kind in state_kinds for c in crossings):
        return crossings
    previous = next(iter(healthy_nights_before(evaluation, settings)), None)
    if previous is None:
        return crossings
    before = {
        (c.kind, c.metric, c.slice)
        for c in [*_slices_under_floor(previous, settings), *_rerank_losses(previous, settings), *_canaries_missed(previous, settings)]
    }
    return [c for c in crossings if c.kind not in state_kinds or (c.kind, c.metric, c.slice) not in before]


def _night_drops_both_ways(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    """_night_drops of this night, and of the series' nights after it on this version that
    were scored before it (a publish's fan-out finishes in any order)."""
    run = evaluation.run
    found = _night_drops(evaluation, settings)
    if run.series_id is None or run.measured_at is None:
        return found
    later = (
        Evaluation.objects.select_related("run", "version__golden_set")
        .filter(
            status=Evaluation.Status.DONE, version=evaluation.version, run__series_id=run.series_id, run__measured_at__gt=run.measured_at
        )
        .order_by("run__measured_at", "run_id")[:MEDIAN_NIGHTS]
    )
    for following in later:
        if not run_is_failing(following.run, settings):
            found += _night_drops(following, settings)
    return found


def slice_metric(run: Run, version: Version) -> str:
    """The recall a run's slices are held to the floor by (see the module docstring)."""
    k = version.k_final if run.stage == Run.Stage.RERANKED else version.k_first
    return f"recall@{k}"


def _slices_under_floor(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    metric = slice_metric(run, version)
    floor = settings.alert_slice_floor
    rows = (
        Score.objects.filter(evaluation=evaluation, metric=metric, queries_averaged__gt=0, value__lt=floor - EPSILON)
        .exclude(slice="")
        .order_by("slice")
        .values_list("slice", "value", "queries_averaged")
    )
    return [
        _Crossing(
            run,
            version,
            Alert.Kind.SLICE_UNDER_FLOOR,
            metric,
            slice_name,
            value,
            floor,
            f"{metric} of {_who(run)} on {version} is {value:.3f} in slice {slice_name} "
            f"({queries} {'query' if queries == 1 else 'queries'}), under the floor of {floor:.3f}",
        )
        for slice_name, value, queries in rows
    ]


def _moment(run: Run) -> tuple:
    return (run.measured_at or run.created_at, run.id)


def _first_stage_partner(reranked: Run, first_stages: list[Run]) -> Run | None:
    """The first-stage run `reranked` reranks: the latest measured (or uploaded) at or before
    it, else the earliest after. Same-night runs share measured_at, so they pair."""
    moment = reranked.measured_at or reranked.created_at
    before = [run for run in first_stages if (run.measured_at or run.created_at) <= moment]
    if before:
        return max(before, key=_moment)
    return min(first_stages, key=_moment, default=None)


def _rerank_loss(reranked: Evaluation, first: Evaluation, threshold_points: float) -> list[_Crossing]:
    version = reranked.version
    first_metric, final_metric = f"recall@{version.k_first}", f"recall@{version.k_final}"
    recall_first, recall_final = _overall(first, first_metric), _overall(reranked, final_metric)
    if recall_first is None or recall_final is None or recall_first - recall_final <= threshold_points / 100 + EPSILON:
        return []
    loss = _points(recall_first - recall_final)
    message = (
        f"rerank loss of {reranked.run.system} on {version} is {loss:.1f} points (over {threshold_points:g}): "
        f'{first_metric} of first_stage run "{first.run.name}" is {recall_first:.3f}, '
        f'{final_metric} of reranked run "{reranked.run.name}" is {recall_final:.3f}'
    )
    return [_Crossing(reranked.run, version, Alert.Kind.RERANK_LOSS, final_metric, "", recall_final, recall_first, message)]


def _rerank_losses(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    if run.stage not in (Run.Stage.RERANKED, Run.Stage.FIRST_STAGE):
        return []
    system_runs = Run.objects.filter(run_counted(), golden_set_id=run.golden_set_id, system=run.system)
    first_stages = list(system_runs.filter(stage=Run.Stage.FIRST_STAGE))
    threshold = settings.alert_rerank_loss_points
    if run.stage == Run.Stage.RERANKED:
        partner = _first_stage_partner(run, first_stages)
        first = partner and _done(run=partner, version=version)
        return _rerank_loss(evaluation, first, threshold) if first is not None else []
    found = []
    for reranked_run in system_runs.filter(stage=Run.Stage.RERANKED).order_by("created_at", "id"):
        if _first_stage_partner(reranked_run, first_stages) == run:
            reranked = _done(run=reranked_run, version=version)
            if reranked is not None:
                found += _rerank_loss(reranked, evaluation, threshold)
    return found


def _canaries_missed(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    results = evaluation_canary_results(evaluation)
    if not results:
        return []
    missed = [result for result in results if not result.found]
    if not missed:
        return []
    metric = f"recall@{version.k_first}"
    history = _canary_rank_history(evaluation, settings)
    shown = "; ".join(
        f"page {r.canary.page.doc_id} for query {r.canary.query.query_id} "
        + (f"at rank {r.rank}" if r.rank is not None else "not ranked")
        + _ranks_before(history, r)
        for r in missed[:10]
    )
    more = f" and {len(missed) - 10} more" if len(missed) > 10 else ""
    message = (
        f"{_who(run)} on {version} missed {len(missed)} of {len(results)} canary "
        f"{'page' if len(results) == 1 else 'pages'} in its top {version.k_first}: {shown}{more}"
    )
    value = (len(results) - len(missed)) / len(results)
    return [_Crossing(run, version, Alert.Kind.CANARY_MISSED, metric, "", value, 1.0, message)]


# Nights before this one whose canary ranks a CANARY_MISSED message shows.
CANARY_HISTORY_NIGHTS = 5


def _canary_rank_history(evaluation: Evaluation, settings: EvaluationSettings) -> list[dict]:
    """The canary ranks ({canary id: rank or None}) that the series' previous healthy nights
    stored on this version, oldest first; [] outside a series."""
    if evaluation.run.series_id is None or evaluation.run.measured_at is None:
        return []
    nights = healthy_nights_before(evaluation, settings)[:CANARY_HISTORY_NIGHTS]
    return [night.canary_ranks or {} for night in reversed(nights)]


def _ranks_before(history: list[dict], result) -> str:
    """' (ranks on the last 3 nights: 2, 2, -)' for a canary the series' nights ranked, else ''."""
    ranks = [night.get(str(result.canary.pk), "?") for night in history]
    if not ranks or all(rank == "?" for rank in ranks):
        return ""
    shown = ", ".join("-" if rank is None else str(rank) for rank in ranks)
    return f" (ranks on the {len(ranks)} nights before, oldest first: {shown})"


def alerts_check(*, evaluation: Evaluation) -> list[Alert]:
    """Store an alert for every threshold `evaluation` crosses, alone or beside its partners.

    Returns the alerts this call created (within-noise drops included), and sends
    alert_raised for each that is not within noise, so that its
    delivery is enqueued once the transaction commits (evaluation.receivers). Idempotent: a crossing already stored (the same run, version,
    kind, metric and slice) is neither stored nor delivered again, so a redelivered task
    returns []. An evaluation that is not done raises nothing.
    """
    evaluation = Evaluation.objects.select_related("run", "version__golden_set").get(pk=evaluation.pk)
    if evaluation.status != Evaluation.Status.DONE:
        return []
    if evaluation.run.held_back:
        # Archived, or partial and not marked complete: its unanswered queries would flag
        # every slice. run_unarchive and run_mark_complete check again when it counts.
        return []
    settings = evaluation_settings(evaluation.version.golden_set)
    if run_is_failing(evaluation.run, settings):
        return []  # an outage, not recall: monitoring raised "endpoint failing" for it
    crossings = [
        *_drops_vs_version(evaluation, settings),
        *_drops_vs_run(evaluation, settings),
        *_night_drops_both_ways(evaluation, settings),
        *_slices_under_floor(evaluation, settings),
        *_rerank_losses(evaluation, settings),
        *_canaries_missed(evaluation, settings),
    ]
    return _crossings_store(_lasting(evaluation, settings, crossings))


def _crossings_store(crossings: list[_Crossing]) -> list[Alert]:
    created = []
    with transaction.atomic():
        for crossing in crossings:
            if crossing.run.held_back:
                continue  # a later night or run found through a partner: it raises nothing either
            alert, is_new = Alert.objects.get_or_create(
                run=crossing.run,
                version=crossing.version,
                kind=crossing.kind,
                metric=crossing.metric,
                slice=crossing.slice,
                defaults={
                    "golden_set_id": crossing.version.golden_set_id,
                    "value": crossing.value,
                    "reference": crossing.reference,
                    "message": crossing.message,
                    "within_noise": crossing.within_noise,
                    "p_value": crossing.p_value,
                    "detectable_points": crossing.detectable_points,
                    "queries_compared": crossing.queries_compared,
                },
            )
            if is_new:
                created.append(alert)
                # Within noise: stored and shown, never sent (incident_alert_add returns None).
                if incident_alert_add(alert) is not None:
                    alert_raised.send(sender=Alert, alert_id=alert.id)
    return created
