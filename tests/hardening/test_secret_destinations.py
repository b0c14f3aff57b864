"""Finding 7 of the second hardening probe: a set manager could send a `SEARCH_*` token to
any allowed host, and an endpoint that echoes its headers put SEARCH_TOKEN's value into the
stored error of a failed night, which an adjudicator's read token read through the API.

Each secret now goes only to the hosts its operator named (`<VARIABLE>_HOSTS`), and every
secret value is written as `${VARIABLE}` in what is stored or shown. The echoing endpoint is
a real server on 127.0.0.1 that answers 400 with the headers it got.
"""

import json
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evaluation.models import RunQueryFailure
from lib.outbound import scrub, secret_host_problem
from monitoring.endpoints.client import fetch_rankings_sync, probe_sync
from monitoring.endpoints.spec import MissingVariable, resolve_headers, spec_from_preset
from monitoring.models import NightlyRun
from monitoring.nightly.services import nightly_run_execute, nightly_run_now
from tests.monitoring.conftest import watched_set  # noqa: F401
from tests.support.servers import serve_in_thread

SECRET = "tok-0f9e8d7c6b5a"
LOOPBACK = ("127.0.0.0/8",)


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        sent = dict(self.headers)
        body = json.dumps({"error": "bad request", "authorization": sent.get("Authorization"), "you_sent": sent}).encode()
        self.server.seen.append(dict(self.headers))
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.seen = []
    serve_in_thread(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def echo_spec(server, host: str = "127.0.0.1"):
    spec = spec_from_preset(
        "goldset", f"http://{host}:{server.server_port}/goldset", headers=(("Authorization", "Bearer ${SEARCH_TOKEN}"),)
    )
    return replace(spec, retries=0, timeout_seconds=2.0)


def test_a_secret_goes_only_to_the_hosts_its_operator_named():
    environ = {"SEARCH_TOKEN": SECRET, "SEARCH_TOKEN_HOSTS": "search.internal,.prod.example,10.2.0.0/16"}
    for allowed in ("search.internal", "SEARCH.internal.", "a.prod.example", "prod.example", "10.2.3.4"):
        assert secret_host_problem("SEARCH_TOKEN", allowed, environ) is None, allowed
    assert secret_host_problem("SEARCH_TOKEN", "evil.example", environ) == (
        "${SEARCH_TOKEN} may be sent only to the hosts in SEARCH_TOKEN_HOSTS (search.internal, .prod.example, 10.2.0.0/16), "
        "and evil.example is not one of them"
    )
    assert "not one of them" in secret_host_problem("SEARCH_TOKEN", "10.3.0.1", environ)
    assert secret_host_problem("SEARCH_TOKEN", "search.internal", {"SEARCH_TOKEN": SECRET}) == (
        "${SEARCH_TOKEN} is sent only to the hosts in SEARCH_TOKEN_HOSTS, which is not set in the worker's environment"
    )


def test_a_manager_pointing_a_secret_at_another_allowed_host_sends_nothing(echo, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    monkeypatch.setenv("SEARCH_TOKEN_HOSTS", "search.internal")
    spec = echo_spec(echo)
    with pytest.raises(MissingVariable, match="127.0.0.1 is not one of them; nothing was sent"):
        resolve_headers(spec, environ={"SEARCH_TOKEN": SECRET, "SEARCH_TOKEN_HOSTS": "search.internal"})
    report = fetch_rankings_sync(spec, [("q1", "a question")], 5, allowed_networks=LOOPBACK)
    assert report.failed == 1 and "SEARCH_TOKEN_HOSTS (search.internal), and 127.0.0.1 is not one of them" in report.answers[0].error
    assert probe_sync(spec, "q1", "a question", 5, allowed_networks=LOOPBACK).status is None
    assert echo.seen == []


def test_an_endpoint_that_echoes_its_headers_leaves_no_secret_in_errors_or_answers(echo, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    monkeypatch.setenv("SEARCH_TOKEN_HOSTS", "127.0.0.1")
    spec = echo_spec(echo)
    report = fetch_rankings_sync(spec, [("q1", "a question")], 5, allowed_networks=LOOPBACK)
    assert echo.seen[0]["Authorization"] == f"Bearer {SECRET}"  # sent where it was allowed
    error = report.answers[0].error
    assert error.startswith("HTTP 400") and SECRET not in error and "Bearer ${SEARCH_TOKEN}" in error
    answer = probe_sync(spec, "q1", "a question", 5, allowed_networks=LOOPBACK)
    assert SECRET not in answer.raw_text + (answer.error or "") and "${SEARCH_TOKEN}" in answer.raw_text


@pytest.mark.django_db
def test_a_failed_night_stores_no_secret_for_the_api_to_show(echo, monkeypatch, watched_set, django_capture_on_commit_callbacks):  # noqa: F811
    from monitoring.endpoints.services import endpoint_add

    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    monkeypatch.setenv("SEARCH_TOKEN_HOSTS", "127.0.0.1")
    endpoint = endpoint_add(
        golden_set=watched_set,
        name="echo",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url=f"http://127.0.0.1:{echo.server_port}/goldset",
        headers=[["Authorization", "Bearer ${SEARCH_TOKEN}"]],
        retries=0,
    )
    with django_capture_on_commit_callbacks(execute=True):
        night = nightly_run_execute(night_id=nightly_run_now(endpoint=endpoint).pk)
    stored = [night.error or ""] + list(RunQueryFailure.objects.values_list("error", flat=True))
    assert night.status in (NightlyRun.Status.DONE, NightlyRun.Status.FAILED) and echo.seen
    assert not any(SECRET in text for text in stored) and any("${SEARCH_TOKEN}" in text for text in stored)


def test_scrub_writes_each_secret_as_its_variable():
    assert scrub(f"x {SECRET} y {SECRET}", {"SEARCH_TOKEN": SECRET, "SEARCH_EMPTY": ""}) == "x ${SEARCH_TOKEN} y ${SEARCH_TOKEN}"
