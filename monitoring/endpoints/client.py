"""Query a live retrieval endpoint for every query of a golden set, within set bounds.

`fetch_rankings` sends one request per query and reads each answer into a ranking of at
most k doc ids; `probe` sends one and shows everything (the "try it" action);
`fetch_index_size` asks the count URL. Each has a `_sync` twin for Celery tasks and
management commands (asyncio.run: not for a thread whose event loop is running).
`on_answer` runs on the event loop: it may not use the Django ORM.

Bounds, because the endpoint is someone's production search:
- `max_in_flight` workers pull queries from the iterator, so at most that many requests
  are open (the session's connection limit is the same number) and at most that many
  queries are held at once: 10,000 queries never become 10,000 tasks;
- a token bucket lets at most `max_per_second` requests start per second, retries
  included;
- each attempt has `timeout_seconds`; connect errors, timeouts, 5xx and 429 are tried
  again `retries` times, after an exponential backoff with jitter (so a fleet of workers
  does not retry in step), or after 429's Retry-After when longer (capped at 30 s).

Memory stays flat: an answer's body is parsed and dropped, only the ranking is kept,
and with `keep_answers=False` not even that (`on_answer` gets each one as it comes).
A failure is the query's `error`, never an exception: one bad query must not lose the
other 9,999 rankings of a nightly run.
"""

import asyncio
import functools
import json
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import aiohttp
import orjson
from multidict import CIMultiDict
from yarl import URL

from lib import retrying
from lib.outbound import scrub
from lib.retrying import retry_after_seconds

from . import mapping
from .addresses import CheckedResolver, check_url, checked_socket_factory, refused_cause
from .spec import ENV_PREFIX, EndpointSpec, MissingVariable, headers_shown, resolve_headers, spec_problems

MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a search answer of k ids and scores is kilobytes
RAW_SHOWN_CHARS = 20_000
RETRY_AFTER_CAP = 30.0  # seconds: a longer wait would stall a nightly run for one query
BACKOFF_BASE = 0.5  # seconds before the first retry, doubled at each one
BACKOFF_CAP = 10.0
USER_AGENT = "Goldset endpoint monitor"
DEFAULT_ALLOWED_NETWORKS = ("127.0.0.0/8", "::1/128")


@dataclass(frozen=True)
class QueryAnswer:
    """What the endpoint answered for one query.

    `ranking`: at most k (doc_id, score), in the engine's order, scores non-increasing
    (made k, k-1, ... from rank when the engine's cannot be used: see `notes`); empty
    when `error` is set. `status` is the last HTTP status (None when no answer came),
    `latency_ms` the last attempt's time to the full answer, in milliseconds,
    `attempts` how many requests were sent (0 when none could be), `duplicates` the
    hits dropped because their doc id came earlier in the answer.
    """

    query_id: str
    ranking: list[tuple[str, float]]
    error: str | None
    status: int | None
    latency_ms: float
    attempts: int
    duplicates: int = 0
    notes: tuple[str, ...] = ()
    index_size: int | None = None
    # `ranking` as (doc ids, scores), when it was read whole (mapping.RankingRead.columns).
    columns: tuple[list[str], list[float]] | None = None
    # {doc id: shard} of the ranking's hits, read at the spec's shard_path (None without one).
    shards: dict[str, str] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class FetchReport:
    """One fetch: `answers` in the input order (empty with keep_answers=False), `ok` and
    `failed` counts, `seconds` of wall time, `index_size` the largest one read through
    index_size_path (None when none was), `duplicates` over all answers, and `refused`
    when the URL's host may not be queried at all (every answer then says so too)."""

    answers: list[QueryAnswer]
    ok: int
    failed: int
    seconds: float
    index_size: int | None = None
    duplicates: int = 0
    refused: str | None = None


