"""Reads of what the completeness page shows: the pace of judging of each pool, the
found-against-judged curve, completeness samples and their estimate, Judged@k per run and
slice."""

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Count, Max, Min, Q, QuerySet

from evaluation.models import Completeness, Run
from evaluation.reports.completeness import RunCompleteness, run_completeness
from evaluation.reports.unreliable import UnreliableSummary, unreliable_summary
from evaluation.selectors import evaluation_settings, slice_label
from goldenset.models import GoldenSet, Judgment, Version
from goldenset.resolution import labels_of_rows
from labeling.models import CompletenessSample, JudgingTask, Pool, PoolJudgingSummary, PoolRun
from labeling.pools.selectors import PoolProgress, left_out_by_budget, pools_of
from labeling.pools.union import RunSpec, Union, classify, copy_pairs, dense_queries, pool_union, set_pool_pairs
from lib.charts import LineChart, Series, color, line_chart
from lib.ids import natural_key
from lib.ppi import wilson_interval
from lib.progress import Progress, no_progress

# --- completeness: pools judged over time, samples and their estimate ---------------------


@dataclass(frozen=True)
class PoolJudging:
    """A pool's progress (PoolProgress) with the pace of its judging, from the done tasks'
    done_at. A task closed counts once, however many overlap judgments it took.

    `per_hour_recent` is the tasks judged in the `recent_hours` before `now`, divided by
    that many hours; `per_hour_overall` the tasks judged divided by the hours from the
    first judgment to the last, counted as one hour at least, so that a first few
    minutes' burst is not extrapolated to thousands an hour (None before any judgment).
    """

    progress: PoolProgress
    recent: int
    recent_hours: int
    first_done_at: datetime | None
    last_done_at: datetime | None

    @property
    def per_hour_recent(self) -> float:
        return self.recent / self.recent_hours

    @property
    def per_hour_overall(self) -> float | None:
        if self.first_done_at is None or self.last_done_at is None:
            return None
        return self.progress.done / judging_hours(self.first_done_at, self.last_done_at)


def judging_hours(first: datetime, last: datetime) -> float:
    """Hours from the first judgment to the last, one at least (see PoolJudging)."""
    return max((last - first).total_seconds() / 3600, 1.0)


@dataclass(frozen=True)
class ClosedFigures:
    """A pool's closed tasks counted: done, skipped, done and relevant, done since a moment
    (`recent`), and the first and last done_at (None before any judgment)."""

    done: int = 0
    skipped: int = 0
    relevant: int = 0
    recent: int = 0
    first_done_at: datetime | None = None
    last_done_at: datetime | None = None


def pools_closed_figures(pools: Sequence[Pool], *, since: datetime) -> dict[int, ClosedFigures]:
    """{pool id: ClosedFigures} of pools of one golden set, `recent` counting the tasks done
    at or after `since`: one query over the closed tasks, grouped by pool and status (the
    partial index judging_task_pool_closed)."""
    if not pools:
        return {}
    threshold = pools[0].golden_set.relevance_threshold
    closed: dict[int, dict[str, dict]] = defaultdict(dict)
    rows = (
        JudgingTask.objects.filter(pool__in=[pool.pk for pool in pools])
        .exclude(status=JudgingTask.Status.OPEN)
        .values("pool_id", "status")
        .annotate(
            n=Count("id"),
            relevant=Count("id", filter=Q(grade__gte=threshold, status=JudgingTask.Status.DONE)),
            recent=Count("id", filter=Q(done_at__gte=since, status=JudgingTask.Status.DONE)),
            first=Min("done_at"),
            last=Max("done_at"),
        )
    )
    for row in rows:
        closed[row["pool_id"]][row["status"]] = row
    found = {}
    for pool in pools:
        done = closed[pool.pk].get(JudgingTask.Status.DONE, {})
        found[pool.pk] = ClosedFigures(
            done=done.get("n", 0),
            skipped=closed[pool.pk].get(JudgingTask.Status.SKIPPED, {}).get("n", 0),
            relevant=done.get("relevant", 0),
            recent=done.get("recent", 0),
            first_done_at=done.get("first"),
            last_done_at=done.get("last"),
        )
    return found


def pools_queued(pools: Sequence[Pool]) -> dict[int, int]:
    """{pool id: open tasks in the queue} for the pools that have any (judging_task_pool_queue)."""
    return (
        dict(
            JudgingTask.objects.filter(pool__in=[pool.pk for pool in pools], status=JudgingTask.Status.OPEN, position__isnull=False)
            .values("pool_id")
            .annotate(n=Count("id"))
            .values_list("pool_id", "n")
        )
        if pools
        else {}
    )


