"""Finding 9 of the hardening probe: a database restart showed 993 plain "Server Error (500)"
pages. A database that does not answer is an outage that passes: 503 with Retry-After, a
page that says so, and the API's error shape.

The app runs as a deployment runs it, under gunicorn, with DATABASE_URL pointing at a
PostgreSQL port where nothing listens: every connection is refused, as during a restart."""

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def app_without_database():
    port, dead_database = free_port(), free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "goldset.settings",
        "DEBUG": "false",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{dead_database}/goldset",
        "ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": "",
    }
    # The server's log goes to a file: a pipe nobody reads fills up with the failing
    # sweepers' tracebacks (64 kB) and then blocks the worker in the middle of a request.
    log = tempfile.TemporaryFile()
    server = subprocess.Popen(
        [str(GUNICORN), "goldset.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                requests.get(base + "/accounts/login/", timeout=30)  # the first request loads the app
                break
            except (requests.ConnectionError, requests.Timeout):
                if server.poll() is not None:
                    log.seek(0)
                    raise AssertionError(log.read().decode(errors="replace")[-5000:]) from None
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def test_a_page_that_needs_the_database_answers_503_with_retry_after(app_without_database):
    response = requests.get(app_without_database + "/", cookies={"sessionid": "a" * 32}, timeout=10, allow_redirects=False)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "30"
    assert "Back in a moment" in response.text and "nothing you sent was lost" in response.text


def test_the_api_answers_503_in_its_error_shape(app_without_database):
    response = requests.get(app_without_database + "/api/v1/golden-sets/", headers={"Authorization": "Bearer gs_" + "x" * 40}, timeout=10)
    assert response.status_code == 503 and response.headers["Retry-After"] == "30"
    assert response.json()["error"]["code"] == "service_unavailable"


def test_an_htmx_request_gets_the_503_too(app_without_database):
    response = requests.post(
        app_without_database + "/label/demo/",
        headers={"HX-Request": "true"},
        cookies={"sessionid": "b" * 32},
        timeout=10,
        allow_redirects=False,
    )
    assert response.status_code in (403, 503)  # CSRF may refuse first; it never becomes a 500
    response = requests.get(
        app_without_database + "/label/demo/",
        headers={"HX-Request": "true"},
        cookies={"sessionid": "b" * 32},
        timeout=10,
        allow_redirects=False,
    )
    assert response.status_code == 503 and response.headers["Retry-After"] == "30"