@dataclass(frozen=True)
class ProbeAnswer:
    """One request shown whole, for the manager checking an endpoint: the request as sent
    (`headers` with `${VAR}` unresolved), the status, the raw answer (`raw_text`, cut at
    RAW_SHOWN_CHARS characters when `truncated`), `latency_ms`, the ranking read from it,
    `error` when no ranking could be read, and `problems`: everything worth fixing
    found on the way (the error, notes on scores and duplicates)."""

    method: str
    url: str
    body: str
    headers: list[tuple[str, str]]
    status: int | None
    raw_text: str
    truncated: bool
    latency_ms: float
    ranking: list[tuple[str, float]]
    error: str | None
    problems: list[str]
    index_size: int | None = None


@dataclass
class Pacing:
    """The clock, sleep and randomness the client waits by; tests hand in fakes so that
    backoffs and the token bucket are checked without waiting or timing."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = random.random


class TokenBucket:
    """At most `rate` takes per second on average, and no burst beyond `capacity` (1 by
    default: starts are spaced 1/rate apart). Waiters are served in turn (asyncio.Lock is
    first come, first served)."""

    def __init__(self, rate: float, *, capacity: float = 1.0, pacing: Pacing | None = None):
        self.rate = rate
        self.capacity = capacity
        self.pacing = pacing or Pacing()
        self._tokens = capacity
        self._updated = self.pacing.clock()
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        if not self._lock.locked():
            # Nobody waiting: take a token at once if there is one (no lock, no await).
            now = self.pacing.clock()
            tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
            if tokens >= 1 - 1e-9:
                self._tokens, self._updated = max(0.0, tokens - 1), now
                return
        async with self._lock:
            while True:
                now = self.pacing.clock()
                self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
                self._updated = now
                # The tolerance: a clock of a large value adds up waits with rounding, and
                # a token short by 1e-14 would otherwise ask for waits the clock cannot show.
                if self._tokens >= 1 - 1e-9:
                    self._tokens = max(0.0, self._tokens - 1)
                    return
                await self.pacing.sleep((1 - self._tokens) / self.rate)


def backoff_delay(retry: int, pacing: Pacing, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `retry` (lib.retrying's rule with the endpoint
    client's caps and the pacing's random source)."""
    return retrying.backoff_delay(
        retry,
        pacing.random(),
        retry_after,
        base=BACKOFF_BASE,
        cap=BACKOFF_CAP,
        retry_after_cap=RETRY_AFTER_CAP,
    )


@dataclass(frozen=True)
class Request:
    """A request ready to send: `url` already encoded, `body` the JSON text ("" for GET)."""

    method: str
    url: str
    body: str


def build_request(spec: EndpointSpec, query_id: str, text: str, k: int) -> Request:
    """The request for one query, placeholders escaped for where they stand (mapping.py)."""
    values = {"query": text, "query_id": query_id, "k": k}
    url = mapping.render_url(spec.url, values)
    if spec.params_template:
        url += ("&" if "?" in url else "?") + mapping.render_url(spec.params_template, values)
    body = mapping.render_json(spec.body_template, values) if spec.method == "POST" else ""
    return Request(spec.method, url, body)


@dataclass
class _Attempt:
    status: int | None = None
    body: bytes | None = None
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None
    latency_ms: float = 0.0
    kind: str = ""  # "timeout", "connect", "status": how the final message is worded


class _TooLarge(Exception):
    pass


def _plural(count: int) -> str:
    return f"{count} attempt" + ("" if count == 1 else "s")


def _session(spec: EndpointSpec, allowed_networks: Sequence[str]) -> aiohttp.ClientSession:
    # One session per fetch, its pool as wide as the bound; no cookies kept between
    # queries and no proxy from the environment (a proxy would connect where we did not check).
    # The endpoint's timeout is the session's total timeout (connect, send and the whole
    # answer): aiohttp times every request anyway, a second timer of our own cost as much.
    connector = aiohttp.TCPConnector(
        limit=spec.max_in_flight,
        resolver=CheckedResolver(allowed_networks),
        socket_factory=checked_socket_factory(allowed_networks),
    )
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        timeout=aiohttp.ClientTimeout(total=spec.timeout_seconds),
    )


