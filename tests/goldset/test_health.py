"""/healthz and /readyz, served as a deployment serves them: under gunicorn, in a process of
its own, reaching PostgreSQL and Redis through TCP forwarders this test owns.

The outages are real ones on the path: closing a forwarder closes its listening socket and
every connection through it, so the app sees connections refused and cut, as during a
restart of PostgreSQL or Redis, while the machine's own servers, which other suites use,
keep running. Reopening the forwarder on the same port is the service coming back.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest
import requests
from django.conf import settings

from tests.support.forwarder import Forwarder, free_port

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# So that pytest-django creates and migrates the test database the app is pointed at.
pytestmark = pytest.mark.django_db


def upstream(url: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or default_port


def with_port(url: str, port: int, path: str | None = None) -> str:
    parsed = urlparse(url)
    netloc = f"{parsed.username}@127.0.0.1:{port}" if parsed.username else f"127.0.0.1:{port}"
    return parsed._replace(netloc=netloc, path=path if path is not None else parsed.path).geturl()


def start_app(database_url: str, broker_url: str):
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "goldset.settings",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
    }
    # A file, not a pipe nobody reads: with the database cut, the tracebacks would fill a pipe
    # and block the server mid-request.
    log = tempfile.NamedTemporaryFile(prefix="goldset-health-", suffix=".log", delete=False)
    with log:
        server = subprocess.Popen(
            [str(GUNICORN), "goldset.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server.log_path = log.name
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(base + "/healthz", timeout=30)
            return server, base
        except (requests.ConnectionError, requests.Timeout):
            assert server.poll() is None, Path(server.log_path).read_text()
            time.sleep(0.2)
    server.terminate()
    raise AssertionError("gunicorn did not answer within 60 s")


def stop_app(server) -> None:
    server.terminate()
    server.wait(timeout=20)
    os.unlink(server.log_path)


@pytest.fixture(scope="module")
def services(django_db_setup):
    """(app URL, database forwarder, broker forwarder): the app on the migrated test database."""
    if not settings.POSTGRES_AVAILABLE or not settings.REDIS_AVAILABLE:
        pytest.skip("needs PostgreSQL and Redis (TEST_DATABASE_URL, TEST_REDIS_URL)")
    from django.db import connection

    database = Forwarder(upstream(settings.TEST_DATABASE_URL, 5432))
    broker = Forwarder(upstream(settings.TEST_REDIS_URL, 6379))
    database.open()
    broker.open()
    database_url = with_port(settings.TEST_DATABASE_URL, database.port, "/" + connection.settings_dict["NAME"])
    server, base = start_app(database_url, with_port(settings.TEST_REDIS_URL, broker.port))
    try:
        yield base, database, broker
    finally:
        stop_app(server)
        database.close()
        broker.close()


def readyz(base: str) -> requests.Response:
    return requests.get(base + "/readyz", timeout=30)


def test_readyz_is_200_naming_each_check_when_everything_answers(services):
    base, _, _ = services
    response = readyz(base)
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "migrations": "ok"}}


def test_readyz_is_503_while_postgresql_is_away_and_200_after(services):
    base, database, _ = services
    database.close()
    try:
        down = readyz(base)
        assert down.status_code == 503
        checks = down.json()["checks"]
        assert checks["database"].startswith("failing: OperationalError")
        assert checks["broker"] == "ok"
        # healthz touches no database: the process still answers it.
        assert requests.get(base + "/healthz", timeout=30).status_code == 200
    finally:
        database.open()
    back = readyz(base)
    assert back.status_code == 200, back.text


def test_readyz_is_503_while_redis_is_away_and_200_after(services):
    base, _, broker = services
    broker.close()
    try:
        down = readyz(base)
        assert down.status_code == 503
        checks = down.json()["checks"]
        assert checks["broker"].startswith("failing:") and checks["database"] == "ok"
    finally:
        broker.open()
    back = readyz(base)
    assert back.status_code == 200, back.text


def test_readyz_is_503_naming_the_migrations_a_database_lacks(services):
    """A database nobody migrated: it answers, but the code's schema is not there."""
    admin_url = settings.TEST_DATABASE_URL
    name = "goldset_ops_unmigrated"
    with psycopg.connect(with_port(admin_url, upstream(admin_url, 5432)[1], "/postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    server, base = start_app(with_port(admin_url, upstream(admin_url, 5432)[1], "/" + name), "")
    try:
        response = readyz(base)
        assert response.status_code == 503
        checks = response.json()["checks"]
        assert checks["database"] == "ok" and checks["broker"] == "in-process"
        assert "not applied" in checks["migrations"] and "manage.py migrate" in checks["migrations"]
    finally:
        stop_app(server)
        with psycopg.connect(with_port(admin_url, upstream(admin_url, 5432)[1], "/postgres"), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


def test_healthz_and_readyz_need_no_login_and_never_redirect(services):
    base, _, _ = services
    for path in ("/healthz", "/readyz"):
        response = requests.get(base + path, timeout=30, allow_redirects=False, cookies={"sessionid": "x" * 32})
        assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
        assert "no-cache" in response.headers["Cache-Control"]


def test_healthz_takes_no_post(services):
    base, _, _ = services
    assert requests.post(base + "/healthz", timeout=30).status_code in (403, 405)  # CSRF may answer first
