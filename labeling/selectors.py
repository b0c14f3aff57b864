"""Reads of pools and judging tasks: the queue's order, progress, and tasks as arrays."""

from dataclasses import dataclass

import numpy as np
from django.db.models import Count, QuerySet

from goldenset.models import GoldenSet
from labeling import pooling
from labeling.models import JudgingTask, Pool, PoolRun


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
    of Pool.task_count."""
    closed = dict(
        JudgingTask.objects.filter(pool=pool).exclude(status=JudgingTask.Status.OPEN)
        .values("status").annotate(n=Count("id")).values_list("status", "n")
    )
    counts = {status: closed.get(status, 0) for status in (JudgingTask.Status.DONE, JudgingTask.Status.SKIPPED)}
    counts[JudgingTask.Status.OPEN] = pool.task_count - sum(counts.values())
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
    relevant = JudgingTask.objects.filter(
        pool=pool, status=JudgingTask.Status.DONE, grade__gte=pool.golden_set.relevance_threshold
    ).count()
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
class PoolTasks:
    """A pool's tasks as arrays, one element (or row) per task, ordered by task id.

    `ranks[i, r]` is task i's rank in the run whose PoolRun.ordinal is r (0 = not in
    that run's pooled top), so "pages only run r contributed" is
    `(ranks[:, r] > 0) & ((ranks > 0).sum(axis=1) == 1)`. `grade` is -1 where the task
    is not done.
    """

    run_ids: tuple[int, ...]  # Run primary key of each column
    task_ids: np.ndarray
    query_pks: np.ndarray
    page_pks: np.ndarray
    status: np.ndarray  # str
    grade: np.ndarray
    ranks: np.ndarray


def pool_tasks(pool: Pool) -> PoolTasks:
    runs = pool_runs(pool)
    rows = list(
        JudgingTask.objects.filter(golden_set_id=pool.golden_set_id, pool=pool).order_by("id")
        .values_list("id", "query_id", "page_id", "status", "grade", "run_ranks")
        .iterator(chunk_size=20_000)
    )
    return PoolTasks(
        run_ids=tuple(pool_run.run_id for pool_run in runs),
        task_ids=np.array([row[0] for row in rows], dtype=np.int64),
        query_pks=np.array([row[1] for row in rows], dtype=np.int64),
        page_pks=np.array([row[2] for row in rows], dtype=np.int64),
        status=np.array([row[3] for row in rows], dtype=str),
        grade=np.array([-1 if row[4] is None else row[4] for row in rows], dtype=np.int64),
        ranks=pooling.unpack_ranks([row[5] for row in rows], len(runs)),
    )
