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
The requests, their bounds and retries are lib.chat's, the one chat client: this module
builds the prompts and reads the grades. A failed pair is an answer with `error` (and the
raw text when there was one), never an exception: one bad answer must not lose the rest.
`grade_pairs_sync` can hand the caller what settled as it settles, and each attempt that
failed and will be tried again, so that a job over an endpoint that never answers shows so
at the first timeout, not once a whole chunk has used up its retries. The API key is read
by the caller from the environment and only ever put in the Authorization header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lib.chat import ChatRequest, ChatResult, ChatSettings, Waiting, chat_complete, run_reporting
from lib.llm_judging import (
    MAX_BATCH,
    batch_messages_for,
    messages_for,
    read_batch_grades,
    read_grade,
)

__all__ = ["JudgeSettings", "PairGrade", "PairText", "Waiting", "grade_pairs", "grade_pairs_sync"]

USER_AGENT = "Goldset model judge"


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


def _units(pairs: Sequence[PairText], batch_size: int) -> list[list[int]]:
    """The requests to send, each a list of indexes into `pairs`: one pair each, or up to
    `batch_size` pairs of one query, in the order the query is first met."""
    if batch_size <= 1:
        return [[index] for index in range(len(pairs))]
    by_query: dict[int, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_query.setdefault(pair.key[0], []).append(index)
    return [indexes[start : start + batch_size] for indexes in by_query.values() for start in range(0, len(indexes), batch_size)]


def _settle(call: ChatResult, unit: list[int], results: list[PairGrade], scale: tuple[int, int]) -> None:
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
    results = [PairGrade(pair.key) for pair in pairs]
    units = _units(pairs, settings.batch_size)
    requests = []
    for number, unit in enumerate(units):
        first = pairs[unit[0]]
        messages = (
            messages_for(prompt, first.query, first.passage)
            if len(unit) == 1
            else batch_messages_for(prompt, first.query, [pairs[index].passage for index in unit])
        )
        requests.append(ChatRequest(number, messages, temperature=0))

    def settled(calls: list[ChatResult], note: str | None) -> None:
        for call in calls:
            _settle(call, units[call.key], results, scale)
        if report is not None:
            report([results[index] for call in calls for index in units[call.key]], note)

    chat = ChatSettings(
        base_url=settings.base_url,
        model=settings.model,
        api_key=settings.api_key,
        max_in_flight=settings.max_in_flight,
        timeout_seconds=settings.timeout_seconds,
        retries=settings.retries,
        allowed_networks=settings.allowed_networks,
        user_agent=USER_AGENT,
    )
    await chat_complete(chat, requests, waiting, settled)
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
    failed attempt to be tried again (or None); see lib.chat.run_reporting."""
    return run_reporting(lambda report: grade_pairs(settings, prompt, pairs, scale, waiting, report), progress, every)
