"""The test database, copied from a migrated template instead of migrated for every run.

Migrating an empty PostgreSQL database costs 11 s of CPU (Django renders the models' state
again for each of some 100 migrations), and every pytest process paid it: two workers of the
fast suite, two of the browser tests, the worker tests. The first process of a machine that
needs it migrates a template database, named by a digest of every migration file and of
Django's version, so a changed migration makes a new one; every process then copies it
(CREATE DATABASE ... TEMPLATE, a fraction of a second) and Django finds nothing to migrate.

Processes that start together take turns through a lock (PostgreSQL's advisory lock, a
file lock for SQLite); the template is built under another name and renamed once whole, so
a crash never leaves a half-migrated one. Other templates are dropped when a new one is made.

Either template is migrated by `manage.py migrate` in a process of its own. On SQLite the
test database lives in memory (Django's shared-cache URI): the template is a file in the
temporary directory, copied into the memory database with SQLite's backup before Django
opens it; a connection held for the session keeps that memory alive.
"""

import fcntl
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from urllib.parse import quote

import django
import psycopg
from django.apps import apps
from django.db import connections

REPOSITORY = Path(__file__).resolve().parents[2]
PREFIX = "goldset_tmpl_"
LOCK = 7_202_612  # the advisory lock the processes take turns with (any fixed number)


def migrations_digest() -> str:
    """A digest of every installed app's migration files and of Django's version."""
    digest = hashlib.sha256(django.__version__.encode())
    for app in sorted(apps.get_app_configs(), key=lambda app: app.label):
        try:
            package = import_module(f"{app.name}.migrations")
        except ModuleNotFoundError:
            continue
        for path in sorted(Path(package.__file__).parent.glob("*.py")):
            digest.update(f"{app.label}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def app_environment(**variables: str) -> dict[str, str]:
    """The environment of a process of the app on its own settings (goldset.settings), with
    `variables` set and none of this process's database or broker: SQLITE_PATH or
    DATABASE_URL then says which database it uses, the embedded default without them."""
    environment = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    return {**environment, "DJANGO_SETTINGS_MODULE": "goldset.settings", **variables}


@contextmanager
def test_database_copied(alias: str = "default") -> Iterator[bool]:
    """Make `alias`'s test database a copy of the migrated template (building the template
    first when this machine has none for these migrations), and keep it for the block:
    True when it was copied, so that Django has nothing to migrate; False, with nothing done,
    where Django's own creation is kept (a SQLite test database in a file)."""
    connection = connections[alias]
    settings = connection.settings_dict
    if connection.vendor != "sqlite":
        _postgresql_copied(settings)
        yield True
    elif (settings["TEST"].get("NAME") or ":memory:") != ":memory:":
        yield False
    else:
        # Django's name for the in-memory test database; this connection keeps it alive.
        memory = sqlite3.connect(f"file:memorydb_{alias}?mode=memory&cache=shared", uri=True, check_same_thread=False)
        try:
            source = sqlite3.connect(sqlite_template())
            try:
                source.backup(memory)
            finally:
                source.close()
            yield True
        finally:
            memory.close()


def _postgresql_copied(settings: dict) -> None:
    test_name = settings["TEST"].get("NAME") or f"test_{settings['NAME']}"  # Django's name for it
    template = PREFIX + migrations_digest()
    with _server(settings) as server:
        server.execute("SELECT pg_advisory_lock(%s)", [LOCK])
        try:
            if not server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone():
                building = f"{template}_building"
                server.execute(f'DROP DATABASE IF EXISTS "{building}"')
                server.execute(f'CREATE DATABASE "{building}"')
                _migrate(DATABASE_URL=_database_url(settings, building))
                server.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
                older = server.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s", [PREFIX.replace("_", r"\_") + "%", template]
                ).fetchall()
                for (name,) in older:
                    server.execute(f'DROP DATABASE IF EXISTS "{name}"')
            server.execute(f'DROP DATABASE IF EXISTS "{test_name}"')
            server.execute(f'CREATE DATABASE "{test_name}" TEMPLATE "{template}"')
        finally:
            server.execute("SELECT pg_advisory_unlock(%s)", [LOCK])


def sqlite_template() -> Path:
    """A migrated SQLite file of the embedded default (built once per machine and migrations,
    whatever database this process uses): copy it to start a process of the embedded
    default with nothing to migrate."""
    template = Path(tempfile.gettempdir()) / f"{PREFIX}{migrations_digest()}.sqlite3"
    with open(template.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if template.exists():
            return template
        building = template.with_suffix(".building")
        for leftover in Path(tempfile.gettempdir()).glob(f"{building.name}*"):
            leftover.unlink()
        _migrate(SQLITE_PATH=str(building))
        whole = sqlite3.connect(building)
        try:  # the write-ahead log folded into the file, which then needs none beside it
            whole.execute("PRAGMA journal_mode=DELETE")
        finally:
            whole.close()
        building.rename(template)
        for other in Path(tempfile.gettempdir()).glob(f"{PREFIX}*.sqlite3"):
            if other != template:
                other.unlink(missing_ok=True)
    return template


def _migrate(**database: str) -> None:
    """`manage.py migrate` of the database `database` names, in a process of its own: the
    one way both templates are built, whatever database this process is on."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=REPOSITORY, env=app_environment(**database), check=True
    )


def _database_url(settings: dict, name: str) -> str:
    """The URL of database `name` on the server of `settings`."""
    user = quote(settings.get("USER") or "", safe="")
    password = quote(settings.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else f"{user}@" if user else ""
    return f"postgres://{credentials}{settings.get('HOST') or '127.0.0.1'}:{settings.get('PORT') or 5432}/{name}"


@contextmanager
def _server(settings: dict):
    """An autocommit connection to the server's `postgres` database (CREATE DATABASE runs
    outside a transaction)."""
    with psycopg.connect(
        dbname="postgres",
        user=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or None,
        port=settings.get("PORT") or None,
        autocommit=True,
    ) as server:
        yield server
