"""The one `golden_set` fixture and the `background_tasks` fixture, registered for every test
by tests/conftest.py."""

import copy
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
from celery.signals import task_prerun
from django.db import connection, transaction

from goldset.celery import tasks_inline, tasks_off_request_thread
from tests.support import factories

T = TypeVar("T")


@pytest.fixture
def golden_set(request, db):
    """A golden set made by `factories.golden_set`, with the options of the `golden_set` marker.

    Without a marker it is the tiny set: slug "tiny", queries q1-q3 over pages d1-d5, labels
    q1-d1 2, q1-d2 0, q2-d3 1, no manager. A marker on the test, its class or its module
    (`pytestmark`) passes keyword options through to the factory::

        pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("forms", manager="owner", qrels={("q1", "d1"): 2})]

        @pytest.mark.golden_set(queries=factories.queries("q1", "q2", "q3", lang="en"), query_slice_fields=["lang"])
        def test_...(golden_set): ...

    - The first positional argument, or `slug=`, is the set's slug.
    - `manager="owner"` names a fixture: that fixture's user is made manager of the set.
    - `factory="alerting_set"` (or "sliced_set") builds with that factory of
      tests.support.factories instead, passing it the other options.
    - Any other option (`qrels`, `pages`, `queries`, `k_first`, `query_slice_fields`, ...) goes
      to the factory as it is; each test gets its own copy, so a test that changes one leaves
      the next test's set as written.

    Markers nearer the test win option by option: a test's marker overrides its module's.

    A module that needs more (runs, a published version) overrides it under the same name and
    adds to it: `def golden_set(golden_set): version_publish(golden_set=golden_set); return golden_set`.
    """
    options: dict = {}
    for marker in reversed(list(request.node.iter_markers("golden_set"))):  # module first, the test last
        if marker.args:
            (options["slug"],) = marker.args
        options.update(marker.kwargs)
    options = copy.deepcopy(options)
    make = getattr(factories, options.pop("factory", "golden_set"))
    manager = options.pop("manager", None)
    if isinstance(manager, str):
        manager = request.getfixturevalue(manager)
    return make(manager=manager, **options)


def kept_for_the_module(request, django_db_blocker, build: Callable[[], T]) -> Iterator[T]:
    """What `build()` makes in the database, made once for a module's tests instead of once
    per test: the body of a module-scoped fixture, which yields from it::

        @pytest.fixture(scope="module")
        def admin_data(request, django_db_setup, django_db_blocker):
            yield from kept_for_the_module(request, django_db_blocker, build)

        @pytest.fixture
        def data(admin_data, db):
            return copy.deepcopy(admin_data)  # as Django's setUpTestData gives each test

    The rows are written in a transaction held open for the module and rolled back at its
    end, so the other modules still start from an empty database. Each test's own
    transaction (pytest-django's `db`) nests inside it as a savepoint, so a test sees the
    rows as built whatever an earlier test of the module wrote; a deep copy keeps a test's
    changes to instances in memory from the next. The deferred foreign keys of the build are
    checked once, here; left pending, they would be checked again at the end of every test.

    `build` cannot use a test's fixtures (`owner`, `make_user`): it makes its own users. A
    test marked django_db(transaction=True) would empty the tables under the open
    transaction: a module with one is refused.
    """
    transactional = [
        item.name
        for item in request.session.items
        if item.module is request.module and any(m.kwargs.get("transaction") for m in item.iter_markers("django_db"))
    ]
    if transactional:
        raise pytest.UsageError(f"{request.module.__name__} keeps rows for the module beside transactional tests: {transactional}")
    with django_db_blocker.unblock(), transaction.atomic():
        try:
            built = build()
            connection.check_constraints()
            yield built
        finally:
            transaction.set_rollback(True)


@dataclass
class BackgroundTasks:
    """The in-process tasks sent during a test, run on the web server's background thread."""

    started: list[tuple[str, str]] = field(default_factory=list)  # (task name, thread name), as each reaches it
    arrived: threading.Event = field(default_factory=threading.Event)  # a task is waiting to start
    may_start: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        """Let the waiting tasks, and the ones sent after, run."""
        self.may_start.set()


@pytest.fixture
def background_tasks() -> Iterator[BackgroundTasks]:
    """Tasks sent from now on run on the background thread, as under the embedded default's
    web server (goldset.celery.tasks_off_request_thread), and wait there to start, holding
    no database lock, until the test calls `release()`; the queue is drained at the end.

    Held because the test's requests and the thread's tasks must not overlap on SQLite: its
    test database lives in memory, its connections sharing one cache, where a write that
    meets another connection's read fails at once ("database table is locked": a publish
    task claiming its job while the request that sent it still read, once in CI) instead of
    waiting, as on the file the embedded default serves, whose readers never block its
    writer (WAL). A test that needs the tasks before its next request releases them and
    calls tasks_inline(), which waits for the queue to drain."""
    tasks = BackgroundTasks()

    def hold(**kwargs):
        tasks.started.append((kwargs["task"].name, threading.current_thread().name))
        tasks.arrived.set()
        assert tasks.may_start.wait(timeout=60), "the test never let the tasks start"

    task_prerun.connect(hold, weak=False)
    tasks_off_request_thread()
    try:
        yield tasks
    finally:
        tasks.release()
        tasks_inline()
        task_prerun.disconnect(hold)
