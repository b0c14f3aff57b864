"""Fixtures shared by every test: people with roles, data made through the real services."""

import gc
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from threadpoolctl import threadpool_limits

from tests.browser import browser, browser_page  # noqa: F401 - shared browser fixtures
from tests.support.fixtures import background_tasks, golden_set  # noqa: F401 - shared fixtures (golden_set's marker: pytest.ini)

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def pytest_report_header(config):
    return settings.SERVICES_LINE


def pytest_configure(config):
    # A test process holds Django, numba and the test modules: hundreds of thousands of
    # objects that live as long as it does, which each full collection of Python's garbage
    # collector walked again (about a tenth of a typical module's CPU at the default
    # thresholds). Collections are rarer here, and what collection leaves is frozen out of
    # them (below).
    gc.set_threshold(50_000, 20, 100)
    # One BLAS thread a test process. The suite runs more processes than cores (xdist), and
    # numpy's OpenBLAS starts a thread a core in each, whose waits spin: the model tests took
    # about 40% more CPU with two threads than with one, for the same wall time. numpy is
    # loaded by then (pytest's plugins import it), so OPENBLAS_NUM_THREADS would come too late.
    threadpool_limits(limits=1, user_api="blas")
    # Browser tests save screenshots to GOLDSET_SCREENSHOTS when it is set (make test sets it).
    screenshots = os.environ.get("GOLDSET_SCREENSHOTS")
    if screenshots:
        Path(screenshots).mkdir(parents=True, exist_ok=True)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


# pytest-django's fixtures that give a test the database: db and transactional_db, which its
# other database fixtures ask for, and live_server, which asks for transactional_db only once
# the test runs (the django_db marker gives it too).
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "live_server"})


