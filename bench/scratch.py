"""What every bench script needs around what it measures: a PostgreSQL database of its
own, Django pointed at it, a broker queue of its own, and the server or worker it started
stopped afterwards.

    from bench.scratch import django_setup, scratch_database

    django_setup(args.database_url)
    with scratch_database(args.database_url, keep=args.keep):
        call_command("migrate", verbosity=0)
        ...

A bench only ever drops a database it created: `scratch_database` refuses one that
already exists, and drops its own on the way out, even when a step fails.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg
import requests

SERVED_SETTINGS_TEMPLATE = '''"""Written by a bench for one run: {base}, static files collected into a
temporary folder (STATIC_ROOT is not read from the environment)."""
from {base} import *  # noqa: F403

STATIC_ROOT = {static_root!r}
'''

from psycopg import sql  # noqa: E402  (the script writes its settings module above first)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def database_url_argument(parser: argparse.ArgumentParser, name: str) -> None:
    """Add --database-url: the database a bench creates, uses and drops (scratch_database),
    `name` on the local PostgreSQL server unless told otherwise."""
    parser.add_argument(
        "--database-url",
        default=f"postgres://postgres@127.0.0.1:5432/{name}",
        help="PostgreSQL database to create, use and drop; it must not exist beforehand",
    )


def django_setup(database_url: str, **environ: str) -> None:
    """Set Django up on goldset.settings with the database of `database_url` and the other
    variables the settings read given in `environ` (CELERY_BROKER_URL=..., say)."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    os.environ.update(environ)
    import django

    django.setup()


def server_version() -> str:
    """The PostgreSQL version of the database Django is connected to, as its reports print it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version')")
        return cursor.fetchone()[0]


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


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, for a server of the bench."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def process_started(
    command: list[str],
    *,
    env: dict[str, str],
    log_path: Path,
    ready: Callable[[], bool],
    what: str,
    timeout: float = 120,
):
    """Run `command` from the repository in a process group of its own, its output
    appended to `log_path`, and yield its Popen once `ready()` is true (asked every
    0.2 s); stopped with stop_process_group on the way out. SystemExit with the end of
    the log when it exits first or is not ready within `timeout` seconds."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so one signal reaches its workers too
        )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if process.poll() is not None:
                raise SystemExit(f"{what} exited with {process.returncode}:\n{log_path.read_text(errors='replace')[-5000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} did not answer in {timeout:.0f} s:\n{log_path.read_text(errors='replace')[-5000:]}")
            time.sleep(0.2)
        yield process
    finally:
        stop_process_group(process)


@contextmanager
def gunicorn_started(database_url: str, log_path: Path, *, timeout: int = 600):
    """gunicorn with one sync worker on 127.0.0.1 (DEBUG off, worker timeout `timeout` s),
    in a process group of its own; yields (base URL, worker pid) once it answers; stopped
    (TERM, then KILL) on the way out."""
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "goldset.settings", "DATABASE_URL": database_url, "DEBUG": "false"}
    command = [
        str(Path(sys.executable).with_name("gunicorn")),
        "goldset.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--worker-class",
        "sync",
        "--timeout",
        str(timeout),
    ]
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            requests.get(base + "/api/schema/", timeout=120)  # the worker loads the app first
            return True
        except requests.ConnectionError:
            return False

    with process_started(command, env=env, log_path=log_path, ready=answers, what="gunicorn") as process:
        [worker] = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        yield base, int(worker)


def peak_memory(pid: int) -> int:
    """VmHWM of process `pid`, in bytes: its peak resident memory so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmHWM for process {pid}")


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


def redis_keys_delete(url: str, match: str = "*") -> None:
    """Delete the keys of the Redis database at `url` that `match` (a glob; all by default)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=match, count=1000))
        for start in range(0, len(keys), 1000):  # a round trip a thousand keys, not a key
            client.delete(*keys[start : start + 1000])
    finally:
        client.close()


def purge_queue(broker_url: str, queue: str) -> None:
    """Delete the Redis keys of a bench's own Celery queue (before and after a run)."""
    redis_keys_delete(broker_url, f"*{queue}*")


def version_labels_copy(version_id: int, select: str = "q.query_id, p.doc_id, l.grade") -> str:
    """The plain reference for exporting a version's labels: COPY of the rows straight out
    of PostgreSQL in their canonical order, `select` of each (query q, page p, label l).
    bench/import_export.py and bench/export.py both compare Goldset's export with it."""
    return f"""
COPY (
    SELECT {select}
    FROM goldenset_versionlabel l
    JOIN goldenset_query q ON q.id = l.query_id
    JOIN goldenset_page p ON p.id = l.page_id
    WHERE l.version_id = {int(version_id)}
    ORDER BY l.position
) TO STDOUT
"""


def served_settings(
    temp: Path, env: dict[str, str], *, base: str = "goldset.settings_production", name: str = "bench_served_settings"
) -> dict[str, str]:
    """`env` made to serve the app as a deployment does (DEBUG off, whitenoise serving
    collected static files): a settings module `name` in `temp` importing `base` with
    STATIC_ROOT in `temp`, on PYTHONPATH, and `collectstatic` run with it. Returns the
    environment to start gunicorn with."""
    (temp / f"{name}.py").write_text(SERVED_SETTINGS_TEMPLATE.format(base=base, static_root=str(temp / "static")))
    env = {
        **env,
        "PYTHONPATH": os.pathsep.join([str(temp), str(REPO)]),
        "DJANGO_SETTINGS_MODULE": name,
        "DEBUG": "false",
    }
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    return env
