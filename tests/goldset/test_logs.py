"""Log lines: time, level and logger on every one; LOG_FORMAT=json one JSON object a line
with the ids of the request (request id, user, golden set, version) or of the task (run,
version) it was written for."""

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from goldset.celery import app
from goldset.logs import ContextFilter, JsonFormatter

ROOT = Path(__file__).resolve().parents[2]
LOG_SCRIPT = "import logging; logging.getLogger('goldset.probe').warning('the probe speaks')"


def log_in_fresh_process(**env: str) -> str:
    """stderr of manage.py shell logging one warning, under goldset.settings and `env`."""
    clean = {name: value for name, value in os.environ.items() if name not in ("LOG_FORMAT", "DJANGO_SETTINGS_MODULE")}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", LOG_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "goldset.settings", **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_a_text_line_says_its_time_level_and_logger():
    [line] = [line for line in log_in_fresh_process().splitlines() if "the probe speaks" in line]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING goldset\.probe: the probe speaks", line), line


def test_log_format_json_writes_one_object_a_line():
    [line] = [line for line in log_in_fresh_process(LOG_FORMAT="json").splitlines() if "the probe speaks" in line]
    record = json.loads(line)
    assert record["level"] == "WARNING" and record["logger"] == "goldset.probe" and record["message"] == "the probe speaks"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", record["time"])


def test_an_unknown_log_format_stops_the_start():
    clean = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "goldset.settings", "LOG_FORMAT": "xml"},
    )
    assert result.returncode != 0 and "LOG_FORMAT='xml'" in result.stderr


@pytest.fixture
def json_lines():
    """The JSON lines every logger writes while the test runs, as the deployment's handler writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    previous, root.level = root.level, logging.INFO
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        root.level = previous


@pytest.mark.django_db
def test_a_request_line_carries_the_request_id_user_golden_set_and_version(client, owner, json_lines):
    client.force_login(owner)
    response = client.get("/sets/no-such-set/versions/3/", HTTP_X_REQUEST_ID="req-42")
    assert response.status_code == 404
    assert response["X-Request-ID"] == "req-42"
    [line] = [line for line in json_lines() if line["logger"] == "django.request"]
    assert line["request_id"] == "req-42" and line["user"] == owner.pk
    assert line["golden_set"] == "no-such-set" and line["version"] == 3


@pytest.mark.django_db
def test_a_request_without_a_sane_id_gets_a_fresh_one(client, json_lines):
    response = client.get("/no/such/page/", HTTP_X_REQUEST_ID="bad id\nforged line")
    [line] = [line for line in json_lines() if line["logger"] == "django.request"]
    assert re.fullmatch(r"[0-9a-f]{32}", line["request_id"]) and line["request_id"] == response["X-Request-ID"]
    assert "user" not in line  # anonymous


@app.task(name="tests.goldset.test_logs.log_probe_task")
def log_probe_task(run_id: int, version_id: int) -> None:
    logging.getLogger("goldset.probe").info("scoring")


def test_a_task_line_carries_the_run_and_version_of_its_arguments(json_lines):
    log_probe_task.apply(args=(5,), kwargs={"version_id": 7})
    [line] = [line for line in json_lines() if line["message"] == "scoring"]
    assert line["run"] == 5 and line["version_id"] == 7 and line["task"] == "tests.goldset.test_logs.log_probe_task"
    logging.getLogger("goldset.probe").info("after")
    [after] = [line for line in json_lines() if line["message"] == "after"]
    assert "run" not in after and "task" not in after, "a task's ids outlived it"
