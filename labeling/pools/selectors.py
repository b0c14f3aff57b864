"""Reads of pools and their judging tasks: the set's pools and their runs, the queue's order,
task counts and progress, and a pool's pairs as arrays."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from goldenset.models import GoldenSet
from labeling.models import JudgingTask, Pool, PoolQuery, PoolRun
from lib.errors import GoldsetError


def pools_of(golden_set: GoldenSet) -> QuerySet[Pool]:
    """The set's pools, newest first."""
    return Pool.objects.filter(golden_set=golden_set).select_related("golden_set", "created_by").order_by("-created_at", "-id")


def pool_runs(pool: Pool) -> list[PoolRun]:
    """The pool's runs in ordinal order: the order of the columns of every task's run_ranks."""
    return list(PoolRun.objects.filter(pool=pool).select_related("run").order_by("ordinal"))


def pool_queue(pool: Pool) -> QuerySet[JudgingTask]:
    """The pool's queued tasks (open, with a position) in queue order: lowest position
    first, ties by id. Served by the partial index judging_task_pool_queue.

    Leases are not looked at here; the queue that hands tasks out decides what an
    active lease means.
    """
    return JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.OPEN, position__isnull=False).order_by("position", "id")


@dataclass(frozen=True)
class PoolProgress:
    """Task counts of a pool. `queued` of the `open` tasks are in the queue now;
    `left_out_by_budget` is how many open tasks the budget will leave unjudged;
    `relevant_found` counts done tasks graded at or above the set's relevance threshold."""

    open: int
    queued: int
    done: int
    skipped: int
    relevant_found: int
    budget: int | None
    left_out_by_budget: int

    @property
    def total(self) -> int:
        return self.open + self.done + self.skipped


