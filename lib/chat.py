"""The one client of OpenAI-compatible chat-completions APIs (vLLM, Ollama, llama.cpp's
server, hosted APIs), and the bounded HTTP machinery under it, for everything Goldset asks
a model: model judges of pairs (labeling.model_labels.judges), generators and answer judges
(answers). A team's own answer endpoint goes through the same machinery (`exchange`) with
its own request and reader.

`chat_complete` sends `POST {base_url}/chat/completions` with {"model", "messages",
"temperature"} (and "max_tokens" when asked) for each ChatRequest, and reads
`choices[0].message.content` and `usage`. Bounds, as the endpoint may be someone's paid quota:
- at most `max_in_flight` requests open at once (workers pulling from one queue, and the
  session's connection limit the same number);
- each attempt has `timeout_seconds`; timeouts, connection errors, 429 and 5xx are tried
  again up to `retries` times after a backoff with jitter, or the server's Retry-After when
  longer (lib.llm_judging.backoff_delay);
- the URL is checked like every URL a user types (lib.outbound): its host is resolved once,
  refused when internal unless in `allowed_networks`, and connected to at the address
  checked (no second lookup a DNS rebinding could answer otherwise);
- an answer's body is read up to MAX_ANSWER_BYTES: a server gone wrong may stream without end.
A failed request is a result with `error` (and the raw text when there was one), never an
exception: one bad answer must not lose the rest. The API key is read by the caller from the
environment and only ever put in the Authorization header.

`run_reporting` is the sync wrapper for a Celery task or a command: it hands the caller, in
the caller's thread, what settled as it settles and each attempt that failed and will be
tried again, so a job over an endpoint that never answers shows so at its first timeout.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import socket
from collections.abc import Callable, Coroutine, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from lib import outbound
from lib.llm_judging import backoff_delay, token_count
from lib.retrying import retry_after_seconds

if TYPE_CHECKING:
    import aiohttp

USER_AGENT = "Goldset"
MAX_ANSWER_BYTES = 1024 * 1024
RAW_KEPT_CHARS = 4000
NOT_A_COMPLETION = "the answer is not a chat completion (no choices[0].message.content)"


@dataclass(frozen=True)
class ChatSettings:
    """Where and how to ask: `base_url` ends in /v1 (…/chat/completions is added);
    `timeout_seconds` per attempt; `retries` attempts after the first."""

    base_url: str
    model: str
    api_key: str | None = None
    max_in_flight: int = 4
    timeout_seconds: float = 60.0
    retries: int = 3
    allowed_networks: Sequence[str] = ()
    user_agent: str = USER_AGENT


@dataclass(frozen=True)
class ChatRequest:
    key: Hashable
    messages: Sequence[Mapping[str, str]]
    temperature: float = 0.0
    max_tokens: int | None = None


@dataclass
class ChatResult:
    """One request's outcome over its attempts: `content` (the answer's text, None on
    failure), `raw` (what came back, cut at RAW_KEPT_CHARS), `error`, `requests` sent (0
    when the URL was refused) and the tokens `usage` told (0 when it told nothing usable)."""

    key: Hashable
    content: str | None = None
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


@dataclass(frozen=True)
class HttpCall:
    """One request of `exchange`: `url` encoded already, `body` the bytes sent (None: none)."""

    key: Hashable
    url: str
    body: bytes | None
    method: str = "POST"


@dataclass(frozen=True)
class Channel:
    """How `exchange` sends: `check_url` is the URL whose host is resolved, checked and
    pinned (every call goes to that host); `headers` go with every call; `secrets`
    ({variable: value}) are written as ${variable} in any raw text or error kept."""

    check_url: str
    headers: Mapping[str, str]
    max_in_flight: int = 4
    timeout_seconds: float = 60.0
    retries: int = 3
    allowed_networks: Sequence[str] = ()
    secrets: Mapping[str, str] = field(default_factory=dict)


class Unreadable(ValueError):
    """An answer that came (2xx) but cannot be read; its message says what was wrong."""


@dataclass(frozen=True)
class Read:
    """What a reader took from an answer: its text and the tokens it said it used."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


