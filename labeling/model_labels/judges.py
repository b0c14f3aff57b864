"""A judge: a model behind an OpenAI-compatible chat-completions endpoint (vLLM, Ollama,
llama.cpp's server, hosted APIs) that grades (query, page) pairs.

`grade_pairs_sync` sends `POST {base_url}/chat/completions` with {"model", "messages",
"temperature": 0} for each pair and reads `choices[0].message.content` and `usage`. With
`batch_size` above 1 it sends the passages of one query together instead, up to that many
in a request, numbered in the prompt (lib.llm_judging.batch_messages_for), and reads one
grade per passage from the answer (read_batch_grades): a passage the answer leaves out or
garbles fails alone, with the whole raw answer kept; fewer requests, fewer prompt tokens.
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
exception: one bad answer must not lose the rest. `grade_pairs_sync` can hand the caller
what settled as it settles, and each attempt that failed and will be tried again, so that
a job over an endpoint that never answers shows so at the first timeout, not once a whole
chunk has used up its retries. The API key is read by the caller from
the environment and only ever put in the Authorization header.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lib import outbound
from lib.llm_judging import (
    MAX_BATCH,
    backoff_delay,
    batch_messages_for,
    messages_for,
    read_batch_grades,
    read_grade,
    token_count,
)
from lib.retrying import retry_after_seconds

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
    batch_size: int = 1  # passages of one query per request, 1 to MAX_BATCH


@dataclass(frozen=True)
class PairText:
    key: tuple[int, int]  # (query pk, page pk)
    query: str
    passage: str


@dataclass
class PairGrade:
    """A pair's grade or error. A batch's request and tokens are counted on its first pair
    (the others count 0), so that sums over pairs count each request once."""

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


@dataclass
class _Call:
    """One request's outcome, over its attempts: the answer's content, or the error and raw text."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    content: str | None = None
    raw: str = ""
    error: str | None = None


async def _attempt(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict, timeout: float, out: _Call):
    """One attempt. Returns (retryable, retry_after); fills `out` (content, or error and raw)."""
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
    out.prompt_tokens += token_count(usage.get("prompt_tokens"))
    out.completion_tokens += token_count(usage.get("completion_tokens"))
    out.content, out.raw = content, content[:RAW_KEPT_CHARS].replace("\x00", "")
    return False, None


