"""A judge: a model behind an OpenAI-compatible chat-completions endpoint (vLLM, Ollama,
llama.cpp's server, hosted APIs) that grades (query, page) pairs.

`grade_pairs_sync` sends `POST {base_url}/chat/completions` with {"model", "messages",
"temperature": 0} for each pair and reads `choices[0].message.content` and `usage`.
Bounds, as the endpoint may be someone's paid quota:
- at most `max_in_flight` requests open at once (workers pulling from one queue, and the
  session's connection limit the same number);
- each attempt has `timeout_seconds`; timeouts, connection errors, 429 and 5xx are tried
  again up to `retries` times after a backoff with jitter, or the server's Retry-After when
  longer (lib.llm_judging.backoff_delay);
- the base URL is checked like every URL a user types (lib.outbound): its host is resolved
  once, refused when internal unless in JUDGE_ALLOWED_NETWORKS, and connected to at the
  address checked.
A failed pair is an answer with `error` (and the raw text when there was one), never an
exception: one bad answer must not lose the rest. The API key is read by the caller from
the environment and only ever put in the Authorization header.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lib import outbound
from lib.llm_judging import backoff_delay, messages_for, read_grade, retry_after_seconds

if TYPE_CHECKING:
    import aiohttp

USER_AGENT = "Goldset model judge"
MAX_ANSWER_BYTES = 1024 * 1024
RAW_KEPT_CHARS = 4000


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key: str | None = None
    max_in_flight: int = 4
    timeout_seconds: float = 60.0
    retries: int = 3
    allowed_networks: Sequence[str] = ()


@dataclass(frozen=True)
class PairText:
    key: tuple[int, int]  # (query pk, page pk)
    query: str
    passage: str


@dataclass
class PairGrade:
    key: tuple[int, int]
    grade: int | None = None
    raw: str = ""
    error: str | None = None
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Waiting:
    """How the client waits; tests hand in a sleep that does not wait."""

    sleep: object = asyncio.sleep
    random: object = random.random
    delays: list[float] = field(default_factory=list)


@functools.cache
def _pinned_resolver_class() -> type:
    """_PinnedResolver, made at the first judging: aiohttp is imported where a judge is
    asked, not when the app loads (it costs every process start, every management command
    among them, about a third of a second)."""
    from aiohttp.abc import AbstractResolver

    class _PinnedResolver(AbstractResolver):
        """Answers every lookup with the address lib.outbound checked: no second lookup that
        a DNS rebinding could answer differently."""

        def __init__(self, address: str):
            self._address = address

        async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[dict]:
            family = socket.AF_INET6 if ":" in self._address else socket.AF_INET
            return [{"hostname": host, "host": self._address, "port": port, "family": family, "proto": 0, "flags": 0}]

        async def close(self) -> None:
            return None

    return _PinnedResolver


def completions_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/completions"


async def _read_limited(response: aiohttp.ClientResponse) -> bytes:
    """The body, whole, or its first MAX_ANSWER_BYTES and one more byte when it is longer
    (the caller cuts it): a chat answer of a grade is kilobytes, a server gone wrong may
    stream without end."""
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            break
    return b"".join(chunks)


async def _attempt(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict, timeout: float, out: PairGrade, scale):
    """One request. Returns (retryable, retry_after); fills `out` when the pair is settled."""
    import aiohttp  # loaded already by grade_pairs, which made the session: a lookup

    out.requests += 1
    try:
        async with session.post(url, data=body, headers=headers, allow_redirects=False) as response:
            data = await _read_limited(response)
            status, retry_after = response.status, retry_after_seconds(response.headers.get("Retry-After"))
    except TimeoutError:
        out.error = f"no answer within {timeout:g} s"
        return True, None
    except (aiohttp.ClientError, OSError) as exc:
        out.error = f"the connection failed ({type(exc).__name__})"
        return True, None
    text = data[:MAX_ANSWER_BYTES].decode("utf-8", "replace")
    if status == 429 or status >= 500:
        out.error, out.raw = f"HTTP {status}", text[:RAW_KEPT_CHARS]
        return True, retry_after
    if not 200 <= status < 300:
        out.error, out.raw = f"HTTP {status} (not retried: the request is at fault)", text[:RAW_KEPT_CHARS]
        return False, None
    try:
        answer = json.loads(text)
        content = answer["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError
    except (ValueError, KeyError, IndexError, TypeError):
        out.error, out.raw = "the answer is not a chat completion (no choices[0].message.content)", text[:RAW_KEPT_CHARS]
        return False, None
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    out.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    out.completion_tokens += int(usage.get("completion_tokens") or 0)
    out.raw = content[:RAW_KEPT_CHARS].replace("\x00", "")
    read = read_grade(content, scale)
    out.grade, out.error = read.grade, read.error
    return False, None


async def grade_pairs(
    settings: JudgeSettings, prompt: str, pairs: Sequence[PairText], scale: tuple[int, int], waiting: Waiting | None = None,
) -> list[PairGrade]:
    """Grade `pairs`, in their order. A URL Goldset does not send to fails every pair alike."""
    waiting = waiting or Waiting()
    url = completions_url(settings.base_url)
    results = [PairGrade(pair.key) for pair in pairs]
    try:
        _, _, address = await asyncio.to_thread(outbound.checked_address, url, settings.allowed_networks)
    except (outbound.OutboundRefused, ConnectionError):
        for result in results:
            result.error = outbound.UNREACHABLE
        return results
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", "Accept": "application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    queue: asyncio.Queue = asyncio.Queue()
    for index in range(len(pairs)):
        queue.put_nowait(index)
    import aiohttp  # here, not at the top: see _pinned_resolver_class

    connector = aiohttp.TCPConnector(limit=settings.max_in_flight, resolver=_pinned_resolver_class()(address))
    async with aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
        timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds),
    ) as session:

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                pair, out = pairs[index], results[index]
                body = json.dumps({
                    "model": settings.model, "messages": messages_for(prompt, pair.query, pair.passage), "temperature": 0,
                }).encode()
                for attempt in range(settings.retries + 1):
                    out.error, out.raw = None, ""
                    retryable, retry_after = await _attempt(session, url, body, headers, settings.timeout_seconds, out, scale)
                    if not retryable or attempt == settings.retries:
                        break
                    delay = backoff_delay(attempt + 1, waiting.random(), retry_after)
                    waiting.delays.append(delay)
                    await waiting.sleep(delay)
                if out.error and retryable:
                    out.error = f"{out.error} after {out.requests} attempt{'s' if out.requests > 1 else ''}"

        await asyncio.gather(*(worker() for _ in range(min(settings.max_in_flight, len(pairs)) or 1)))
    return results


def grade_pairs_sync(settings: JudgeSettings, prompt: str, pairs: Sequence[PairText], scale: tuple[int, int],
                     waiting: Waiting | None = None) -> list[PairGrade]:
    """grade_pairs for a Celery task or a command (not for a thread whose event loop runs)."""
    return asyncio.run(grade_pairs(settings, prompt, pairs, scale, waiting))
