"""The judging queue's two hand-written statements: a task's lease, and a pool query's lock.

Everything else a judging cycle runs goes through the ORM (labeling.judging.services,
labeling.pools.services). These two are SQL because what they say has no ORM form in
Django 5.2; each function's docstring names the ORM's nearest form and why it is not used.
Both run inside the caller's transaction.
"""

import zlib
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import QuerySet

from labeling.models import JudgingTask, Pool


def lease_first(candidates: QuerySet[JudgingTask], *, annotator: AbstractBaseUser, until: datetime) -> int | None:
    """Lease the first task of `candidates` (an ordered queryset of tasks) that no other
    transaction holds a lock on to `annotator` until `until`; its primary key, or None
    when there is none.

    One statement: UPDATE ... SET the lease WHERE id = (the first of `candidates`, FOR
    UPDATE SKIP LOCKED) RETURNING id. The search is the ORM's, compiled as it is; only the
    UPDATE around it is written here. SKIP LOCKED: a task another annotator is being
    handed at this moment is passed over rather than waited for, so two hand-outs at once
    take two tasks. SQLite has no row locks and Django leaves the clause out there: its
    IMMEDIATE transactions (goldset.settings.sqlite_database) run hand-outs one at a time.

    ORM equivalent: `candidates.select_for_update(skip_locked=True, of=("self",)).first()`,
    then `save(update_fields=["leased_to", "lease_expires_at"])`. Not used because the
    claim is then two statements with the row held locked between them, and Django's
    update() cannot say which row it changed (no RETURNING), so the one-statement form
    `filter(pk__in=...).update(...)` would need a third statement to learn what it leased.
    """
    search = candidates.select_for_update(skip_locked=True, of=("self",)).values("pk")[:1]
    sql, params = search.query.get_compiler(connection=connection).as_sql()
    quote = connection.ops.quote_name
    meta = JudgingTask._meta
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} SET {quote(meta.get_field('leased_to').column)} = %s, "
            f"{quote(meta.get_field('lease_expires_at').column)} = %s "
            f"WHERE {quote(meta.pk.column)} = ({sql}) RETURNING {quote(meta.pk.column)}",
            [annotator.pk, connection.ops.adapt_datetimefield_value(until), *params],
        )
        row = cursor.fetchone()
    return row[0] if row else None


# The advisory locks of pool_query_lock live in their own two-key namespace (the first
# key), so that they can never collide with another use of advisory locks.
_POOL_QUERY_LOCK_SPACE = zlib.crc32(b"labeling.pool_query") - (1 << 31)


def pool_query_lock(*, pool_id: int, query_id: int) -> Pool:
    """Take, in the current transaction, the locks a judgment of a pool's task holds while
    it closes the task and moves its query's window, and return the pool, read under them.

    First the pool row FOR KEY SHARE: pool_extend, which locks it FOR UPDATE, never
    reorders a query in the middle of a judgment, while judgments do not wait for each
    other. Then a transaction-scoped advisory lock on (pool, query), which serialises the
    reorders of that query's window and nothing else (two pairs whose hashes collide only
    wait for each other). Taken again in the same transaction it is granted at once, so a
    caller that must lock the task row after these (labeling.judging.services, so that
    every path takes them in the same order) may take them first. On SQLite, one writer
    at a time, it only reads the pool.

    ORM equivalent: `Pool.objects.select_for_update(no_key=True).get(pk=pool_id)` (FOR NO
    KEY UPDATE), the weakest lock Django asks for. Not used because it would make every
    judgment of a pool wait for every other, where FOR KEY SHARE waits only for
    pool_extend; and Django has no advisory locks.
    """
    if connection.vendor != "postgresql":
        return Pool.objects.get(pk=pool_id)
    pool_query = zlib.crc32(f"{int(pool_id)}:{int(query_id)}".encode()) - (1 << 31)
    # The CTE locks the pool row before the outer SELECT takes the advisory lock.
    pools = Pool.objects.raw(
        f"WITH pool AS MATERIALIZED (SELECT * FROM {connection.ops.quote_name(Pool._meta.db_table)} WHERE id = %s "
        "FOR KEY SHARE) SELECT pool.*, pg_advisory_xact_lock(%s, %s)::text AS locked FROM pool",
        [pool_id, _POOL_QUERY_LOCK_SPACE, pool_query],
    )
    for pool in pools:
        return pool
    raise Pool.DoesNotExist(f"pool {pool_id} does not exist")
