"""lib.outbound: a URL a user typed is resolved, checked and connected to as checked.

The receivers are real HTTP servers this test starts on 127.0.0.1; loopback is refused
unless allowed, so the tests that deliver allow 127.0.0.0/8 as a deployment would allow
its own internal receiver."""

import ipaddress
import json
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lib.outbound import UNREACHABLE, OutboundRefused, address_kind, checked_address, post, url_problem
from tests.support.servers import serve_in_thread

LOOPBACK = ["127.0.0.0/8"]


@pytest.fixture
def receiver():
    """A real server that records each POST and answers 204 (or a redirect on /moved)."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers["Host"], json.loads(body)))
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "http://127.0.0.1:1/")
            else:
                self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "http://localhost/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://100.100.100.200/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://172.16.0.1/",
        "http://0.0.0.0/",
        "http://[fe80::1]/",
        "http://224.0.0.1/",
    ],
)
def test_internal_and_metadata_targets_are_refused(url):
    with pytest.raises(OutboundRefused) as refused:
        checked_address(url)
    assert str(refused.value) == UNREACHABLE


@pytest.mark.parametrize(
    "spelling",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64's well-known prefix
        "64:ff9b:1::a9fe:a9fe",  # NAT64's local-use prefix
        "2002:a9fe:a9fe::1",  # 6to4
        "::a9fe:a9fe",  # IPv4-compatible
        "::ffff:a9fe:a9fe",  # IPv4-mapped
        "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254 (bits inverted)
    ],
)
def test_every_ipv6_spelling_of_the_metadata_address_is_metadata_whatever_is_allowed(spelling):
    """Issue 30 item 14: the NAT64, 6to4 and IPv4-compatible spellings of 169.254.169.254 passed."""
    address = ipaddress.ip_address(spelling)
    assert address_kind(address) == "metadata"
    with pytest.raises(OutboundRefused) as refused:
        checked_address(f"http://[{spelling}]/latest/meta-data/", ("::/0", "0.0.0.0/0"))
    assert "link-local/metadata" in refused.value.detail


def test_a_nat64_spelling_of_a_public_address_is_public():
    assert address_kind(ipaddress.ip_address("64:ff9b::808:808")) == "global"


def test_a_public_address_passes_and_is_the_one_connected_to():
    assert checked_address("https://8.8.8.8:8443/hook") == ("8.8.8.8", 8443, "8.8.8.8")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://example.com/", "is not an http:// or https:// URL"),
        ("http:///path", "names no host"),
        ("http://user:secret@example.com/", "may not carry a user name or password"),
        ("http://example.com:99999/", "has a port that is not a number"),
    ],
)
def test_urls_that_cannot_be_webhooks_say_why(url, problem):
    assert problem in url_problem(url)


def test_an_allowed_internal_receiver_gets_the_post_with_its_host_name(receiver):
    base, seen = receiver
    port = base.rsplit(":", 1)[1]
    url = f"http://localhost:{port}/hook?token=abc"
    response = post(url, json.dumps({"id": 7}).encode(), {"Content-Type": "application/json"}, timeout=5, allowed_networks=LOOPBACK)
    assert (response.status, seen) == (204, [("/hook?token=abc", f"localhost:{port}", {"id": 7})])


def test_a_refused_target_is_never_connected_to(receiver):
    base, seen = receiver
    with pytest.raises(OutboundRefused):
        post(base + "/hook", b"{}", {}, timeout=5)
    assert seen == []


def test_a_closed_port_and_a_refused_address_read_the_same(receiver):
    """The probe used the alerts page as a port scanner: every failure now says one thing."""
    with pytest.raises(ConnectionError) as closed:
        post(f"http://127.0.0.1:{closed_port()}/", b"{}", {}, timeout=5, allowed_networks=LOOPBACK)
    with pytest.raises(OutboundRefused) as refused:
        post("http://127.0.0.1:6379/", b"{}", {}, timeout=5)
    assert str(closed.value) == str(refused.value) == UNREACHABLE


def test_a_redirect_is_answered_not_followed(receiver):
    base, seen = receiver
    response = post(base + "/moved", b"{}", {}, timeout=5, allowed_networks=LOOPBACK)
    assert response.status == 302 and len(seen) == 1