def task_counts(pool: Pool) -> dict[str, int]:
    """{status: number of the pool's tasks}, every status present. Closed tasks are
    counted through the partial index judging_task_pool_closed; open ones are the rest
    of Pool.pair_count."""
    closed = dict(
        JudgingTask.objects.filter(pool=pool)
        .exclude(status=JudgingTask.Status.OPEN)
        .values("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    counts = {status: closed.get(status, 0) for status in (JudgingTask.Status.DONE, JudgingTask.Status.SKIPPED)}
    counts[JudgingTask.Status.OPEN] = pool.pair_count - sum(counts.values())
    return counts


def left_out_by_budget(pool: Pool, counts: dict[str, int] | None = None) -> int:
    """How many of the pool's open tasks its budget leaves unjudged (0 without a budget)."""
    if pool.budget is None:
        return 0
    counts = task_counts(pool) if counts is None else counts
    room = max(pool.budget - counts.get(JudgingTask.Status.DONE, 0), 0)
    return max(counts.get(JudgingTask.Status.OPEN, 0) - room, 0)


def pool_progress(pool: Pool) -> PoolProgress:
    counts = task_counts(pool)
    relevant = JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.DONE, grade__gte=pool.golden_set.relevance_threshold).count()
    return PoolProgress(
        open=counts.get(JudgingTask.Status.OPEN, 0),
        queued=pool_queue(pool).count(),
        done=counts.get(JudgingTask.Status.DONE, 0),
        skipped=counts.get(JudgingTask.Status.SKIPPED, 0),
        relevant_found=relevant,
        budget=pool.budget,
        left_out_by_budget=left_out_by_budget(pool, counts),
    )


@dataclass(frozen=True)
class PoolPairs:
    """A pool's pairs (all, or those of some queries) as arrays, one element (or row) per
    pair, sorted by (query, page), with the state of their tasks where they are tasks.

    `ranks[i, r]` is pair i's rank in the run whose PoolRun.ordinal is r (0 = not in
    that run's pooled top), so "pages only run r contributed" is
    `(ranks[:, r] > 0) & ((ranks > 0).sum(axis=1) == 1)`. A pair that is no task yet (it
    has not reached its query's window) has task id 0 and status "open". `grade` is -1
    where the task is not done, `position` -1 where it is not queued, `done_at` None
    where it is not done.
    """

    query_pks: np.ndarray
    page_pks: np.ndarray
    ranks: np.ndarray
    task_ids: np.ndarray
    status: np.ndarray  # object array of JudgingTask.Status values
    grade: np.ndarray
    position: np.ndarray
    done_at: list

    def __len__(self) -> int:
        return len(self.page_pks)


def pool_pairs(pool: Pool, query_pks: Sequence[int] | None = None, runs: int | None = None) -> PoolPairs:
    """The pool's pairs (of `query_pks` only, if given) with their tasks' state.

    Two statements: the PoolQuery rows, then their queries' tasks in the pool (through
    the unique index's (golden set, query) prefix). `runs`, the pool's number of runs
    (the ranks' columns), is counted in the first statement when not given.
    """
    rows = PoolQuery.objects.filter(pool_id=pool.pk).order_by("query_id")
    if query_pks is not None:
        rows = rows.filter(query_id__in=[int(pk) for pk in query_pks])
    fields = ["query_id", "page_ids", "run_ranks", "runs"]
    if runs is None:
        # The pool's number of runs, in the same statement.
        count = PoolRun.objects.filter(pool_id=OuterRef("pool_id")).order_by().values("pool_id").annotate(n=Count("id")).values("n")
        rows = rows.annotate(pool_runs=Coalesce(Subquery(count), 0))
        fields.append("pool_runs")
    stored = [
        (PoolQuery(pool_id=pool.pk, query_id=row[0], page_ids=row[1], run_ranks=row[2], runs=row[3]), row[4:])
        for row in rows.values_list(*fields)
    ]
    if runs is None:
        runs = stored[0][1][0] if stored else 0
    stored = [row for row, _ in stored]
    pages = [row.pages() for row in stored]
    lengths = np.array([len(page) for page in pages], dtype=np.int64)
    stored_query_pks = np.array([row.query_id for row in stored], dtype=np.int64)
    query = np.repeat(np.arange(len(stored), dtype=np.int64), lengths)
    page = np.concatenate(pages) if pages else np.zeros(0, dtype=np.int64)
    n = len(page)
    pairs = PoolPairs(
        query_pks=np.repeat(stored_query_pks, lengths),
        page_pks=page,
        ranks=np.concatenate([row.ranks(runs) for row in stored]) if stored else np.zeros((0, runs), dtype=np.int64),
        task_ids=np.zeros(n, dtype=np.int64),
        status=np.full(n, JudgingTask.Status.OPEN, dtype=object),
        grade=np.full(n, -1, dtype=np.int64),
        position=np.full(n, -1, dtype=np.int64),
        done_at=[None] * n,
    )
    if not n:
        return pairs
    # Through the unique index's (golden set, query) prefix.
    tasks = list(
        JudgingTask.objects.filter(
            golden_set_id=pool.golden_set_id,
            query_id__in=stored_query_pks.tolist(),
            kind=JudgingTask.Kind.POOL,
            pool_id=pool.pk,
        ).values_list("id", "query_id", "page_id", "status", "grade", "done_at", "position")
    )
    if not tasks:
        return pairs
    # Each task's pair: pairs are sorted by (query, page), and so are these keys.
    task_pages = np.array([row[2] for row in tasks], dtype=np.int64)
    span = int(max(page.max(), task_pages.max())) + 1
    pair_keys = query * span + page
    task_keys = np.searchsorted(stored_query_pks, np.array([row[1] for row in tasks], dtype=np.int64)) * span + task_pages
    at = np.minimum(np.searchsorted(pair_keys, task_keys), n - 1)
    stray = np.flatnonzero(pair_keys[at] != task_keys)
    if len(stray):
        raise GoldsetError(f"pool task {tasks[int(stray[0])][0]} has no pair in pool {pool.pk}: its stored pairs are damaged")
    pairs.task_ids[at] = [row[0] for row in tasks]
    pairs.status[at] = [row[3] for row in tasks]
    pairs.grade[at] = [-1 if row[4] is None else row[4] for row in tasks]
    pairs.position[at] = [-1 if row[6] is None else row[6] for row in tasks]
    for i, row in zip(at.tolist(), tasks):
        pairs.done_at[i] = row[5]
    return pairs
