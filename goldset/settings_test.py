"""Settings for the test suite: the real services whenever they answer.

PostgreSQL (TEST_DATABASE_URL, default the machine's local server) and Redis
(TEST_REDIS_URL) are probed once at start. Without them the suite falls back to SQLite
and in-process tasks and says so in one line; under CI (CI=true) that fallback is an
error, because CI must test what production runs.
"""

import os
import socket
import tempfile
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from goldset.settings import *  # noqa: F403
from goldset.settings import postgresql_options, sqlite_database

TEST_DATABASE_URL = os.environ.get("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/goldset")
TEST_REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _answers(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or default_port), timeout=1):
            return True
    except OSError:
        return False


# TEST_DATABASE_URL=sqlite asks for the embedded default on purpose (make test-sqlite, the
# second leg of .ci/run): SQLite is then chosen, not fallen back to.
ON_SQLITE = TEST_DATABASE_URL.startswith("sqlite")
_SQLITE_FILE = os.path.join(tempfile.gettempdir(), "goldset-test.sqlite3")
if ON_SQLITE:
    TEST_DATABASE_URL = f"sqlite:///{_SQLITE_FILE}"  # a URL like any other, for what starts a process of its own
POSTGRES_AVAILABLE = not ON_SQLITE and _answers(TEST_DATABASE_URL, 5432)
REDIS_AVAILABLE = _answers(TEST_REDIS_URL, 6379)
IN_CI = os.environ.get("CI", "").lower() == "true"

if POSTGRES_AVAILABLE:
    DATABASES = {"default": postgresql_options(dj_database_url.parse(TEST_DATABASE_URL))}
else:
    if IN_CI and not ON_SQLITE:
        raise ImproperlyConfigured(f"CI=true but PostgreSQL does not answer at {TEST_DATABASE_URL}")
    DATABASES = {"default": sqlite_database(_SQLITE_FILE)}
if IN_CI and not REDIS_AVAILABLE:
    raise ImproperlyConfigured(f"CI=true but Redis does not answer at {TEST_REDIS_URL}")

SERVICES_LINE = (
    f"services: database {'PostgreSQL ' + TEST_DATABASE_URL if POSTGRES_AVAILABLE else 'SQLite (the embedded default, as asked)' if ON_SQLITE else 'SQLite (PostgreSQL not answering: fallback)'}; "
    f"task broker {'Redis ' + TEST_REDIS_URL if REDIS_AVAILABLE else 'none (Redis not answering: tasks run in-process)'}"
)

# Most tests run tasks in-process; the task tests start a real worker on TEST_REDIS_URL.
CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = True
# The tests read what a task wrote right after sending it: inline, even through goldset.wsgi
# (tests/hardening/test_embedded_tasks.py runs the background thread).
TASKS_OFF_REQUEST_THREAD = False
BEAT_IN_PROCESS = False  # tests send the tick themselves
# Large run uploads wait here for their job, not in the repository (the tests that follow
# a spooled file point it at their own tmp_path).
RUN_UPLOAD_SPOOL = os.path.join(tempfile.gettempdir(), "goldset-test-spool")
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# The fuzzing and load tests send thousands of API requests a minute: the throttle's own
# test sets the deployment's rates back (tests/hardening/test_throttling.py).
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "100000/minute", "user": "100000/minute"}}  # noqa: F405
# The permission and fuzzing tests present unknown tokens by the hundred from one address;
# the guessing limit's own test sets the deployment's rate back.
API_TOKEN_GUESS_RATE = "100000/minute"
# The endpoint tests' engines are real servers on 127.0.0.1, where an operator would let
# the worker send their secrets (lib.outbound.secret_host_problem); the binding's own tests
# take the allowance away. Set in the environment, so that test workers inherit it too.
for _variable in ("SEARCH_TOKEN", "SEARCH_API_KEY", "SEARCH_BASIC", "SEARCH_HOUSE_KEY", "SEARCH_SESSION", "JUDGE_TEST_KEY", "JUDGE_LOCAL"):
    os.environ.setdefault(f"{_variable}_HOSTS", "127.0.0.1,localhost")

# The alert tests' webhook receivers are real servers on 127.0.0.1, allowed as a deployment
# would allow its own internal receiver; the SSRF tests take the allowance away.
ALERT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