def pool_judging(pool: Pool, closed: ClosedFigures, queued: int, recent_hours: int) -> PoolJudging:
    """A pool's PoolJudging from its closed tasks counted. Open tasks are Pool.pair_count
    less the closed, as in task_counts."""
    counts = {JudgingTask.Status.DONE: closed.done, JudgingTask.Status.SKIPPED: closed.skipped}
    counts[JudgingTask.Status.OPEN] = pool.pair_count - closed.done - closed.skipped
    progress = PoolProgress(
        open=counts[JudgingTask.Status.OPEN],
        queued=queued,
        done=closed.done,
        skipped=closed.skipped,
        relevant_found=closed.relevant,
        budget=pool.budget,
        left_out_by_budget=left_out_by_budget(pool, counts),
    )
    return PoolJudging(
        progress=progress,
        recent=closed.recent,
        recent_hours=recent_hours,
        first_done_at=closed.first_done_at,
        last_done_at=closed.last_done_at,
    )


def pools_judging(pools: Sequence[Pool], *, now: datetime, recent_hours: int = 24) -> dict[int, PoolJudging]:
    """{pool id: PoolJudging} for pools of one golden set, in two queries however many
    pools and tasks: pools_closed_figures and pools_queued."""
    closed = pools_closed_figures(pools, since=now - timedelta(hours=recent_hours))
    queued = pools_queued(pools)
    return {pool.pk: pool_judging(pool, closed[pool.pk], queued.get(pool.pk, 0), recent_hours) for pool in pools}


# Points a found-against-judged curve keeps per pool, besides its first and last.
CURVE_POINTS = 300
# Curves with at most this many points are drawn with a dot (and a tooltip) at each.
CHART_DOTS = 60