def _headers(spec: EndpointSpec, env_prefix: str, secrets: dict[str, str]) -> CIMultiDict:
    """Defaults, then the spec's headers resolved (MissingVariable when one cannot be); the
    secret values used go into `secrets`, so that nothing stored or shown repeats them."""
    headers = CIMultiDict({"User-Agent": USER_AGENT, "Accept": "application/json"})
    if spec.method == "POST":
        headers["Content-Type"] = "application/json"
    for name, value in resolve_headers(spec, env_prefix=env_prefix, secrets=secrets).items():
        headers[name] = value
    return headers


@functools.lru_cache(maxsize=256)
def _url(text: str) -> URL:
    """The URL as sent, parsed once per distinct text: most endpoints put the query in the
    body, so a night sends one URL ten thousand times."""
    return URL(text, encoded=True)


async def _read_limited(response: aiohttp.ClientResponse) -> bytes:
    length = response.content_length
    if length is not None and length <= MAX_ANSWER_BYTES:
        return await response.read()  # one read for an answer that said its size: most of them
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _attempt(
    session: aiohttp.ClientSession,
    request: Request,
    headers: CIMultiDict,
    timeout: float,
    secrets: dict[str, str],
) -> _Attempt:
    """One request; whatever happens is told in the _Attempt, never raised. An error quoting
    the answer has the `secrets` written as their variables (an endpoint may echo headers)."""
    started = time.perf_counter()
    outcome = _Attempt()
    location = ""
    try:
        data = request.body.encode() if request.body else None
        async with session.request(request.method, _url(request.url), data=data, headers=headers, allow_redirects=False) as response:
            outcome.status = response.status
            outcome.body = await _read_limited(response)
            outcome.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            location = response.headers.get("Location", "")
    except TimeoutError:
        outcome.error, outcome.kind, outcome.retryable = f"no answer within {timeout} s", "timeout", True
    except _TooLarge:
        outcome.error = f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB; ask for fewer fields"
    except aiohttp.ClientConnectorError as exc:
        refused = refused_cause(exc)
        if refused:
            outcome.error = str(refused)
        else:
            reason = exc.os_error.strerror or str(exc.os_error) if exc.os_error else str(exc)
            outcome.error, outcome.kind, outcome.retryable = f"could not connect to {exc.host}:{exc.port} ({reason})", "connect", True
    except (aiohttp.ClientError, OSError) as exc:
        outcome.error, outcome.kind, outcome.retryable = f"the connection failed: {exc.__class__.__name__} {exc}".strip(), "connect", True
    outcome.latency_ms = (time.perf_counter() - started) * 1000
    if outcome.status is None or outcome.error:
        return outcome
    if outcome.status == 429 or outcome.status >= 500:
        outcome.error, outcome.kind, outcome.retryable = f"HTTP {outcome.status}", "status", True
    elif 300 <= outcome.status < 400:
        outcome.error = f"HTTP {outcome.status}: redirects are not followed; point the endpoint at {location or 'the final URL'}"
    elif not 200 <= outcome.status < 300:
        began = scrub((outcome.body or b"")[:4096].decode("utf-8", "replace"), secrets)[:160].strip()
        outcome.error = f"HTTP {outcome.status} (not retried: a 4xx answer means the request is at fault)" + (f": {began}" if began else "")
    return outcome


def _final_error(outcome: _Attempt, attempts: int) -> str:
    if outcome.kind == "status":
        extra = " (too many requests: lower max_per_second)" if outcome.status == 429 else ""
        return f"{outcome.error} after {_plural(attempts)}{extra}"
    if outcome.kind in ("timeout", "connect"):
        return f"{outcome.error} ({_plural(attempts)})"
    return outcome.error


