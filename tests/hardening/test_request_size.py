"""Finding 5 of the hardening probe: a 500 MB run file grew the gunicorn worker to 2.9 GB
until gunicorn's timeout killed it. A body over MAX_REQUEST_MB is refused with 413 before it
is read; the worker's peak memory stays where an idle worker's is.

The app runs under gunicorn (one sync worker) on the embedded SQLite default; the upload
is sent over a raw socket: the headers declare 500 MB, then body bytes follow until the
server answers, as a client streaming a file would."""

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.migrated import app_environment, sqlite_template

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
FIVE_HUNDRED_MB = 500 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One server for the module, on a copy of the migrated embedded default."""
    database = tmp_path_factory.mktemp("request-size") / "db.sqlite3"
    shutil.copyfile(sqlite_template(), database)
    port = free_port()
    env = app_environment(DEBUG="false", ALLOWED_HOSTS="127.0.0.1", SQLITE_PATH=str(database), CELERY_BROKER_URL="")
    server = subprocess.Popen(
        [str(GUNICORN), "goldset.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=30)
                break
            except (requests.ConnectionError, requests.Timeout):
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        yield port, server.pid
    finally:
        server.terminate()
        server.wait(timeout=20)


def send_declared(port: int, path: str, length: int, content_type: str) -> tuple[int, bytes, int]:
    """Declare `length` bytes, send body until the server answers; (status, body, bytes sent)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\nAuthorization: Bearer gs_{'x' * 40}\r\n\r\n".encode()
        )
        connection.settimeout(0.05)
        block = b"q1 Q0 d1 1 1.0 bm25\n" * 52_429  # about 1 MB of run lines
        answer = b""
        while sent < length and not answer:
            try:
                connection.sendall(block)
                sent += len(block)
            except (BrokenPipeError, ConnectionResetError):
                break
            try:
                answer = connection.recv(65536)
            except (TimeoutError, BlockingIOError):
                pass
        connection.settimeout(30)
        while True:  # the server closes the connection after a 413 (Connection: close)
            try:
                chunk = connection.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body, sent


def test_a_500_mb_upload_is_refused_with_413_and_the_worker_stays_small(app):
    port, master = app
    status, body, sent = send_declared(port, "/api/v1/golden-sets/demo/runs/", FIVE_HUNDRED_MB, "text/plain")
    assert status == 413 and b"request_too_large" in body and b"limit of 100 MB" in body
    assert sent < FIVE_HUNDRED_MB / 10  # answered long before the body was through
    status, body, _ = send_declared(port, "/sets/demo/runs/", FIVE_HUNDRED_MB, "multipart/form-data; boundary=x")
    assert status == 413 and b"MAX_REQUEST_MB" in body
    (worker,) = worker_pids(master)
    assert peak_rss_mb(worker) < 300


def test_a_body_under_the_limit_is_read_as_usual(app):
    port, _ = app
    response = requests.post(
        f"http://127.0.0.1:{port}/api/v1/golden-sets/demo/runs/",
        data=b"q1 Q0 d1 1 1.0 x\n" * 1000,
        headers={"Content-Type": "text/plain"},
        timeout=30,
    )
    assert response.status_code == 401  # read and answered by the API: no token here
