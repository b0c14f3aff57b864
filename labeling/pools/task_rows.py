"""The statements a judgment runs on a pool's task rows, written by hand.

Each judgment closes its task, moves the few tasks of its query's window and makes the
task of the pair that joins it (labeling.pools.services.pool_task_judged). Through the
ORM (update(), bulk_update, bulk_create) building these statements cost more CPU than
the database spent running them, on every judgment; here they are plain SQL, the same
statements, for PostgreSQL and SQLite alike. Larger writes (a pool build's windows) go
through COPY in labeling.pools.services.
"""

from collections.abc import Sequence
from datetime import datetime

from django.db import connection

from labeling.models import JudgingTask

# Rows a statement at most: under SQLite's limit of variables in one statement.
_BATCH = 500
_INSERTED = ("golden_set_id", "pool_id", "query_id", "page_id", "kind", "position", "best_rank", "run_ranks", "status",
             "judgments_required")


def _table() -> str:
    return connection.ops.quote_name(JudgingTask._meta.db_table)


def task_rows_insert(rows: Sequence[tuple]) -> None:
    """INSERT tasks, each row the values of _INSERTED in that order; judgments_done and
    created_at take their database defaults, the other columns NULL."""
    columns = ", ".join(connection.ops.quote_name(name) for name in _INSERTED)
    values = "(" + ", ".join(["%s"] * len(_INSERTED)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            cursor.execute(
                f"INSERT INTO {_table()} ({columns}) VALUES {', '.join([values] * len(batch))}",
                [value for row in batch for value in row],
            )


def task_positions_set(values: Sequence[tuple[int, int | None]]) -> None:
    """Set the queue position of tasks by id, [(id, position or None), ...]: one UPDATE
    with a CASE, as bulk_update writes it."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for start in range(0, len(values), _BATCH):
            batch = values[start : start + _BATCH]
            cases = " ".join(["WHEN %s THEN CAST(%s AS bigint)"] * len(batch))
            cursor.execute(
                f"UPDATE {_table()} SET {quote('position')} = CASE {quote('id')} {cases} END "
                f"WHERE {quote('id')} IN ({', '.join(['%s'] * len(batch))})",
                [value for row in batch for value in row] + [pk for pk, _ in batch],
            )


def task_row_close(task_id: int, *, status: str, grade: int, done_at: datetime, judgments_required: int | None) -> None:
    """Close a task: its status, grade and done_at, its lease freed; with
    `judgments_required`, also that and one more judgment counted (judgments_done + 1)."""
    quote = connection.ops.quote_name
    counted, params = "", [status, grade, connection.ops.adapt_datetimefield_value(done_at)]
    if judgments_required is not None:
        counted = f", {quote('judgments_done')} = {quote('judgments_done')} + 1, {quote('judgments_required')} = %s"
        params.append(judgments_required)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table()} SET {quote('status')} = %s, {quote('grade')} = %s, {quote('done_at')} = %s, "
            f"{quote('leased_to_id')} = NULL, {quote('lease_expires_at')} = NULL{counted} WHERE {quote('id')} = %s",
            [*params, task_id],
        )
