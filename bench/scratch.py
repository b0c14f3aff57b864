"""What every bench script needs before it measures: a PostgreSQL database of its own.

    from bench.scratch import scratch_database

    with scratch_database(args.database_url, keep=args.keep):
        call_command("migrate", verbosity=0)
        ...

A bench only ever drops a database it created: `scratch_database` refuses one that
already exists, and drops its own on the way out, even when a step fails.
"""

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