def pools_found_curves(pools: Sequence[Pool], *, points: int = CURVE_POINTS) -> dict[int, list[tuple[int, int]]]:
    """{pool id: [(judgments made, relevant pages found), ...]} in judging order (done_at,
    then id), starting at (0, 0), for each pool with a done task.

    One query over the done tasks only (the partial index judging_task_pool_closed); the
    database numbers and sums them with window functions and returns every k-th point
    (k = ceil(done / points)) plus the last, so a pool of millions of judgments sends a
    few hundred rows. Relevant means graded at or above the set's relevance threshold.
    """
    if not pools:
        return {}
    threshold = int(pools[0].golden_set.relevance_threshold)
    ids = ", ".join(str(int(pool.pk)) for pool in pools)
    table = connection.ops.quote_name(JudgingTask._meta.db_table)
    window = "PARTITION BY pool_id ORDER BY done_at, id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    sql = (
        "SELECT pool_id, n, found FROM ("
        f"  SELECT pool_id, ROW_NUMBER() OVER ({window}) AS n,"
        f"  SUM(CASE WHEN grade >= %s THEN 1 ELSE 0 END) OVER ({window}) AS found,"
        "   COUNT(*) OVER (PARTITION BY pool_id) AS total"
        f"  FROM {table} WHERE pool_id IN ({ids}) AND status = %s"
        ") AS curve WHERE n = total OR n %% ((total + %s - 1) / %s) = 0 ORDER BY pool_id, n"
    )
    curves: dict[int, list[tuple[int, int]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [threshold, JudgingTask.Status.DONE.value, points, points])
        for pool_id, n, found in cursor.fetchall():
            curves.setdefault(pool_id, [(0, 0)]).append((int(n), int(found)))
    return curves


# --- large pools: their judging figures summarised by a worker ------------------------------

# Pools of up to this many pairs have their judging figures read live on every view, exact;
# larger ones from a PoolJudgingSummary (settings.POOL_SUMMARY_PAIRS overrides it): the
# counts and the curve are an aggregate over every closed task, which bench/growth.py
# times at a hundred thousand queries.
POOL_SUMMARY_PAIRS = 200_000
# A summary older than this is shown with its time and refreshed by a worker.
POOL_SUMMARY_MAX_AGE = timedelta(seconds=60)


def summarised(pool: Pool) -> bool:
    """Whether the pool's judging figures come from a summary (see POOL_SUMMARY_PAIRS)."""
    return pool.pair_count > getattr(django_settings, "POOL_SUMMARY_PAIRS", POOL_SUMMARY_PAIRS)


def pools_judging_figures(
    pools: Sequence[Pool],
    *,
    now: datetime,
    recent_hours: int = 24,
    refresh: Callable[[int], None] | None = None,
) -> tuple[dict[int, PoolJudging], dict[int, list[tuple[int, int]]], dict[int, datetime]]:
    """({pool id: PoolJudging}, {pool id: found-against-judged curve}, {pool id: as of}) of
    pools of one golden set: small pools read live (pools_judging, pools_found_curves), exact;
    large ones (summarised) from their PoolJudgingSummary, dated in the third dict. A large
    pool without a summary for `recent_hours` is read live this once, and `refresh` is called
    with its id, as for one whose summary is older than POOL_SUMMARY_MAX_AGE: the caller
    hands the writing of a new summary to a worker (labeling.completeness.summaries.
    pool_summary_refresh). The queue counts are always live (an index of open tasks), in
    one query for every pool."""
    stored = {
        summary.pool_id: summary
        for summary in PoolJudgingSummary.objects.filter(
            pool__in=[pool.pk for pool in pools if summarised(pool)], recent_hours=recent_hours
        )
    }
    live = [pool for pool in pools if pool.pk not in stored]
    closed = pools_closed_figures(live, since=now - timedelta(hours=recent_hours))
    curves = pools_found_curves(live)
    queued = pools_queued(pools)
    judging, as_of = {}, {}
    for pool in pools:
        summary = stored.get(pool.pk)
        if summary is not None:
            closed[pool.pk] = ClosedFigures(
                done=summary.done,
                skipped=summary.skipped,
                relevant=summary.relevant,
                recent=summary.recent,
                first_done_at=summary.first_done_at,
                last_done_at=summary.last_done_at,
            )
            if summary.curve:
                curves[pool.pk] = [tuple(point) for point in summary.curve]
            as_of[pool.pk] = summary.computed_at
        judging[pool.pk] = pool_judging(pool, closed[pool.pk], queued.get(pool.pk, 0), recent_hours)
        if refresh is not None and summarised(pool) and (summary is None or now - summary.computed_at > POOL_SUMMARY_MAX_AGE):
            refresh(pool.pk)
    return judging, curves, as_of


def sampled_union(
    golden_set: GoldenSet,
    runs: Sequence[PoolRun],
    depth_from: int,
    depth_to: int,
    progress: Progress = no_progress,
) -> tuple[Union, np.ndarray]:
    """The union of `runs` read to `depth_to`, and the mask of its candidates some run ranks
    in depth_from + 1 .. depth_to: where a completeness sample of a pool of depth
    `depth_from` draws from (labeling.completeness.services)."""
    specs = [RunSpec(run=pool_run.run, ordinal=pool_run.ordinal, depth=depth_to) for pool_run in runs]
    union = pool_union(golden_set, specs, max(pool_run.ordinal for pool_run in runs) + 1, progress)
    return union, (union.ranks > depth_from).any(axis=1)


def sample_classes(
    golden_set: GoldenSet,
    union: Union,
    in_range: np.ndarray,
    *,
    but_sample: CompletenessSample | None = None,
) -> dict[str, np.ndarray]:
    """labeling.pools.union.classify's masks over the sampled range: a pair is claimed
    when it is a task of the set (of any kind; `but_sample`'s tasks aside) or a pair of one
    of its pools, so "new_tasks" is the unjudged population a sample draws from."""
    tasks = JudgingTask.objects.filter(golden_set=golden_set)
    sql = f"SELECT query_id, page_id FROM {JudgingTask._meta.db_table} WHERE golden_set_id = {int(golden_set.pk)}"
    if but_sample is not None:
        tasks = tasks.exclude(sample=but_sample)
        sql += f" AND (sample_id IS NULL OR sample_id <> {int(but_sample.pk)})"
    task_query_pks, task_page_pks = copy_pairs(tasks.values_list("query_id", "page_id"), sql)
    pool_query_pks, pool_page_pks = set_pool_pairs(golden_set)
    claimed = union.pair_keys(
        dense_queries(union, np.concatenate([task_query_pks, pool_query_pks])),
        np.concatenate([task_page_pks, pool_page_pks]),
    )
    return {name: mask & in_range for name, mask in classify(golden_set, union, claimed[claimed >= 0]).items()}


@dataclass(frozen=True)
class CompletenessEstimate:
    """What a completeness sample says about the relevant pages nobody judged.

    Of the sample's `size` pairs, `judged` have a label now and `relevant` of those are
    relevant (label >= the set's relevance threshold). The share relevant, r / n, scaled
    to the `population` the sample was drawn from, estimates how many relevant pages that
    population held when the sample was drawn (`estimate`, pages), with the 95% Wilson
    interval scaled alike (`low`, `high`). Judging the sample turns its pairs into labels,
    so `relevant` of those pages are judged now; about `estimate - relevant` remain
    unjudged (`still_unjudged`). The interval treats the draw as with replacement (no
    finite-population correction), which only widens it. Skipped sample pairs are not
    judged: if annotators skip the hard ones, the judged pairs are no longer a uniform
    sample, and the page says how many are left.
    """

    sample: CompletenessSample
    judged: int
    relevant: int

    @property
    def population(self) -> int:
        return self.sample.population

    @property
    def size(self) -> int:
        return self.sample.size

    @property
    def share(self) -> float | None:
        return self.relevant / self.judged if self.judged else None

    @property
    def share_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.relevant, self.judged) if self.judged else None

    @property
    def estimate(self) -> float | None:
        return self.population * self.share if self.judged else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if not self.judged:
            return None
        low, high = self.share_interval
        return self.population * low, self.population * high

    @property
    def still_unjudged(self) -> float | None:
        return max(self.estimate - self.relevant, 0.0) if self.judged else None


