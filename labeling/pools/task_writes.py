"""Writing a pool's judging tasks: new queued tasks and the position or run ranks of tasks
that move, by one statement for the few a judgment brings and by COPY for a pool's windows."""

import numpy as np
from django.db import connection

from labeling.models import JudgingTask, Pool
from labeling.pools import strategies
from lib.bulk import copy_arrays
from lib.progress import Progress, no_progress

# Beyond this many tasks a position or rank update goes through a temporary table and
# one UPDATE ... FROM, and new tasks through a binary COPY; below it, one UPDATE with a
# CASE, or one INSERT, is cheaper than the round trips.
_BULK_UPDATE_LIMIT = 2000


def _in_bulk(count: int) -> bool:
    """Whether `count` tasks are written the bulk way (PostgreSQL's COPY and a temporary
    table); SQLite writes every count by one statement."""
    return connection.vendor == "postgresql" and count > _BULK_UPDATE_LIMIT


# --- writing -----------------------------------------------------------------------


def _copy_tasks_binary(
    pool: Pool,
    query_pks: np.ndarray,
    page_pks: np.ndarray,
    positions: np.ndarray,
    best_rank: np.ndarray,
    packed: np.ndarray,
    byte_width: int,
    progress: Progress,
) -> None:
    """COPY new queued pool tasks in binary: a pool's windows hold tens of thousands of
    tasks, whose columns are arrays already. Every row has a position (only queued pairs
    become tasks)."""
    kind, status = JudgingTask.Kind.POOL.encode(), JudgingTask.Status.OPEN.encode()
    columns = [
        ("golden_set_id", ">i8", 8),
        ("pool_id", ">i8", 8),
        ("query_id", ">i8", 8),
        ("page_id", ">i8", 8),
        ("kind", f"S{len(kind)}", len(kind)),
        ("position", ">i8", 8),
        ("best_rank", ">i4", 4),
        ("run_ranks", f"V{byte_width}", byte_width),
        ("status", f"S{len(status)}", len(status)),
        ("judgments_required", ">i2", 2),
    ]
    values = {
        "golden_set_id": pool.golden_set_id,
        "pool_id": pool.pk,
        "query_id": query_pks,
        "page_id": page_pks,
        "kind": kind,
        "position": positions,
        "best_rank": best_rank,
        "run_ranks": packed,
        "status": status,
        "judgments_required": 1,
    }
    copy_arrays(JudgingTask._meta.db_table, columns, values, len(query_pks), progress=progress)


def _insert_tasks(
    pool: Pool,
    query_pks: np.ndarray,
    page_pks: np.ndarray,
    ranks: np.ndarray,
    positions: np.ndarray,
    progress: Progress = no_progress,
) -> int:
    """Write new open, queued pool tasks, one per row of the arrays, in the order given
    (callers pass (query, page) order: the unique index then grows at its end). Returns
    how many."""
    if not len(query_pks):
        return 0
    best_rank, _ = strategies.best_rank_and_run(ranks)
    packed = strategies.pack_ranks(ranks)
    if _in_bulk(len(query_pks)):
        _copy_tasks_binary(pool, query_pks, page_pks, positions, best_rank, packed, 2 * ranks.shape[1], progress)
        return len(query_pks)
    # The task or two a judgment brings into its query's window (and any write on SQLite):
    # one INSERT costs less than a COPY's round trips.
    JudgingTask.objects.bulk_create(
        [
            JudgingTask(
                golden_set_id=pool.golden_set_id,
                pool_id=pool.pk,
                query_id=q,
                page_id=p,
                kind=JudgingTask.Kind.POOL,
                position=position,
                best_rank=best,
                run_ranks=bytes(blob),
                status=JudgingTask.Status.OPEN,
                judgments_required=1,
            )
            for q, p, position, best, blob in zip(query_pks.tolist(), page_pks.tolist(), positions.tolist(), best_rank.tolist(), packed)
        ],
        batch_size=500,
    )
    return len(query_pks)


def _update_tasks(column: str, values: list[tuple[int, object]]) -> int:
    """Set `column` ("position" or "run_ranks") of tasks by id, [(id, value), ...]."""
    if not values:
        return 0
    if _in_bulk(len(values)):
        sql_type = {"position": "bigint", "run_ranks": "bytea"}[column]
        table = connection.ops.quote_name(JudgingTask._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TEMPORARY TABLE labeling_task_update (id bigint PRIMARY KEY, value {sql_type}) ON COMMIT DROP")
            with cursor.cursor.copy("COPY labeling_task_update (id, value) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
            cursor.execute(
                f"UPDATE {table} AS task SET {connection.ops.quote_name(column)} = u.value "
                f"FROM labeling_task_update AS u WHERE task.id = u.id"
            )
            cursor.execute("DROP TABLE labeling_task_update")
        return len(values)
    # After each judgment, the few tasks of one query's window that move: one UPDATE.
    JudgingTask.objects.bulk_update([JudgingTask(pk=pk, **{column: value}) for pk, value in values], [column], batch_size=500)
    return len(values)