def _parse(body: bytes) -> tuple[object, str | None]:
    try:
        return orjson.loads(body), None  # a fifth of json's time: a night reads a million hits
    except orjson.JSONDecodeError:
        pass  # json, slower, takes what orjson refuses (NaN, integers past 64 bits) and words the error
    try:
        return json.loads(body), None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            return None, f"answer is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        return None, "answer is not JSON: it is not UTF-8 text"


def _read(spec: EndpointSpec, body: bytes, k: int) -> mapping.RankingRead:
    answer, error = _parse(body)
    if error:
        return mapping.RankingRead(error=error)
    return mapping.read_ranking(
        answer,
        k,
        hits_path=spec.hits_path,
        doc_id_path=spec.doc_id_path,
        score_path=spec.score_path,
        index_size_path=spec.index_size_path,
        vespa_ids=spec.preset == "vespa",
        shard_path=spec.shard_path,
    )


class _Sender:
    """Sends one query's request with retries under the fetch's shared bucket."""

    def __init__(self, spec: EndpointSpec, session, headers, bucket: TokenBucket, pacing: Pacing, k: int, secrets: dict[str, str]):
        self.spec, self.session, self.headers, self.bucket, self.pacing, self.k = spec, session, headers, bucket, pacing, k
        self.secrets = secrets

    async def send(self, query_id: str, text: str) -> QueryAnswer:
        request = build_request(self.spec, query_id, text, self.k)
        attempts = 0
        while True:
            await self.bucket.take()
            attempts += 1
            outcome = await _attempt(self.session, request, self.headers, self.spec.timeout_seconds, self.secrets)
            if not outcome.retryable or attempts > self.spec.retries:
                break
            await self.pacing.sleep(backoff_delay(attempts, self.pacing, outcome.retry_after if outcome.status == 429 else None))
        common = {"query_id": query_id, "status": outcome.status, "latency_ms": outcome.latency_ms, "attempts": attempts}
        if outcome.error:
            return QueryAnswer(ranking=[], error=scrub(_final_error(outcome, attempts), self.secrets), **common)
        read = _read(self.spec, outcome.body, self.k)
        return QueryAnswer(
            ranking=read.ranking,
            error=scrub(read.error, self.secrets) if read.error else None,
            duplicates=read.duplicates,
            notes=tuple(read.notes),
            index_size=read.index_size,
            columns=read.columns,
            shards=read.shards,
            **common,
        )


async def _fetch(spec, queries, k, *, deliver, allowed_networks, env_prefix, pacing, keep_answers) -> FetchReport:
    problems = spec_problems(spec, env_prefix=env_prefix)
    if problems:
        raise ValueError("the endpoint cannot be queried: " + "; ".join(problems))
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, not {k!r}")
    pacing = pacing or Pacing()
    started = time.perf_counter()
    report = FetchReport(answers=[], ok=0, failed=0, seconds=0.0)
    kept: dict[int, QueryAnswer] = {}
    # Refusals that hold for every query are found once, before anything is sent.
    report.refused = await check_url(mapping.render_url(spec.url, mapping.SAMPLE_VALUES), allowed_networks)
    blocker = report.refused
    headers = None
    secrets: dict[str, str] = {}
    if not blocker:
        try:
            headers = _headers(spec, env_prefix, secrets)
        except MissingVariable as exc:
            blocker = str(exc)

    async def record(index: int, answer: QueryAnswer) -> None:
        if answer.ok:
            report.ok += 1
        else:
            report.failed += 1
        report.duplicates += answer.duplicates
        if answer.index_size is not None:
            report.index_size = max(report.index_size or 0, answer.index_size)
        if keep_answers:
            kept[index] = answer
        if deliver:
            await deliver(answer)

    pending = iter(enumerate(queries))
    if blocker:
        for index, (query_id, _text) in pending:
            await record(index, QueryAnswer(query_id=str(query_id), ranking=[], error=blocker, status=None, latency_ms=0.0, attempts=0))
    else:
        async with _session(spec, allowed_networks) as session:
            # A burst of 10 ms worth of starts: spacing every start 1/rate apart asks the loop
            # for sub-millisecond sleeps it cannot keep (timers fire to the millisecond), so
            # a rate of thousands a second would be held far under itself. At 100/s and
            # under the burst is 1, starts spaced exactly.
            bucket = TokenBucket(spec.max_per_second, capacity=max(1.0, spec.max_per_second / 100), pacing=pacing)
            sender = _Sender(spec, session, headers, bucket, pacing, k, secrets)

            async def worker() -> None:
                # The workers share one iterator: next() runs between awaits, so each
                # query is taken by exactly one worker, and only when one is free.
                for index, (query_id, text) in pending:
                    await record(index, await sender.send(str(query_id), text))

            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(spec.max_in_flight):
                        group.create_task(worker())
            except ExceptionGroup as failed:
                raise failed.exceptions[0] from None  # the caller's on_answer failed: its error, as raised
    report.answers = [kept[index] for index in sorted(kept)]
    report.seconds = time.perf_counter() - started
    return report


