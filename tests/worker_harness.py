"""A real Celery worker for tests: a subprocess on Redis, always killed at the end.

The worker runs `celery -A goldset worker` with the production settings module, pointed
at the test database and at TEST_REDIS_URL, in a process group of its own, so that one
SIGKILL takes down its prefork children too: that is how a test simulates a machine that
dies mid-task, and how teardown makes sure nothing outlives the test.

Each pytest process sends to and consumes from a queue of its own (`session_queue`):
under pytest-xdist two processes share one Redis database but not one test database, and
a worker must never pick up a task whose ids belong to another process's database.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import redis
from django.db import connection

from goldset.celery import app

REPO = Path(__file__).resolve().parent.parent
CELERY = Path(sys.executable).with_name("celery")
READY_TIMEOUT = 60.0  # seconds; a start with warm numba kernels takes about 6

_SESSION_QUEUE = f"goldset-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def session_queue() -> str:
    """The queue this pytest process's workers consume and its tasks are sent to."""
    return _SESSION_QUEUE


def worker_database_url() -> str:
    """A DATABASE_URL for the database the tests run on (pytest-django's test_ database)."""
    db = connection.settings_dict
    credentials = quote(db["USER"], safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"


@dataclass
class Worker:
    """A running `celery worker` process group and the file its output goes to."""

    name: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self) -> None:
        """Return once the worker says it is ready; fail with its log when it exits first or
        takes longer than READY_TIMEOUT. Most of a start is importing Django, ranx and numba."""
        deadline = time.monotonic() + READY_TIMEOUT
        while f"{self.node} ready." not in (log := self.log()):
            if not self.is_alive():
                raise AssertionError(f"worker {self.name} exited with {self.process.returncode} before it was ready:\n{log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.name} not ready after {READY_TIMEOUT:.0f} s:\n{log}")
            time.sleep(0.1)

    @property
    def node(self) -> str:
        """Its node name, as remote control commands address it (`--hostname NAME@%h`)."""
        return f"{self.name}@{socket.gethostname()}"

    def take_queue(self, queue: str) -> None:
        """Make the worker consume `queue` from now on (Celery's add_consumer command)."""
        replies = app.control.add_consumer(queue, destination=[self.node], reply=True, timeout=10)
        if not replies:
            raise AssertionError(f"worker {self.name} did not answer add_consumer({queue!r}):\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL the whole group (main process and pool children) and reap the main process."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)
        # The children are not ours to reap: they are gone once the group is killed, which
        # /proc shows as no process left in the group.
        deadline = time.monotonic() + 10
        while _group_members(self.process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # Fields after the command: state, ppid, pgrp. A zombie has already let go of its memory.
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


@dataclass
class WorkerPool:
    """Starts workers on one broker and queue; `kill_all` is what teardown calls."""

    broker_url: str
    queue: str
    log_dir: Path
    workers: list[Worker] = field(default_factory=list)

    def start(
        self,
        *,
        env: dict[str, str] | None = None,
        wait: bool = True,
        standby: bool = False,
        name: str | None = None,
    ) -> Worker:
        """Start a worker (prefork, one child) and return it once it is ready to take tasks,
        or at once with `wait=False` (then call its `wait_ready`).

        `env` adds or overrides environment variables of the worker, e.g.
        CELERY_BROKER_VISIBILITY_TIMEOUT. A `standby` worker consumes an empty queue of its
        own until `take_queue(pool.queue)`: started early, it is ready the moment a test
        needs it, without the seconds a start costs (most of them importing ranx). `name`
        starts it under a name given before (`--hostname NAME@%h`), as compose, systemd or
        Kubernetes restart a worker under its own name.
        """
        name = name or f"{self.queue}-{len(self.workers) + 1}"
        command = [
            str(CELERY),
            "-A",
            "goldset",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "-Q",
            f"{self.queue}-standby" if standby else self.queue,
            "--loglevel",
            "INFO",
            "--hostname",
            f"{name}@%h",
            # Mingle and gossip talk to the other workers on the broker; these test workers
            # have nothing to learn from them, and mingle alone costs a second a start.
            "--without-mingle",
            "--without-gossip",
        ]
        worker = self._spawn(name, command, env)
        if wait:
            worker.wait_ready()
        return worker

    def start_beat(self, *, env: dict[str, str] | None = None) -> Worker:
        """Start `celery beat` as a deployment runs it, sending its schedule (the sweepers,
        every EVALUATION_SWEEP_SECONDS unless `env` says otherwise) to this pool's queue.
        It is killed with the workers."""
        name = f"{self.queue}-beat"
        schedule = self.log_dir / f"{name}-schedule"
        command = [str(CELERY), "-A", "goldset", "beat", "--loglevel", "INFO", "--schedule", str(schedule)]
        return self._spawn(name, command, env)

    def _spawn(self, name: str, command: list[str], env: dict[str, str] | None) -> Worker:
        log_path = self.log_dir / f"{name}.log"
        if log_path.exists():  # a restart under the same name: the predecessor's log stays
            log_path = self.log_dir / f"{name}-{len(self.workers) + 1}.log"
        process_env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "goldset.settings",
            "DATABASE_URL": worker_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            # goldset.settings put it into this process's environment; the worker reads the same cache.
            "NUMBA_CACHE_DIR": os.environ["NUMBA_CACHE_DIR"],
            "LOG_LEVEL": "INFO",
            **(env or {}),
        }
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command,
                cwd=REPO,
                env=process_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so killpg reaches the pool children
            )
        worker = Worker(name=name, process=process, log_path=log_path)
        self.workers.append(worker)
        return worker

    def kill_all(self) -> None:
        for worker in self.workers:
            worker.kill()

    def logs(self) -> str:
        return "\n".join(f"--- {worker.name} ---\n{worker.log()}" for worker in self.workers)