def samples_of(golden_set: GoldenSet) -> QuerySet[CompletenessSample]:
    """The set's completeness samples, newest first."""
    return (
        CompletenessSample.objects.filter(golden_set=golden_set)
        .select_related("golden_set", "pool", "created_by")
        .order_by("-created_at", "-id")
    )


def sample_pair_labels(samples: Sequence[CompletenessSample]) -> dict[int, dict[tuple[int, int], int]]:
    """{sample id: {(query pk, page pk): label}} of the samples' pairs that have a label now,
    in one query however many samples: their tasks (the partial index judging_task_sample)
    joined to the judgments of their pairs (the index judgment_pair_latest), resolved into
    labels at once by the one rule, goldenset.resolution. A pair is a SAMPLE task at
    most once (judging_task_unique_pair), so no pair is counted twice."""
    found: dict[int, dict[tuple[int, int], int]] = {sample.pk: {} for sample in samples}
    if not samples:
        return found
    tasks = connection.ops.quote_name(JudgingTask._meta.db_table)
    judgments = connection.ops.quote_name(Judgment._meta.db_table)
    ids = ", ".join(str(int(sample.pk)) for sample in samples)
    sql = (
        "SELECT t.sample_id, t.query_id, t.page_id, j.grade, j.source, j.annotator_id, j.id "
        f"FROM {tasks} AS t JOIN {judgments} AS j ON j.query_id = t.query_id AND j.page_id = t.page_id "
        f"WHERE t.sample_id IN ({ids})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    sample_of = {(query_pk, page_pk): sample_id for sample_id, query_pk, page_pk, *_ in rows}
    query, page, label = labels_of_rows(row[1:] for row in rows)
    for query_pk, page_pk, grade in zip(query.tolist(), page.tolist(), label.tolist()):
        found[sample_of[(query_pk, page_pk)]][(query_pk, page_pk)] = grade
    return found


def completeness_estimates(samples: Sequence[CompletenessSample]) -> dict[int, CompletenessEstimate]:
    """{sample id: CompletenessEstimate} in one query however many samples (sample_pair_labels)."""
    labels = sample_pair_labels(samples)
    estimates = {}
    for sample in samples:
        grades = labels[sample.pk].values()
        threshold = sample.golden_set.relevance_threshold
        estimates[sample.pk] = CompletenessEstimate(
            sample=sample,
            judged=len(grades),
            relevant=sum(grade >= threshold for grade in grades),
        )
    return estimates


def completeness_estimate(sample: CompletenessSample) -> CompletenessEstimate:
    """The estimate of one sample (see CompletenessEstimate)."""
    return completeness_estimates([sample])[sample.pk]


# --- the completeness page ------------------------------------------------------------------


@dataclass(frozen=True)
class RunJudged:
    """A run of the set with its completeness figures on the latest version: `overall` is
    None when the run was not scored there (or before completeness was kept); `by_slice`
    maps query slice names ("query:FIELD=VALUE") to their stored rows. `pooled` lists
    (pool id, depth) of the pools the run is in."""

    run: Run
    overall: RunCompleteness | None
    by_slice: dict[str, Completeness]
    pooled: tuple[tuple[int, int], ...]

    @property
    def needs_pooling(self) -> bool:
        return self.overall is not None and self.overall.unreliable

    @property
    def loro_recall_full(self) -> float | None:
        """recall@k_first with every label (a fraction): the reduced figure less its change."""
        row = self.overall.row if self.overall is not None and self.overall.has_loro else None
        if row is None or row.loro_recall_k_first is None or row.loro_recall_change_points is None:
            return None
        return row.loro_recall_k_first - row.loro_recall_change_points / 100

    @property
    def loro_ndcg_full(self) -> float | None:
        row = self.overall.row if self.overall is not None and self.overall.has_loro else None
        if row is None or row.loro_ndcg_10 is None or row.loro_ndcg_change_points is None:
            return None
        return row.loro_ndcg_10 - row.loro_ndcg_change_points / 100


@dataclass(frozen=True)
class PoolRow:
    pool: Pool
    pool_runs: tuple[PoolRun, ...]
    judging: PoolJudging
    color: str
    # When the judging figures were summarised (a large pool: pools_judging_figures); None
    # when they are read live.
    as_of: datetime | None = None


@dataclass(frozen=True)
class SliceJudged:
    """One query slice: its label and, per scored run (CompletenessReport.scored order),
    (Judged@k_final, Judged@k_first, under the floor) or None where the run lacks it."""

    name: str
    label: str
    cells: tuple[tuple[float, float, bool] | None, ...]


@dataclass(frozen=True)
class CompletenessReport:
    """What the completeness page of a golden set shows. Judged@k and leave-one-run-out
    are on `version` (the latest; None before the first); fractions throughout, changes in
    points, rates in tasks judged per hour."""

    golden_set: GoldenSet
    version: Version | None
    floor: float
    runs: tuple[RunJudged, ...]
    slices: tuple[SliceJudged, ...]
    pools: tuple[PoolRow, ...]
    chart: LineChart
    estimates: tuple[CompletenessEstimate, ...]
    recent_hours: int

    @property
    def scored(self) -> list[RunJudged]:
        return [row for row in self.runs if row.overall is not None]

    @property
    def loro(self) -> list[RunJudged]:
        return [row for row in self.runs if row.overall is not None and row.overall.has_loro]

    @property
    def unreliable_summary(self) -> UnreliableSummary:
        """The page's one warning about the runs under the floor, per series."""
        return unreliable_summary((row.run, row.overall) for row in self.runs)

    def _total(self, name: str) -> int:
        return sum(getattr(row.judging.progress, name) for row in self.pools)

    @property
    def pool_size(self) -> int:
        return sum(row.pool.pair_count for row in self.pools)

    @property
    def judged(self) -> int:
        return self._total("done")

    @property
    def remaining(self) -> int:
        return self._total("open")

    @property
    def skipped(self) -> int:
        return self._total("skipped")

    @property
    def relevant_found(self) -> int:
        return self._total("relevant_found")

    @property
    def per_hour_recent(self) -> float:
        return sum(row.judging.recent for row in self.pools) / self.recent_hours

    @property
    def per_hour_overall(self) -> float | None:
        """Tasks judged in all pools over the hours from the first judgment to the last
        (one at least); None before any judgment."""
        firsts = [row.judging.first_done_at for row in self.pools if row.judging.first_done_at]
        lasts = [row.judging.last_done_at for row in self.pools if row.judging.last_done_at]
        if not firsts:
            return None
        return self.judged / judging_hours(min(firsts), max(lasts))


# Samples listed on the page, newest first.
SAMPLES_SHOWN = 20


def _count_axis(maximum: int) -> tuple[int, list[int]]:
    """(top, tick values) of a count axis from 0 to at least `maximum`: five or so round steps."""
    step, magnitude = 1, 1
    while step * 5 < maximum:
        for factor in (1, 2, 5):
            step = factor * magnitude
            if step * 5 >= maximum:
                break
        else:
            magnitude *= 10
    top = max(-(-maximum // step) * step, step)
    return top, list(range(0, top + 1, step))


def _found_chart(rows: Sequence[PoolRow], curves: dict[int, list[tuple[int, int]]]) -> LineChart:
    """One line per pool with a judgment: relevant pages found (y, a count scaled to the
    axis's top) against judgments made (x)."""
    x_top, x_values = _count_axis(max((curve[-1][0] for curve in curves.values()), default=0))
    y_top, y_values = _count_axis(max((curve[-1][1] for curve in curves.values()), default=0))
    series = []
    for row in rows:
        curve = curves.get(row.pool.pk)
        if not curve:
            continue
        points = [
            (
                n,
                f / y_top,
                f"pool {row.pool.pk}: {f} relevant page{'s' if f != 1 else ''} found in the first {n} judgment{'s' if n != 1 else ''}",
            )
            for n, f in curve
        ]
        # Dots carry each point's tooltip; past a few dozen they would hide the line.
        series.append(
            Series(
                label=f"pool {row.pool.pk} ({row.pool.strategy}, depth {row.pool.depth})",
                points=points,
                color=row.color,
                dots=len(points) <= CHART_DOTS,
            )
        )
    return line_chart(
        series,
        x_min=0,
        x_max=x_top,
        x_ticks=[(value, str(value)) for value in x_values],
        x_label="judgments made in the pool (tasks judged, in done_at order)",
        y_label="relevant pages found",
        title="Relevant pages found against judgments made, per pool",
        y_ticks=[(value / y_top, str(value)) for value in y_values],
    )


def completeness_report(
    golden_set: GoldenSet,
    *,
    now: datetime,
    recent_hours: int = 24,
    refresh: Callable[[int], None] | None = None,
) -> CompletenessReport:
    """The completeness page of `golden_set` at `now`, in a fixed number of queries however
    many runs, pools, tasks and samples (see the page test's query budget). `refresh` is
    called with the id of each large pool whose judging summary is missing or old
    (pools_judging_figures)."""
    version = golden_set.versions.order_by("-number").first()
    settings = evaluation_settings(golden_set)
    # Archived runs leave this page and its pool form (pool_build refuses them too).
    # With their series: the page's unreliable-scores line groups the runs by it.
    runs = list(Run.objects.filter(golden_set=golden_set, archived_at=None).select_related("series").order_by("system", "stage", "name"))
    pools = list(pools_of(golden_set))
    members: dict[int, list[PoolRun]] = defaultdict(list)
    for pool_run in PoolRun.objects.filter(pool__in=[pool.pk for pool in pools]).select_related("run").order_by("pool_id", "ordinal"):
        members[pool_run.pool_id].append(pool_run)
    pooled: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for pool in sorted(pools, key=lambda p: p.pk):
        for pool_run in members[pool.pk]:
            pooled[pool_run.run_id].append((pool.pk, pool_run.depth))

    by_run: dict[int, dict[str, Completeness]] = defaultdict(dict)
    if version is not None:
        # Without the evaluations' blobs: the per-query values of every query, unused here.
        rows = (
            Completeness.objects.filter(evaluation__version=version)
            .select_related("evaluation")
            .defer(
                "evaluation__per_query",
                "evaluation__recall_curve",
                "evaluation__canary_ranks",
            )
        )
        for row in rows:
            by_run[row.evaluation.run_id][row.slice] = row
    rows = []
    for run in runs:
        stored = by_run.get(run.pk, {})
        overall = run_completeness(stored[""], run, version, settings, golden_set.slug) if "" in stored else None
        rows.append(
            RunJudged(
                run=run,
                overall=overall,
                by_slice={name: row for name, row in stored.items() if name},
                pooled=tuple(pooled.get(run.pk, ())),
            )
        )
    scored = [row for row in rows if row.overall is not None]
    names = sorted({name for row in scored for name in row.by_slice}, key=natural_key)
    floor = settings.judged_floor
    slices = tuple(
        SliceJudged(
            name=name,
            label=slice_label(name),
            cells=tuple(
                (c.judged_at_k_final, c.judged_at_k_first, c.judged_at_k_final < floor - 1e-9) if (c := row.by_slice.get(name)) else None
                for row in scored
            ),
        )
        for name in names
    )

    judging, curves, as_of = pools_judging_figures(pools, now=now, recent_hours=recent_hours, refresh=refresh)
    pool_rows = tuple(
        PoolRow(pool=pool, pool_runs=tuple(members[pool.pk]), judging=judging[pool.pk], color=color(i), as_of=as_of.get(pool.pk))
        for i, pool in enumerate(pools)
    )
    samples = list(samples_of(golden_set)[:SAMPLES_SHOWN])
    estimates = completeness_estimates(samples)
    return CompletenessReport(
        golden_set=golden_set,
        version=version,
        floor=floor,
        runs=tuple(rows),
        slices=slices,
        pools=pool_rows,
        chart=_found_chart(pool_rows, curves),
        estimates=tuple(estimates[s.pk] for s in samples),
        recent_hours=recent_hours,
    )
