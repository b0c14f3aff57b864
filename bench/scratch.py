"""What every bench script needs around what it measures: a PostgreSQL database of its
own, a broker queue of its own, and the server or worker it started stopped afterwards.

    from bench.scratch import scratch_database

    with scratch_database(args.database_url, keep=args.keep):
        call_command("migrate", verbosity=0)
        ...

A bench only ever drops a database it created: `scratch_database` refuses one that
already exists, and drops its own on the way out, even when a step fails.
"""

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _name_and_admin_url(database_url: str) -> tuple[str, str]:
    name = urlparse(database_url).path.lstrip("/")
    if not name:
        raise SystemExit(f"--database-url {database_url} names no database")
    return name, urlunparse(urlparse(database_url)._replace(path="/postgres"))


@contextmanager
def scratch_database(database_url: str, keep: bool = False):
    """Create the database of `database_url` and drop it on the way out (unless `keep`)."""
    name, admin_url = _name_and_admin_url(database_url)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            raise SystemExit(
                f"database {name!r} already exists; a bench only drops databases it created. "
                f"Drop it yourself (dropdb {name}) or pass another --database-url."
            )
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield
    finally:
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        if keep:
            print(f"kept database {name!r} (--keep)")
        else:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))



def stop_process_group(process: subprocess.Popen) -> None:
    """Stop a server or worker started in a process group of its own (start_new_session):
    TERM to the whole group, then KILL if it has not gone after 30 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def purge_queue(broker_url: str, queue: str) -> None:
    """Delete the Redis keys of a bench's own Celery queue (before and after a run)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    try:
        for key in client.scan_iter(match=f"*{queue}*"):
            client.delete(key)
    finally:
        client.close()


# The plain reference for exporting a version's labels: the rows COPYed straight out of
# PostgreSQL in their canonical order (format with version_id). bench/import_export.py and
# bench/export.py both compare Goldset's export with it.
VERSION_LABELS_COPY = """
COPY (
    SELECT q.query_id, p.doc_id, l.grade
    FROM goldenset_versionlabel l
    JOIN goldenset_query q ON q.id = l.query_id
    JOIN goldenset_page p ON p.id = l.page_id
    WHERE l.version_id = {version_id}
    ORDER BY l.position
) TO STDOUT
"""


def pool_judged_earlier(pool, share: float, spread_seconds: int = 0) -> int:
    """Close `share` (0-1) of a pool's pairs that are no task yet, as if judged before the
    bench: their tasks are written done, with a grade of 0-3 and done_at up to
    `spread_seconds` ago, and no judgment rows (what the benches check is new judgments).
    A pool part-way through judging then costs its counts and curves what it will. Every
    k-th pair (k = 1 / share) by (query, page), so the same data closes the same pairs.
    Returns how many. Needs Django set up, inside the bench's database."""
    from datetime import timedelta

    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from labeling.pools import strategies as pooling
    from labeling.models import JudgingTask
    from labeling.pools.selectors import pool_pairs
    from lib.bulk import bulk_insert

    pairs = pool_pairs(pool)
    every = max(round(1 / share), 1) if share > 0 else 0
    if not every:
        return 0
    chosen = np.flatnonzero((np.arange(len(pairs)) % every == 0) & (pairs.task_ids == 0))
    best_rank, _ = pooling.best_rank_and_run(pairs.ranks[chosen])
    packed = pooling.pack_ranks(pairs.ranks[chosen])
    now = timezone.now()
    rows = (
        (pool.golden_set_id, pool.pk, q, p, "pool", int(best), bytes(blob), "done", (i // every) % 4,
         now - timedelta(seconds=i % spread_seconds if spread_seconds else 0), 1, 1)
        for i, q, p, best, blob in zip(
            chosen.tolist(), pairs.query_pks[chosen].tolist(), pairs.page_pks[chosen].tolist(), best_rank.tolist(), packed,
        )
    )
    columns = ["golden_set_id", "pool_id", "query_id", "page_id", "kind", "best_rank", "run_ranks", "status", "grade",
               "done_at", "judgments_required", "judgments_done"]
    with transaction.atomic():
        return bulk_insert(JudgingTask._meta.db_table, columns, rows)