@contextmanager
def sending_to(broker_url: str, queue: str) -> Iterator[None]:
    """Make this process's Celery app send tasks to `broker_url` and `queue` instead of
    running them in-process, and put it back as it was afterwards.

    The app caches its connection pool and its queues on first use, so both are dropped on
    the way in and on the way out: a send must never reach a broker or queue of before.
    """
    # The app reads Django's settings under the CELERY_ namespace, and those names win over
    # Celery's own lower-case ones, so the change must be made under the same names.
    changed = {
        _setting("task_always_eager"): False,
        _setting("broker_url"): broker_url,
        _setting("task_default_queue"): queue,
    }
    saved = {key: app.conf[key] for key in changed}
    _drop_cached_connections()
    app.conf.update(changed)
    try:
        yield
    finally:
        _drop_cached_connections()
        app.conf.update(saved)


def _setting(name: str) -> str:
    return f"{app.namespace}_{name.upper()}" if app.namespace else name


def _drop_cached_connections() -> None:
    # Not closed: kombu keeps one pool per broker URL for the whole process and would hand
    # the closed one back on the next use of the same URL.
    app._pool = None
    app.__dict__.pop("amqp", None)


def purge_queue(broker_url: str, queue: str) -> None:
    """Delete `queue` and every message of it that Redis holds as delivered but unacknowledged.

    Only this queue's keys go: other sessions may share the database. kombu keeps the
    unacknowledged messages of all queues in one hash, each with its routing key.
    """
    client = redis.Redis.from_url(broker_url)
    try:
        for key in client.scan_iter(match=f"*{queue}*"):
            client.delete(key)
        for tag, payload in client.hscan_iter("unacked"):
            _message, _exchange, routing_key = json.loads(payload)
            if routing_key == queue:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    finally:
        client.close()


def unacknowledged(broker_url: str, queue: str) -> list[dict]:
    """The headers (`task`, `id`, `argsrepr`, ...) of the messages of `queue` that Redis
    holds as delivered to a worker and not yet acknowledged."""
    client = redis.Redis.from_url(broker_url)
    try:
        found = []
        for _tag, payload in client.hscan_iter("unacked"):
            message, _exchange, routing_key = json.loads(payload)
            if routing_key == queue:
                found.append(message["headers"])
        return found
    finally:
        client.close()
