"""The engines server and a fake clock for the endpoint client's tests (no database)."""

import asyncio
import socket

import pytest

from monitoring.endpoints.client import Pacing
from tests.monitoring.endpoints import engines as engines_module

LOOPBACK = ("127.0.0.0/8",)


@pytest.fixture
def engines():
    server = engines_module.start()
    yield server
    engines_module.stop(server)


class FakeTime:
    """A clock that moves only when slept on: waits are recorded, never waited."""

    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def pacing(self) -> Pacing:
        return Pacing(clock=self.clock, sleep=self.sleep, random=lambda: 0.5)


@pytest.fixture
def fake_time():
    return FakeTime()


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        return held.getsockname()[1]
