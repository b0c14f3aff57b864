"""The Celery app. Workers warm the scoring's numba kernels at start (see evaluation.warmup).

Without a broker (the embedded default) tasks run in-process. The web process runs them
on one background thread (`tasks_off_request_thread`, called by goldset/wsgi.py) so that
a request answers as soon as its own work commits: run inline, a publish under load took
30 s and a judgment's p99 3 s while the recompute it triggered ran in the request.
Commands and the test suite keep running them inline, where waiting for them is the point.
"""

import functools
import importlib
import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from celery import Celery
from celery.contrib.django.task import DjangoTask
from celery.result import AsyncResult
from django.db import transaction
from kombu.exceptions import OperationalError

# Registers the remote-control command the sweepers ask worker starts by, and draws this
# start's instance id in the main process, before the pool forks (lib.background_jobs).
import lib.background_jobs  # noqa: F401, E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")

logger = logging.getLogger("goldset.tasks")
# One thread, like one worker: tasks run one at a time, in the order sent (SQLite takes
# one writer at a time anyway). None until the web process asks for it.
_background: ThreadPoolExecutor | None = None


def _run_in_background(task: DjangoTask, args, kwargs, options) -> None:
    from django.db import connection

    try:
        task.apply(args=args, kwargs=kwargs, **options)
    except Exception:  # the thread is the worker: log as a worker would, keep serving
        logger.exception("task %s failed", task.name)
    finally:
        connection.close()  # the thread's own connection, opened by the task


class GoldsetTask(DjangoTask):
    """Django's task class (delay_on_commit), sent to the background thread when there is one.

    A task sent on commit follows work that is already committed: a broker that cannot be
    reached then must not turn that success into a 500 (a publish that answered 500 was
    committed, and its retry was told "nothing changed"). The failure is logged and the
    sweepers (beat) send what it left undone once the broker is back.
    """

    def delay_on_commit(self, *args, **kwargs) -> None:
        transaction.on_commit(functools.partial(self._send_committed, args, kwargs))

    def apply_async_on_commit(self, args=None, kwargs=None, **options) -> None:
        transaction.on_commit(functools.partial(self._send_committed, args or (), kwargs or {}, options))

    def _send_committed(self, args, kwargs, options=None) -> None:
        try:
            if options is None:
                self.delay(*args, **kwargs)
            else:
                self.apply_async(args, kwargs, **options)
        except OperationalError as exc:  # kombu's word for a broker that does not answer
            logger.error("broker unreachable: %s%r was not sent (%s); the sweeper sends it later", self.name, tuple(args), exc)

    def apply_async(self, args=None, kwargs=None, task_id=None, **options):
        if _background is not None and self.app.conf.task_always_eager:
            task_id = task_id or str(uuid.uuid4())
            _background.submit(_run_in_background, self, args or (), kwargs or {}, {"task_id": task_id})
            return AsyncResult(task_id, app=self.app)
        return super().apply_async(args, kwargs, task_id=task_id, **options)


def tasks_off_request_thread() -> None:
    """Run in-process tasks on a background thread from now on (the embedded web server)."""
    global _background
    if _background is None:
        _background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="goldset-tasks")


def beat_in_process(*, poll_seconds: float = 5.0, stop: threading.Event | None = None) -> threading.Thread:
    """Run beat's schedule (settings.CELERY_BEAT_SCHEDULE) from a daemon thread of this
    process: on the embedded default there is no beat, yet the sweepers and the monitoring
    tick (nightly runs, canary probes) must run. Each entry is sent when its interval has
    passed, through the same background thread as every other in-process task. Slots are
    unique in the database, so two web processes ticking both still make one run a night.
    """
    from django.conf import settings

    schedule = {name: entry for name, entry in settings.CELERY_BEAT_SCHEDULE.items() if isinstance(entry["schedule"], (int, float))}
    last: dict[str, float] = {}
    # A web process imports only the task modules its requests need: import the schedule's.
    for entry in schedule.values():
        importlib.import_module(entry["task"].rsplit(".", 1)[0])

    stop = stop or threading.Event()  # set by a caller that must end it (a test)

    def loop() -> None:
        import time

        from django.db import connection

        try:
            while not stop.is_set():
                now = time.monotonic()
                for name, entry in schedule.items():
                    if now - last.get(name, -float("inf")) >= entry["schedule"]:
                        last[name] = now
                        try:
                            app.tasks[entry["task"]].delay()
                        except Exception:  # a beat that stops on one error would stop every schedule
                            logger.exception("in-process beat: %s could not be sent", name)
                stop.wait(poll_seconds)
        finally:
            connection.close()  # the thread's own, opened by a task that ran here

    thread = threading.Thread(target=loop, name="goldset-beat", daemon=True)
    thread.start()
    return thread


def tasks_inline() -> None:
    """Back to running in-process tasks where they are sent, after the ones queued finish."""
    global _background
    executor, _background = _background, None  # tasks the queued ones send now run inline
    if executor is not None:
        executor.shutdown(wait=True)


app = Celery("goldset", task_cls=GoldsetTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
