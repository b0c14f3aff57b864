"""A candidate run compared with a baseline run on one version, query by query: what the CI
gate (`goldset gate`) asks the server, so that the paired test is written once
(evaluation.alerts.noise) and the client never re-implements it.

The baseline is named by a run's name (then both runs are compared on the set's latest
version) or by a version tag (then on the tag's version, against the newest other run of the
candidate's system and stage that is not archived: the main line's run the tag was scored
with). Each (metric, slice) figure is the one-sided paired t-test over the queries both
evaluations averaged; it runs at alpha / m (Bonferroni over the m figures compared, as a
night's alerts do). A figure fails when its drop is past `max_drop_points` *and* significant.
Values are fractions; drops and detectable drops are in points (hundredths).
"""

from dataclasses import dataclass

import numpy as np

from evaluation.alerts.noise import comparisons, corrected_alpha, detectable_drop, paired_drop_test
from evaluation.models import Evaluation, Run
from evaluation.selectors import evaluation_per_query, evaluation_settings
from goldenset.models import GoldenSet, Version
from goldenset.tags import version_resolve
from lib.errors import ConflictError, GoldsetError


@dataclass(frozen=True)
class ComparisonBasis:
    """What a comparison is about: the two runs, the version both are scored on, and the
    tag that named that version (None when the baseline was a run's name)."""

    candidate: Run
    baseline: Run
    version: Version
    tag: str | None


@dataclass(frozen=True)
class FigureComparison:
    """One (metric, slice) of a comparison. `slice` is "" for all queries."""

    metric: str
    slice: str
    queries: int
    baseline: float
    candidate: float
    drop_points: float
    p_value: float
    detectable_points: float | None
    significant: bool
    failed: bool


def comparison_basis(*, golden_set: GoldenSet, candidate: Run, baseline: str) -> ComparisonBasis:
    """Resolve `baseline` (a tag of the set first, else a run's name) at this moment.
    GoldsetError (field "baseline") when it names neither, or a tag with no run to compare."""
    resolved = version_resolve(golden_set, baseline) if not baseline.isdigit() and baseline != "latest" else None
    if resolved is not None:
        runs = Run.objects.filter(golden_set=golden_set, system=candidate.system, stage=candidate.stage, archived_at__isnull=True)
        run = runs.exclude(pk=candidate.pk).filter(pk__lt=candidate.pk).order_by("-pk").first()
        if run is None:
            raise GoldsetError(
                f"tag {baseline!r} names version {resolved.version.number}, but golden set {golden_set.slug!r} has no earlier "
                f"run of system {candidate.system!r} stage {candidate.stage!r} to compare with; name a baseline run instead",
                field="baseline",
            )
        return ComparisonBasis(candidate, run, resolved.version, resolved.tag)
    run = Run.objects.filter(golden_set=golden_set, name=baseline).first()
    if run is None:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no tag or run named {baseline!r}", field="baseline")
    latest = golden_set.versions.order_by("-number").first()
    if latest is None:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no version yet, so nothing is scored", field="baseline")
    return ComparisonBasis(candidate, run, latest, None)


def comparison_evaluations(basis: ComparisonBasis) -> tuple[Evaluation, Evaluation]:
    """The (baseline, candidate) evaluations on the basis's version, made pending when
    missing (a run uploaded after the version was superseded is not scored on it by itself):
    the caller sends their tasks (evaluation_enqueue) and asks again until both are done.
    ConflictError when either failed."""
    found = []
    for run in (basis.baseline, basis.candidate):
        evaluation, _ = Evaluation.objects.get_or_create(run=run, version=basis.version)
        if evaluation.status == Evaluation.Status.FAILED:
            raise ConflictError(f"run {run.name!r} could not be scored on version {basis.version.number}: {evaluation.error}")
        found.append(evaluation)
    return found[0], found[1]


def default_metrics(version: Version) -> list[str]:
    """recall@k_first and recall@k_final of the version (one when they are equal)."""
    return list(dict.fromkeys([f"recall@{version.k_first}", f"recall@{version.k_final}"]))


def slice_name(given: str) -> str:
    """A slice as stored: `lang=de` means the query slice `query:lang=de`."""
    return given if given.startswith(("query:", "page:")) else f"query:{given}"


def runs_compare(
    *, baseline: Evaluation, candidate: Evaluation, metrics: list[str], slices: list[str], max_drop_points: float
) -> list[FigureComparison]:
    """Each metric overall, then on each slice, compared query by query (both evaluations
    done, on one version). GoldsetError naming the field for a metric the version was not
    scored with or a slice it does not have."""
    settings = evaluation_settings(baseline.run.golden_set)
    old, new = evaluation_per_query(baseline), evaluation_per_query(candidate)
    if old is None or new is None:
        raise ConflictError("these evaluations keep no per-query values (scored before they were kept): score them again")
    unknown = [metric for metric in metrics if metric not in old.values or metric not in new.values]
    if unknown:
        raise GoldsetError(
            f"metric {unknown[0]!r} was not scored on version {baseline.version.number}; it has {', '.join(old.values)}", field="metric"
        )
    names = ["", *(slice_name(name) for name in slices)]
    missing = [name for name in names[1:] if name not in old.slices]
    if missing:
        raise GoldsetError(
            f"slice {missing[0]!r} is not a slice of version {baseline.version.number}; it has {', '.join(old.slices) or 'none'}",
            field="slice",
        )
    alpha = corrected_alpha(settings.alert_alpha, comparisons(len(metrics) * len(names), 1))
    figures = []
    for name in names:
        for metric in metrics:
            figures.append(
                _figure(old.slice_values(name, metric), new.slice_values(name, metric), metric, name, alpha, settings, max_drop_points)
            )
    return figures


def _figure(old, new, metric: str, name: str, alpha: float, settings, max_drop_points: float) -> FigureComparison:
    old_ids, old_values = old if old else ((), np.array([]))
    new_ids, new_values = new if new else ((), np.array([]))
    # The queries both evaluations averaged, in the baseline's order.
    at = {query_id: position for position, query_id in enumerate(new_ids)}
    pairs = [(i, at[query_id]) for i, query_id in enumerate(old_ids) if query_id in at]
    base = np.array([old_values[i] for i, _ in pairs], dtype=np.float64)
    cand = np.array([new_values[j] for _, j in pairs], dtype=np.float64)
    test = paired_drop_test(base, cand)
    detectable = detectable_drop(test.sd, test.queries, alpha=alpha, power=settings.alert_power)
    drop_points = test.drop * 100
    significant = test.p_value < alpha
    return FigureComparison(
        metric=metric,
        slice=name,
        queries=test.queries,
        baseline=float(base.mean()) if len(base) else 0.0,
        candidate=float(cand.mean()) if len(cand) else 0.0,
        drop_points=drop_points,
        p_value=test.p_value,
        detectable_points=detectable * 100 if detectable is not None else None,
        significant=significant,
        failed=significant and drop_points > max_drop_points,
    )
