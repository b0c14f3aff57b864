"""A live Goldset server (pytest-django's live_server: a real threaded HTTP server on the
test database), a golden set with a published version, and clients holding real tokens.

Tasks run in-process (settings_test), so a run uploaded through the live server is scored
by the server's own thread as the upload commits, as on the embedded default."""

import pytest

from goldset_client import GoldsetClient, RetryPolicy

# The API tests' set, version and real tokens, shared rather than written again.
from tests.api.conftest import golden_set, manager, token, version  # noqa: F401 - fixtures


class Waits(list):
    """A RetryPolicy's sleep that records each wait asked for instead of sleeping: the tests
    check what the client waited for, never how long anything took."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def make_client(live_server, tmp_path, waits):
    """make_client(secret, url=live server) -> a GoldsetClient whose cache is in tmp_path and
    whose retries record their waits in `waits`."""

    def make(secret: str, url: str | None = None) -> GoldsetClient:
        retry = RetryPolicy(sleep=waits, jitter=lambda low, high: 0.0)
        return GoldsetClient(url or live_server.url, secret, cache_dir=tmp_path / "cache", timeout=30, retry=retry)

    return make


@pytest.fixture
def client(make_client, token, golden_set, version):
    """A client with a write token for the set, which has version 1."""
    return make_client(token("write", golden_set))
