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

On SQLite the test database lives in memory (Django's shared-cache URI): the template is a
file in the temporary directory, copied into the memory database with SQLite's backup
before Django opens it; a connection held for the session keeps that memory alive.
"""

import fcntl
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path

import django
import psycopg
from django.apps import apps
from django.core.management import call_command
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


def test_database_from_template(alias: str = "default") -> object | None:
    """Make `alias`'s test database a copy of the migrated template (building the template
    first when this machine has none for these migrations). What must stay open while the
    test database lives (the SQLite connection holding its memory; True on PostgreSQL), or
    None, with nothing done, where Django's own creation is kept (a SQLite test database
    in a file)."""
    connection = connections[alias]
    if connection.vendor == "sqlite":
        return _sqlite_memory_from_template(connection)
    settings = connection.settings_dict
    test_name = settings["TEST"].get("NAME") or f"test_{settings['NAME']}"
    template = PREFIX + migrations_digest()
    with _server(settings) as server:
        server.execute("SELECT pg_advisory_lock(%s)", [LOCK])
        try:
            exists = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone()
            if not exists:
                _build(server, connection, template)
            server.execute(f'DROP DATABASE IF EXISTS "{test_name}"')
            server.execute(f'CREATE DATABASE "{test_name}" TEMPLATE "{template}"')
        finally:
            server.execute("SELECT pg_advisory_unlock(%s)", [LOCK])
    return True


def _sqlite_memory_from_template(connection) -> sqlite3.Connection | None:
    if (connection.settings_dict["TEST"].get("NAME") or ":memory:") != ":memory:":
        return None
    test_name = f"file:memorydb_{connection.alias}?mode=memory&cache=shared"  # Django's name for it
    memory = sqlite3.connect(test_name, uri=True, check_same_thread=False)
    source = sqlite3.connect(sqlite_template())
    try:
        source.backup(memory)
    finally:
        source.close()
    return memory


def sqlite_template() -> Path:
    """A migrated SQLite file of the embedded default (built once per machine and migrations
    by `manage.py migrate` in a process of its own, whatever database this process uses):
    copy it to start a process of the embedded default with nothing to migrate."""
    template = Path(tempfile.gettempdir()) / f"{PREFIX}{migrations_digest()}.sqlite3"
    with open(template.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if template.exists():
            return template
        building = template.with_suffix(".building")
        for leftover in Path(tempfile.gettempdir()).glob(f"{building.name}*"):
            leftover.unlink()
        environment = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "CELERY_BROKER_URL")}
        environment.update(DJANGO_SETTINGS_MODULE="goldset.settings", SQLITE_PATH=str(building))
        subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=REPOSITORY, env=environment, check=True)
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


def _build(server, connection, template: str) -> None:
    building = f"{template}_building"
    server.execute(f'DROP DATABASE IF EXISTS "{building}"')
    server.execute(f'CREATE DATABASE "{building}"')
    with _pointed_at(connection, building):
        call_command("migrate", verbosity=0, interactive=False, database=connection.alias)
    server.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
    older = server.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s", [PREFIX.replace("_", r"\_") + "%", template]
    ).fetchall()
    for (name,) in older:
        server.execute(f'DROP DATABASE IF EXISTS "{name}"')


@contextmanager
def _pointed_at(connection, name: str):
    """`connection` using database `name` for a while, as Django's own test database
    creation points it."""
    original = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original


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