Report = Callable[[list[ChatResult], str | None], None]
T = TypeVar("T")


@functools.cache
def _pinned_resolver_class() -> type:
    """_PinnedResolver, made at the first request: aiohttp is imported where a model is
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
    (the caller cuts it)."""
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            break
    return b"".join(chunks)


def read_chat_completion(text: str) -> Read:
    """`choices[0].message.content` and `usage` of a chat completion; Unreadable otherwise."""
    try:
        answer = json.loads(text)
        content = answer["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError
    except (ValueError, KeyError, IndexError, TypeError):
        raise Unreadable(NOT_A_COMPLETION) from None
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    return Read(content, token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens")))


async def _attempt(session: aiohttp.ClientSession, call: HttpCall, channel: Channel, read, out: ChatResult):
    """One attempt. Returns (retryable, retry_after); fills `out` (content, or error and raw)."""
    import aiohttp  # loaded already by exchange, which made the session: a lookup
    from yarl import URL

    out.requests += 1
    try:
        # encoded=True: the caller encoded the URL (an endpoint's placeholders percent-encoded whole); yarl must not again.
        url = URL(call.url, encoded=True)
        async with session.request(call.method, url, data=call.body, headers=dict(channel.headers), allow_redirects=False) as response:
            data = await _read_limited(response)
            status, retry_after = response.status, retry_after_seconds(response.headers.get("Retry-After"))
    except TimeoutError:
        out.error = f"no answer within {channel.timeout_seconds:g} s"
        return True, None
    except (aiohttp.ClientError, OSError) as exc:
        out.error = f"the connection failed ({type(exc).__name__})"
        return True, None
    text = outbound.scrub(data[:MAX_ANSWER_BYTES].decode("utf-8", "replace"), channel.secrets)
    if status == 429 or status >= 500:
        out.error, out.raw = f"HTTP {status}", text[:RAW_KEPT_CHARS]
        return True, retry_after
    if not 200 <= status < 300:
        out.error, out.raw = f"HTTP {status} (not retried: the request is at fault)", text[:RAW_KEPT_CHARS]
        return False, None
    try:
        got = read(text)
    except Unreadable as exc:
        out.error, out.raw = outbound.scrub(str(exc), channel.secrets), text[:RAW_KEPT_CHARS]
        return False, None
    out.prompt_tokens += got.prompt_tokens
    out.completion_tokens += got.completion_tokens
    out.content, out.raw = got.content, got.content[:RAW_KEPT_CHARS].replace("\x00", "")
    return False, None


async def exchange(
    channel: Channel,
    calls: Sequence[HttpCall],
    read: Callable[[str], Read],
    waiting: Waiting | None = None,
    report: Report | None = None,
) -> list[ChatResult]:
    """Send `calls` within the channel's bounds and read each 2xx answer with `read` (which
    raises Unreadable for one it cannot read: not retried, the raw text kept). The results
    come in the calls' order. A URL Goldset does not send to fails every call alike, sending
    nothing. `report(results, note)`, called on the loop, learns each call as it settles
    (note None), and each attempt that failed and will be tried again (no results, the note
    saying why)."""
    waiting = waiting or Waiting()
    results = [ChatResult(call.key) for call in calls]
    if not calls:
        return results  # nothing to ask: no host is looked up
    try:
        _, _, address = await asyncio.to_thread(outbound.checked_address, channel.check_url, channel.allowed_networks)
    except (outbound.OutboundRefused, ConnectionError):
        for result in results:
            result.error = outbound.UNREACHABLE
        if report is not None:
            report(results, None)
        return results
    queue: asyncio.Queue = asyncio.Queue()
    for index in range(len(calls)):
        queue.put_nowait(index)
    import aiohttp  # here, not at the top: see _pinned_resolver_class

    connector = aiohttp.TCPConnector(limit=channel.max_in_flight, resolver=_pinned_resolver_class()(address))
    async with aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        timeout=aiohttp.ClientTimeout(total=channel.timeout_seconds),
    ) as session:

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                out = results[index]
                for attempt in range(channel.retries + 1):
                    out.error, out.raw, out.content = None, "", None
                    retryable, retry_after = await _attempt(session, calls[index], channel, read, out)
                    if not retryable or attempt == channel.retries:
                        break
                    if report is not None:
                        report([], f"{out.error} (attempt {attempt + 1} of {channel.retries + 1}); trying again")
                    delay = backoff_delay(attempt + 1, waiting.random(), retry_after)
                    waiting.delays.append(delay)
                    await waiting.sleep(delay)
                if out.error and retryable:
                    out.error = f"{out.error} after {out.requests} attempt{'s' if out.requests > 1 else ''}"
                if report is not None:
                    report([out], None)

        await asyncio.gather(*(worker() for _ in range(min(channel.max_in_flight, len(calls)) or 1)))
    return results


async def chat_complete(
    settings: ChatSettings,
    requests: Sequence[ChatRequest],
    waiting: Waiting | None = None,
    report: Report | None = None,
) -> list[ChatResult]:
    """Each request asked of the model, its answer's content or error, in their order
    (see `exchange` for the bounds and `report`)."""
    url = completions_url(settings.base_url)
    headers = {"User-Agent": settings.user_agent, "Content-Type": "application/json", "Accept": "application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    calls = []
    for request in requests:
        body: dict[str, Any] = {"model": settings.model, "messages": list(request.messages), "temperature": request.temperature}
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        calls.append(HttpCall(request.key, url, json.dumps(body).encode()))
    channel = Channel(
        check_url=url,
        headers=headers,
        max_in_flight=settings.max_in_flight,
        timeout_seconds=settings.timeout_seconds,
        retries=settings.retries,
        allowed_networks=settings.allowed_networks,
    )
    return await exchange(channel, calls, read_chat_completion, waiting, report)


def run_reporting(
    start: Callable[[Callable[[list[T], str | None], None] | None], Coroutine[Any, Any, list[T]]],
    progress: Callable[[list[T], str | None], None] | None = None,
    every: float = 1.0,
) -> list[T]:
    """`start(report)`'s coroutine run to its end, for a Celery task or a command (not for a
    thread whose event loop runs).

    `progress(settled, retrying)` is called in this thread every `every` seconds when
    anything happened, and at the end: what settled since its last call, and the latest
    failed attempt to be tried again (or None). The event loop waits while it runs (it
    may write, on the caller's own database connection), and a request's timeout counts
    only the loop's time."""
    if progress is None:
        return asyncio.run(start(None))
    settled: list[T] = []
    notes: list[str] = []

    def report(items: list[T], note: str | None) -> None:
        settled.extend(items)
        if note is not None:
            notes.append(note)

    with asyncio.Runner() as runner:
        task = runner.get_loop().create_task(start(report))
        while not task.done():
            runner.run(asyncio.wait({task}, timeout=every))
            if settled or notes:
                batch, note = list(settled), (notes[-1] if notes else None)
                settled.clear()
                notes.clear()
                progress(batch, note)
        return task.result()


def chat_complete_sync(
    settings: ChatSettings,
    requests: Sequence[ChatRequest],
    waiting: Waiting | None = None,
    progress: Callable[[list[ChatResult], str | None], None] | None = None,
    every: float = 1.0,
) -> list[ChatResult]:
    """chat_complete from synchronous code, with `progress` as run_reporting calls it."""
    return run_reporting(lambda report: chat_complete(settings, requests, waiting, report), progress, every)
