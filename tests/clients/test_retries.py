"""Retries, against real servers: a tiny http.server in a thread stands in front of the live
Goldset server. It records what it is sent, answers the first requests from a script (429 with Retry-After, 503,
500, 502, as a throttling gateway or a server having a bad moment would) and proxies every
later one to the live server unchanged. The client's RetryPolicy records the waits it
asks for instead of sleeping (conftest.Waits), so the tests check what was waited for,
never how long anything took."""

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from evaluation.models import Run
from goldset_client import GoldsetAPIError
from tests.api import RUN, SLUG
from tests.support.servers import serve_in_thread

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class Gateway(ThreadingHTTPServer):
    """Answers `script` (status, headers) in order, then proxies to `upstream`; `seen` holds
    (method, path) of every request it got."""

    daemon_threads = True

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), GatewayHandler)
        self.upstream = upstream
        self.script: list[tuple[int, dict[str, str]]] = []
        self.seen: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class GatewayHandler(BaseHTTPRequestHandler):
    server: Gateway

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def handle_one(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path.split("?")[0]))
        self.server.bodies.append(body)
        if self.server.script:
            status, headers = self.server.script.pop(0)
            text = b'{"error": {"code": "throttled", "message": "slow down", "problems": [], "field": null}}'
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
            return
        forwarded = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host", "accept-encoding"}}
        answer = requests.request(
            self.command, self.server.upstream + self.path, headers=forwarded, data=body, allow_redirects=False, timeout=30
        )
        self.send_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = handle_one


@pytest.fixture
def gateway(live_server) -> Iterator[Gateway]:
    server = Gateway(live_server.url)
    serve_in_thread(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def via_gateway(gateway, make_client, token, golden_set, version):
    return make_client(token("write", golden_set), url=gateway.url)


def test_a_429_is_retried_after_its_retry_after(gateway, via_gateway, waits, version):
    gateway.script = [(429, {"Retry-After": "7"})]
    assert [v["number"] for v in via_gateway.versions(SLUG)] == [1]
    assert gateway.seen == [("GET", f"/api/v1/golden-sets/{SLUG}/versions/")] * 2
    assert waits == [7.0]


def test_backoff_grows_exponentially_between_server_errors_on_a_read(gateway, via_gateway, waits, version):
    via_gateway.http.retry.jitter = lambda low, high: high  # the top of each jitter range
    gateway.script = [(500, {}), (502, {}), (503, {}), (504, {})]
    assert via_gateway.golden_set(SLUG)["slug"] == SLUG
    assert len(gateway.seen) == 5 and waits == [0.5, 1.0, 2.0, 4.0]


def test_an_upload_is_sent_again_after_429_and_503_whole(gateway, via_gateway, waits, version):
    gateway.script = [(429, {"Retry-After": "1"}), (503, {"Retry-After": "2"})]
    run = via_gateway.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    assert gateway.seen == [("POST", f"/api/v1/golden-sets/{SLUG}/runs/")] * 3 and waits == [1.0, 2.0]
    assert Run.objects.get().entry_count == run["entry_count"] == 5  # the file was sent whole the third time


def test_an_upload_is_not_sent_again_after_a_502_since_it_may_have_been_stored(gateway, via_gateway, waits, version):
    gateway.script = [(502, {})]
    with pytest.raises(GoldsetAPIError) as raised:
        via_gateway.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    assert (raised.value.status, raised.value.message) == (502, "slow down")
    assert len(gateway.seen) == 1 and waits == []


def test_retries_stop_after_the_last_attempt_with_the_last_answer(gateway, via_gateway, waits, version):
    via_gateway.http.retry.attempts = 3
    gateway.script = [(429, {"Retry-After": "1"})] * 3
    with pytest.raises(GoldsetAPIError) as raised:
        via_gateway.versions(SLUG)
    assert (raised.value.status, raised.value.code) == (429, "throttled")
    assert len(gateway.seen) == 3 and waits == [1.0, 1.0]


def test_a_retry_after_longer_than_the_policy_allows_is_raised_not_waited_for(gateway, via_gateway, waits, version):
    gateway.script = [(429, {"Retry-After": "3600"})]
    with pytest.raises(GoldsetAPIError, match="429 throttled"):
        via_gateway.versions(SLUG)
    assert waits == []


def test_an_upload_sends_the_file_bytes_untouched_and_names_its_format_only_when_given(gateway, via_gateway, version):
    """The server reads the format from the content unless told; the client never re-encodes."""
    raw = RUN.replace("\n", "\r\n").encode()
    via_gateway.upload_run(SLUG, raw, system="bm25", stage="first_stage", name="detected")
    via_gateway.upload_run(SLUG, raw, system="bm25", stage="first_stage", name="named", format="trec")
    detected, named = gateway.bodies
    assert raw in detected and raw in named
    assert b'name="format"' not in detected
    assert b'name="format"\r\n\r\ntrec\r\n' in named