async def fetch_rankings(
    spec: EndpointSpec,
    queries: Iterable[tuple[str, str]],
    k: int,
    *,
    on_answer: Callable[[QueryAnswer], None] | None = None,
    allowed_networks: Sequence[str] = DEFAULT_ALLOWED_NETWORKS,
    env_prefix: str = ENV_PREFIX,
    pacing: Pacing | None = None,
    keep_answers: bool = True,
) -> FetchReport:
    """Query the endpoint for every (query_id, text) of `queries` at depth `k`.

    `queries` is read lazily, on the event loop (so not a queryset that would hit the
    database there: pass tuples). `on_answer` is called with each QueryAnswer as it
    completes (in completion order), on the event loop. ValueError when the spec has
    problems or k < 1; anything else that goes wrong is a query's error.
    """

    async def deliver(answer: QueryAnswer) -> None:
        on_answer(answer)

    return await _fetch(
        spec, queries, k, deliver=deliver if on_answer else None, allowed_networks=allowed_networks,
        env_prefix=env_prefix, pacing=pacing, keep_answers=keep_answers,
    )  # fmt: skip


def fetch_rankings_sync(
    spec: EndpointSpec,
    queries: Iterable[tuple[str, str]],
    k: int,
    *,
    allowed_networks: Sequence[str] = DEFAULT_ALLOWED_NETWORKS,
    env_prefix: str = ENV_PREFIX,
    pacing: Pacing | None = None,
) -> FetchReport:
    """fetch_rankings for a Celery task or a command (asyncio.run), every answer kept in
    the report: for a few queries, such as a probe round's. A nightly run takes its
    answers one by one on the loop instead (monitoring.nightly.services)."""
    options = {"allowed_networks": allowed_networks, "env_prefix": env_prefix, "pacing": pacing, "keep_answers": True}
    return asyncio.run(_fetch(spec, queries, k, deliver=None, **options))


