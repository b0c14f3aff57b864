"""With LOG_FORMAT=json every line the web container writes is one JSON object: gunicorn's own
error and access lines too, served as the Dockerfile and compose serve the app (issue 30
item 11: 1 line in 13 was JSON). And a request warning is logged once, DEBUG or not."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.forwarder import free_port

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")


def served_lines(**env: str) -> tuple[list[str], list[str]]:
    """(standard output lines, standard error lines) of gunicorn serving /healthz and a 404."""
    port = free_port()
    process = subprocess.Popen(
        [str(GUNICORN), "-c", "python:goldset.gunicorn_conf", "goldset.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "goldset.settings", "ALLOWED_HOSTS": "127.0.0.1", "BEAT_IN_PROCESS": "false", **env},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and process.poll() is None, "gunicorn did not start"
                time.sleep(0.2)
        assert requests.get(f"http://127.0.0.1:{port}/no-such-page/", timeout=10).status_code == 404
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    return [line for line in out.splitlines() if line.strip()], [line for line in err.splitlines() if line.strip()]


def test_every_line_of_the_web_process_is_json_with_log_format_json():
    # The image collects the static files; this checkout has no STATIC_ROOT, which WhiteNoise
    # warns of on stderr with Python's own warning format at each start.
    out, err = served_lines(LOG_FORMAT="json", PYTHONWARNINGS="ignore:No directory at")
    lines = out + err
    assert len(lines) >= 5  # gunicorn's start lines, two access lines, the app's 404 warning
    records = [json.loads(line) for line in lines]  # each line one JSON object
    assert {"time", "level", "logger", "message"} <= set(records[0])
    access = [r for r in records if r["logger"] == "gunicorn.access"]
    assert any("GET /no-such-page/" in r["message"] and " 404 " in r["message"] for r in access)
    assert any(r["logger"] == "gunicorn.error" and "Booting worker" in r["message"] for r in records)


@pytest.mark.parametrize("debug", ["true", "false"])
def test_a_request_warning_is_logged_once(debug):
    out, err = served_lines(DEBUG=debug)
    assert sum("Not Found: /no-such-page/" in line for line in out + err) == 1
