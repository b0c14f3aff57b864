"""When nothing answers: the client raises its own GoldsetConnectionError (GoldsetTimeout,
GoldsetTLSError), never requests' exceptions, and the `goldset` command says so in one line
naming the URL and exits 2. Every server here is real: a port nothing listens on, a socket
that accepts and never answers, an HTTP server asked with https://. No database is needed."""

import functools
import http.server
import socket

import pytest
import requests

from goldset_client import GoldsetClient, GoldsetClientError, GoldsetConnectionError, GoldsetTimeout, GoldsetTLSError, RetryPolicy, cli
from tests.clients.conftest import Waits
from tests.support.forwarder import free_port
from tests.support.servers import serve_in_thread


@pytest.fixture
def refused_url() -> str:
    # free_port() closes its probe: nothing listens there now.
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def silent_url():
    """A socket that completes every TCP handshake (the kernel's backlog) and never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    yield f"http://127.0.0.1:{silent.getsockname()[1]}"
    silent.close()


@pytest.fixture
def plain_http_port():
    """A real HTTP server with no TLS, to be asked with https://."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    serve_in_thread(server)
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def client_for(url: str, waits: Waits, *, timeout: float = 30, attempts: int = 2) -> GoldsetClient:
    return GoldsetClient(url, "gs_test", timeout=timeout, retry=RetryPolicy(attempts=attempts, sleep=waits, jitter=lambda low, high: 0.0))


def test_a_refused_connection_is_a_goldset_connection_error_naming_the_url_after_the_get_retries(refused_url):
    waits = Waits()
    with pytest.raises(GoldsetConnectionError) as raised:
        client_for(refused_url, waits).golden_sets()
    error = raised.value
    assert type(error) is GoldsetConnectionError and isinstance(error, GoldsetClientError)
    assert not isinstance(error, requests.RequestException)
    assert error.reason == "connection refused" and error.method == "GET"
    assert error.url == refused_url + "/api/v1/golden-sets/"
    assert str(error) == f"GET {refused_url}/api/v1/golden-sets/: could not reach Goldset (connection refused)"
    assert len(waits) == 1  # a GET is tried again once (attempts=2) before giving up


def test_a_refused_write_is_not_sent_again(refused_url):
    waits = Waits()
    with pytest.raises(GoldsetConnectionError, match="POST .*could not reach Goldset"):
        client_for(refused_url, waits).import_labels("wiki", [{"query_id": "q1", "doc_id": "d1", "grade": 1}])
    assert waits == []


def test_a_host_name_that_does_not_resolve_says_so():
    with pytest.raises(GoldsetConnectionError) as raised:
        client_for("http://goldset.invalid", Waits(), attempts=1).golden_set("wiki")
    assert raised.value.reason == "the host name did not resolve"


def test_a_server_that_never_answers_is_a_goldset_timeout(silent_url):
    waits = Waits()
    with pytest.raises(GoldsetTimeout) as raised:
        client_for(silent_url, waits, timeout=0.2).golden_sets()
    assert isinstance(raised.value, GoldsetConnectionError)
    assert str(raised.value) == f"GET {silent_url}/api/v1/golden-sets/: no answer from Goldset within 0.2 s"
    assert len(waits) == 1


def test_https_to_a_server_without_tls_is_a_goldset_tls_error(plain_http_port):
    url = f"https://127.0.0.1:{plain_http_port}"
    with pytest.raises(GoldsetTLSError) as raised:
        client_for(url, Waits(), attempts=1).golden_sets()
    assert isinstance(raised.value, GoldsetConnectionError)
    assert str(raised.value).startswith(f"GET {url}/api/v1/golden-sets/: TLS failed (")


def test_a_url_without_a_scheme_is_refused_naming_the_setting():
    with pytest.raises(GoldsetClientError, match=r"'goldset.example.com' must start with http:// or https:// \(base_url or GOLDSET_URL\)"):
        GoldsetClient("goldset.example.com", "gs_test")


@pytest.fixture
def one_attempt(monkeypatch):
    """The command's client tries once: the retries' real backoff is tested above, not here."""
    monkeypatch.setattr(cli, "GoldsetClient", functools.partial(GoldsetClient, retry=RetryPolicy(attempts=1)))


@pytest.mark.parametrize("command", [["sets"], ["pull", "wiki", "--version", "1", "-o", "-"]])
def test_the_command_says_it_could_not_reach_goldset_in_one_line_and_exits_2(refused_url, command, one_attempt, capsys, tmp_path):
    assert cli.main(["--url", refused_url, "--token", "gs_test", "--cache-dir", str(tmp_path), *command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"goldset: GET {refused_url}/api/v1/golden-sets/"), err
    assert err.endswith(": could not reach Goldset (connection refused)\n"), err


def test_the_gate_exits_2_when_goldset_does_not_answer(refused_url, one_attempt, tmp_path, capsys):
    run = tmp_path / "pr.run"
    run.write_text("q1 Q0 d1 1 1.0 bm25\n", encoding="utf-8")
    argv = ["--url", refused_url, "--token", "gs_test", "--cache-dir", str(tmp_path / "cache")]
    assert cli.main([*argv, "gate", "wiki", "--run", str(run), "--baseline", "prod", "--max-drop", "3"]) == 2
    assert f"{refused_url}/api/v1/golden-sets/wiki" in capsys.readouterr().err