async def probe(
    spec: EndpointSpec,
    query_id: str,
    text: str,
    k: int,
    *,
    allowed_networks: Sequence[str] = DEFAULT_ALLOWED_NETWORKS,
    env_prefix: str = ENV_PREFIX,
) -> ProbeAnswer:
    """Send one query once (no retries: the manager is watching) and show it all."""
    request = build_request(spec, query_id, text, k)
    shown = {"method": request.method, "url": request.url, "body": request.body, "headers": headers_shown(spec)}
    empty = {"status": None, "raw_text": "", "truncated": False, "latency_ms": 0.0, "ranking": []}
    problems = spec_problems(spec, env_prefix=env_prefix)
    blocker = "; ".join(problems) or await check_url(request.url, allowed_networks)
    secrets: dict[str, str] = {}
    if not blocker:
        try:
            headers = _headers(spec, env_prefix, secrets)
        except MissingVariable as exc:
            blocker = str(exc)
    if blocker:
        return ProbeAnswer(**shown, **empty, error=blocker, problems=[blocker])
    async with _session(spec, allowed_networks) as session:
        outcome = await _attempt(session, request, headers, spec.timeout_seconds, secrets)
    raw = scrub((outcome.body or b"").decode("utf-8", "replace"), secrets)
    truncated = len(raw) > RAW_SHOWN_CHARS
    if truncated:
        raw = raw[:RAW_SHOWN_CHARS] + f"\n… (truncated: the answer has {len(raw):,} characters, the first {RAW_SHOWN_CHARS:,} are shown)"
    common = {**shown, "status": outcome.status, "raw_text": raw, "truncated": truncated, "latency_ms": outcome.latency_ms}
    if outcome.error:
        error = scrub(_final_error(outcome, 1), secrets)
        return ProbeAnswer(**common, ranking=[], error=error, problems=[error])
    read = _read(spec, outcome.body, k)
    error = scrub(read.error, secrets) if read.error else None
    problems = ([error] if error else []) + [scrub(note, secrets) for note in read.notes]
    return ProbeAnswer(**common, ranking=read.ranking, error=error, problems=problems, index_size=read.index_size)


def probe_sync(spec: EndpointSpec, query_id: str, text: str, k: int, **options) -> ProbeAnswer:
    """probe, for a view or a command (asyncio.run)."""
    return asyncio.run(probe(spec, query_id, text, k, **options))


class IndexSizeError(Exception):
    """The count URL did not give a document count; the message says why."""


async def fetch_index_size(
    spec: EndpointSpec,
    *,
    allowed_networks: Sequence[str] = DEFAULT_ALLOWED_NETWORKS,
    env_prefix: str = ENV_PREFIX,
    pacing: Pacing | None = None,
) -> int | None:
    """The index's number of documents read at count_path of a GET to count_url (with the
    spec's headers and retries); None when the spec has no count URL. IndexSizeError
    when the count cannot be had: a run without it is still a run, so the caller decides."""
    if not spec.count_url:
        return None
    pacing = pacing or Pacing()
    refused = await check_url(spec.count_url, allowed_networks)
    if refused:
        raise IndexSizeError(refused)
    secrets: dict[str, str] = {}
    try:
        headers = _headers(spec, env_prefix, secrets)
    except MissingVariable as exc:
        raise IndexSizeError(str(exc)) from None
    headers.pop("Content-Type", None)
    request = Request("GET", mapping.render_url(spec.count_url, {}), "")
    async with _session(spec, allowed_networks) as session:
        attempts = 0
        while True:
            attempts += 1
            outcome = await _attempt(session, request, headers, spec.timeout_seconds, secrets)
            if not outcome.retryable or attempts > spec.retries:
                break
            await pacing.sleep(backoff_delay(attempts, pacing, outcome.retry_after if outcome.status == 429 else None))
    if outcome.error:
        raise IndexSizeError(scrub(f"count_url: {_final_error(outcome, attempts)}", secrets))
    answer, error = _parse(outcome.body)
    if error:
        raise IndexSizeError(scrub(f"count_url: {error}", secrets))
    count = mapping.read_path(answer, mapping.parse_path(spec.count_path))
    if isinstance(count, bool) or not isinstance(count, int | float) or count < 0 or not float(count).is_integer():
        found = "nothing" if count is mapping.MISSING else mapping.kind_of(count)
        raise IndexSizeError(
            f"count_path {spec.count_path!r} holds {found} in the count answer, not a number of documents ({mapping.top_level(answer)})"
        )
    return int(count)


def fetch_index_size_sync(spec: EndpointSpec, **options) -> int | None:
    """fetch_index_size, for a task or a command (asyncio.run)."""
    return asyncio.run(fetch_index_size(spec, **options))