def reaches_a_database(item: pytest.Item) -> bool:
    """Whether `item` may use the test database: marked django_db or asking for a fixture
    that gives it (the suite has no Django TestCase classes). pytest-django refuses database
    access to any other test, so a test it says no to runs the same code whichever database
    the suite is given."""
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test that reaches a database is marked `database`: what `make test-sqlite` runs
    again on the embedded default (pytest.ini).

    The tests of a module that share a module-scoped fixture (a loaded demo, a server) run
    in one xdist process, which builds it once: the Makefile's --dist loadgroup hands out
    every other test one by one. A test already in a group (tests/support/marks.py) stays in
    it."""
    for item in items:
        if reaches_a_database(item):
            item.add_marker(pytest.mark.database)
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is None or item.get_closest_marker("xdist_group"):
            continue
        if any(definitions[-1].scope == "module" for definitions in fixtures.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or a clean skip where it is absent (a clone outside the workplace)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public test data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """pytest-django's test database set-up, with the database copied from a migrated
    template (tests/support/migrated.py) so that Django finds nothing to migrate; destroyed
    at the end as before. No test asks for serialized_rollback, so nothing is serialized."""
    from django.test.utils import setup_databases, teardown_databases

    from tests.support.migrated import test_database_copied

    verbosity = request.config.option.verbose
    with test_database_copied() as copied:
        with django_db_blocker.unblock():
            config = setup_databases(verbosity=verbosity, interactive=False, keepdb=copied, serialized_aliases=set())
        yield
        with django_db_blocker.unblock():
            teardown_databases(config, verbosity=verbosity)


@pytest.fixture
def make_user(db):
    def make(username: str, **extra):
        return get_user_model().objects.create_user(username=username, password="pw-" + username, **extra)

    return make


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def teammate(make_user):
    return make_user("teammate")


@pytest.fixture
def stranger(make_user):
    return make_user("stranger")


@pytest.fixture(autouse=True, scope="session")
def _the_test_flush_deletes_rows():
    """How a transactional test empties the tables after it (Django's flush), made cheap and
    let past the immutability triggers, for the test database only.

    PostgreSQL: Django's TRUNCATE of every table cost 0.45 s a test (a new file for each of
    some 150 tables and their indexes), 128 tests of the fast suite; a DELETE of the few rows
    a test leaves costs a few milliseconds. The DELETEs run with triggers off
    (session_replication_role, for this transaction only), as TRUNCATE passes the triggers
    that refuse to delete published history, and in any order (foreign keys are triggers).
    SQLite: its flush is DELETE already, which the audit trail's trigger refuses (migration
    0021): that trigger, and only it, is dropped first and made again.

    Both: the content types and permissions are the installation's, not a test's (migrate
    made them in the template; no test adds or removes one). Django's flush deleted them and
    its post_migrate signal wrote them all again, new ids and some 200 rows, after every
    transactional test: they are kept, and the signal runs again only if their number
    changed since the first flush."""
    import importlib

    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.core.management.commands import flush as flush_command
    from django.db import connection

    audit = importlib.import_module("goldenset.migrations.0021_audit_records")
    operations = type(connection.ops)
    flush = operations.sql_flush
    emit_post_migrate_signal = flush_command.emit_post_migrate_signal
    installation = {ContentType._meta.db_table, Permission._meta.db_table}
    installed = {}  # database: its (content types, permissions), counted at its first flush

    def post_migrate_if_missing(verbosity, interactive, database, **kwargs):
        counts = (ContentType.objects.using(database).count(), Permission.objects.using(database).count())
        if installed.setdefault(database, counts) != counts:
            emit_post_migrate_signal(verbosity, interactive, database, **kwargs)

    def postgresql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        tables = [table for table in tables if table not in installation]
        if not tables or reset_sequences:  # no test resets sequences: Django's own way then
            return flush(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        # One round trip: psycopg's client-side cursor, which Django uses, sends a string of
        # statements without parameters as one query.
        deletes = " ".join(f"DELETE FROM {self.quote_name(table)};" for table in tables)
        return [f"SET LOCAL session_replication_role = replica; {deletes}"]

    def sqlite_flush(self, style, tables, **kwargs):
        statements = flush(self, style, [table for table in tables if table not in installation], **kwargs)
        if not statements or audit.TABLE not in tables:
            return statements
        return [f"DROP TRIGGER IF EXISTS {audit.TABLE}_undeletable;", *statements, audit.SQLITE_UNDELETABLE]

    operations.sql_flush = postgresql_flush if connection.vendor == "postgresql" else sqlite_flush
    flush_command.emit_post_migrate_signal = post_migrate_if_missing
    yield
    operations.sql_flush = flush
    flush_command.emit_post_migrate_signal = emit_post_migrate_signal


@pytest.fixture(autouse=True, scope="session")
def _one_middleware_chain_a_process():
    """Test clients share the middleware chain the first one loaded, until a setting changes.

    Django's test Client loads the whole MIDDLEWARE stack anew for each client, that is for
    most tests; WhiteNoise's part of it lists and stats every static file the finders know
    (WHITENOISE_USE_FINDERS), which made it the most expensive step of a typical page test.
    A server process loads the chain once, as this does. The chain is stateless between
    requests (each middleware keeps only the next callable), and a changed setting (the
    `settings` fixture, override_settings) drops it, since middleware read settings when made."""
    from django.core.signals import setting_changed
    from django.test.client import AsyncClientHandler, ClientHandler

    loaded: dict[tuple[type, bool], tuple] = {}
    parts = ("_view_middleware", "_template_response_middleware", "_exception_middleware", "_middleware_chain")
    handlers = (ClientHandler, AsyncClientHandler)
    load = ClientHandler.load_middleware  # BaseHandler's, which both inherit

    def load_middleware(self, is_async=False):
        key = (type(self), is_async)
        if key not in loaded:
            load(self, is_async)
            loaded[key] = tuple(getattr(self, part) for part in parts)
        else:
            for part, value in zip(parts, loaded[key]):
                setattr(self, part, value)

    def forget(**kwargs):
        loaded.clear()

    setting_changed.connect(forget, weak=False)
    for handler in handlers:
        handler.load_middleware = load_middleware
    yield
    for handler in handlers:
        del handler.load_middleware
    setting_changed.disconnect(forget)
