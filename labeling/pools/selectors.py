"""Reads of pools and their judging tasks: the set's pools and their runs, the queue's order,
task counts and progress, and a pool's pairs as arrays."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import Count, QuerySet

from goldenset.models import GoldenSet
from labeling.models import JudgingTask, Pool, PoolQuery, PoolRun
from lib.errors import GoldsetError
from lib.rows import converted


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
        JudgingTask.objects.filter(pool=pool).exclude(status=JudgingTask.Status.OPEN)
        .values("status").annotate(n=Count("id")).values_list("status", "n")
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
    # Hand-written, as are the judging screen's other statements run on every judgment
    # (labeling.judging.services): building these two through the ORM cost more CPU than
    # the database spent on them.
    quote = connection.ops.quote_name
    in_queries, params = "", [pool.pk]
    if query_pks is not None:
        query_pks = [int(pk) for pk in query_pks]
        if not query_pks:
            query_pks = [0]  # no query: a primary key none has
        in_queries = f" AND query_id IN ({', '.join(['%s'] * len(query_pks))})"
        params += query_pks
    # The pool's number of runs, when not given: one scalar subquery, run once for the
    # statement (one round trip fewer a judgment).
    count = "" if runs is not None else f", (SELECT COUNT(*) FROM {quote(PoolRun._meta.db_table)} pool_run WHERE pool_run.pool_id = %s)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT query_id, page_ids, run_ranks, runs{count} FROM {quote(PoolQuery._meta.db_table)} "
            f"WHERE pool_id = %s{in_queries} ORDER BY query_id",
            ([pool.pk] if runs is None else []) + params,
        )
        stored = [
            (PoolQuery(pool_id=pool.pk, query_id=row[0], page_ids=row[1], run_ranks=row[2], runs=row[3]), row[4:])
            for row in cursor.fetchall()
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
        query_pks=np.repeat(stored_query_pks, lengths), page_pks=page,
        ranks=np.concatenate([row.ranks(runs) for row in stored]) if stored else np.zeros((0, runs), dtype=np.int64),
        task_ids=np.zeros(n, dtype=np.int64), status=np.full(n, JudgingTask.Status.OPEN, dtype=object),
        grade=np.full(n, -1, dtype=np.int64), position=np.full(n, -1, dtype=np.int64), done_at=[None] * n,
    )
    if not n:
        return pairs
    # Through the unique index's (golden set, query) prefix.
    listed = stored_query_pks.tolist()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, query_id, page_id, status, grade, done_at, position FROM {quote(JudgingTask._meta.db_table)} "
            f"WHERE golden_set_id = %s AND query_id IN ({', '.join(['%s'] * len(listed))}) AND kind = %s AND pool_id = %s",
            [pool.golden_set_id, *listed, JudgingTask.Kind.POOL, pool.pk],
        )
        tasks = cursor.fetchall()
    if tasks:
        done_at = converted(JudgingTask, "done_at", [row[5] for row in tasks])
        tasks = [(*row[:5], when, row[6]) for row, when in zip(tasks, done_at)]
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