def _units(pairs: Sequence[PairText], batch_size: int) -> list[list[int]]:
    """The requests to send, each a list of indexes into `pairs`: one pair each, or up to
    `batch_size` pairs of one query, in the order the query is first met."""
    if batch_size <= 1:
        return [[index] for index in range(len(pairs))]
    by_query: dict[int, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_query.setdefault(pair.key[0], []).append(index)
    return [indexes[start : start + batch_size] for indexes in by_query.values() for start in range(0, len(indexes), batch_size)]


def _settle(call: _Call, unit: list[int], results: list[PairGrade], scale: tuple[int, int]) -> None:
    """Each pair of the request graded from its answer, or failed with the request's error."""
    first = results[unit[0]]
    first.requests, first.prompt_tokens, first.completion_tokens = call.requests, call.prompt_tokens, call.completion_tokens
    if call.content is None:
        reads = [None] * len(unit)
    elif len(unit) == 1:
        reads = [read_grade(call.content, scale)]
    else:
        reads = read_batch_grades(call.content, len(unit), scale)
    for index, read in zip(unit, reads):
        out = results[index]
        out.raw = call.raw
        out.grade, out.error = (None, call.error) if read is None else (read.grade, read.error)


async def grade_pairs(
    settings: JudgeSettings,
    prompt: str,
    pairs: Sequence[PairText],
    scale: tuple[int, int],
    waiting: Waiting | None = None,
    report: Callable[[list[PairGrade], str | None], None] | None = None,
) -> list[PairGrade]:
    """Grade `pairs`, in their order (settings.batch_size passages of a query per request).
    A URL Goldset does not send to fails every pair alike. `report(grades, note)`, called
    on the loop, learns the pairs each request settled (note None), and each attempt that
    failed and will be tried again (no grades, the note saying why)."""
    if not 1 <= settings.batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be from 1 to {MAX_BATCH}, got {settings.batch_size}")
    waiting = waiting or Waiting()
    url = completions_url(settings.base_url)
    results = [PairGrade(pair.key) for pair in pairs]
    try:
        _, _, address = await asyncio.to_thread(outbound.checked_address, url, settings.allowed_networks)
    except (outbound.OutboundRefused, ConnectionError):
        for result in results:
            result.error = outbound.UNREACHABLE
        if report is not None:
            report(results, None)
        return results
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", "Accept": "application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    units = _units(pairs, settings.batch_size)
    queue: asyncio.Queue = asyncio.Queue()
    for unit in units:
        queue.put_nowait(unit)
    import aiohttp  # here, not at the top: see _pinned_resolver_class

    connector = aiohttp.TCPConnector(limit=settings.max_in_flight, resolver=_pinned_resolver_class()(address))
    async with aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds),
    ) as session:

        async def worker() -> None:
            while not queue.empty():
                unit = queue.get_nowait()
                first = pairs[unit[0]]
                messages = (
                    messages_for(prompt, first.query, first.passage)
                    if len(unit) == 1
                    else batch_messages_for(prompt, first.query, [pairs[index].passage for index in unit])
                )
                body = json.dumps({"model": settings.model, "messages": messages, "temperature": 0}).encode()
                call = _Call()
                for attempt in range(settings.retries + 1):
                    call.error, call.raw, call.content = None, "", None
                    retryable, retry_after = await _attempt(session, url, body, headers, settings.timeout_seconds, call)
                    if not retryable or attempt == settings.retries:
                        break
                    if report is not None:
                        report([], f"{call.error} (attempt {attempt + 1} of {settings.retries + 1}); trying again")
                    delay = backoff_delay(attempt + 1, waiting.random(), retry_after)
                    waiting.delays.append(delay)
                    await waiting.sleep(delay)
                if call.error and retryable:
                    call.error = f"{call.error} after {call.requests} attempt{'s' if call.requests > 1 else ''}"
                _settle(call, unit, results, scale)
                if report is not None:
                    report([results[index] for index in unit], None)

        await asyncio.gather(*(worker() for _ in range(min(settings.max_in_flight, len(units)) or 1)))
    return results


def grade_pairs_sync(
    settings: JudgeSettings,
    prompt: str,
    pairs: Sequence[PairText],
    scale: tuple[int, int],
    waiting: Waiting | None = None,
    progress: Callable[[list[PairGrade], str | None], None] | None = None,
    every: float = 1.0,
) -> list[PairGrade]:
    """grade_pairs for a Celery task or a command (not for a thread whose event loop runs).

    `progress(settled, retrying)` is called in this thread every `every` seconds when
    anything happened, and at the end: the pairs settled since its last call, and the latest
    failed attempt to be tried again (or None). The event loop waits while it runs (it
    writes, on the caller's own database connection), and a request's timeout counts only
    the loop's time."""
    if progress is None:
        return asyncio.run(grade_pairs(settings, prompt, pairs, scale, waiting))
    settled: list[PairGrade] = []
    notes: list[str] = []

    def report(grades: list[PairGrade], note: str | None) -> None:
        settled.extend(grades)
        if note is not None:
            notes.append(note)

    with asyncio.Runner() as runner:
        task = runner.get_loop().create_task(grade_pairs(settings, prompt, pairs, scale, waiting, report))
        while not task.done():
            runner.run(asyncio.wait({task}, timeout=every))
            if settled or notes:
                batch, note = list(settled), (notes[-1] if notes else None)
                settled.clear()
                notes.clear()
                progress(batch, note)
        return task.result()
