"""Answers made by a generator: the one entry the oracle experiment (and anything else)
calls, `generate_answers(generator, requests)`.

A generator of kind `openai` is asked through lib.chat, the one chat client: its prompt
with {{question}} and {{context}} filled in, the context written as numbered passages with
their ids (`context_text`), as one user message. One of kind `endpoint` is the team's own
answer endpoint, asked through the same bounded machinery (lib.chat.exchange) with its
request made as a retrieval endpoint's is (monitoring.endpoints: the URL, headers with
${SEARCH_...} secrets, the JSON body template) holding {{query}} and {{context}} (the
passages as a JSON list of {"id", "text"}), and its answer's text read at `answer_path`.

Which addresses may be asked: a chat model's, JUDGE_ALLOWED_NETWORKS (the one allow-list of
every model Goldset asks: pair judges, generators, answer judges); an answer endpoint's,
RETRIEVAL_ALLOWED_NETWORKS, as it is registered like the retrieval endpoints beside it.

The layout of DEFAULT_PROMPT ("Question: ..." on a line, "Context:" then the passages) is
read back by `prompt_read`, so that the stand-in servers of the tests and the demo answer
from what a generator sends them, with no model.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from answers.models import Generator
from lib import outbound
from lib.chat import (
    Channel,
    ChatRequest,
    ChatResult,
    ChatSettings,
    HttpCall,
    Read,
    Unreadable,
    Waiting,
    chat_complete,
    exchange,
    run_reporting,
)
from lib.errors import GoldsetError
from lib.hashing import text_hash
from monitoring.endpoints import mapping
from monitoring.endpoints.spec import EndpointSpec, MissingVariable, resolve_headers

QUESTION_SLOT = "{{question}}"
CONTEXT_SLOT = "{{context}}"
USER_AGENT = "Goldset generator"
NO_PASSAGES = "(no passages)"
I_DONT_KNOW = "I don't know"

DEFAULT_PROMPT = f"""Answer the question from the context below, and from nothing else.
Answer in a few words or one short sentence, with nothing before or after it.
If the context does not hold the answer, answer exactly: {I_DONT_KNOW}

Question: {QUESTION_SLOT}

Context:
{CONTEXT_SLOT}

Answer:"""

# Values an answer endpoint's templates are checked with (monitoring.endpoints.spec_problems):
# quotes, a backslash and non-ASCII, as a retrieval endpoint's are.
ENDPOINT_SAMPLES = {
    "query": mapping.SAMPLE_VALUES["query"],
    "context": [{"id": "d-1", "text": 'a "quoted" \\ passage é'}],
}


@dataclass(frozen=True)
class ContextPassage:
    id: str
    text: str


@dataclass(frozen=True)
class AnswerRequest:
    """A question to answer with `context` (in its order; () asks with no context)."""

    key: Hashable
    question: str
    context: tuple[ContextPassage, ...]


@dataclass
class AnswerResult:
    """The answer's `text`, or None and `error`; `raw` what came back (cut, for a person
    to read); `requests` sent (retries included); the tokens the model said it used (0
    for an answer endpoint, which does not say); the prompt's hash (a chat generator's
    prompt, an endpoint generator's request and answer path)."""

    key: Hashable
    text: str | None
    error: str | None
    raw: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    prompt_hash: str


def prompt_hash(prompt: str) -> str:
    """sha256 hex of a prompt's text: an edit is a new hash, its answers apart."""
    return text_hash(prompt)


def endpoint_hash(request: dict, answer_path: str) -> str:
    """sha256 hex of an endpoint generator's request and answer path, its "prompt"."""
    return text_hash(json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False), answer_path)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def context_text(passages: Sequence[ContextPassage]) -> str:
    """The passages as the prompt holds them: each starts with a line "[n] id: <id>", then
    its text; a blank line between two. NO_PASSAGES when there are none."""
    if not passages:
        return NO_PASSAGES
    return "\n\n".join(f"[{number}] id: {_one_line(p.id)}\n{p.text.strip()}" for number, p in enumerate(passages, start=1))


def prompt_filled(prompt: str, question: str, passages: Sequence[ContextPassage]) -> str:
    """The prompt with its slots filled (str.replace, so braces elsewhere stay as written);
    the question on one line, so that its line can be read back."""
    return prompt.replace(QUESTION_SLOT, _one_line(question)).replace(CONTEXT_SLOT, context_text(passages))


_QUESTION_LINE = re.compile(r"^Question:[ \t]*(.*)$", re.MULTILINE)
_CONTEXT_START = re.compile(r"^Context:[ \t]*\n", re.MULTILINE)
_CONTEXT_END = re.compile(r"\n\s*\nAnswer:\s*$")
_PASSAGE_HEADER = re.compile(r"^\[\d+\] id: .*$", re.MULTILINE)


def prompt_read(text: str) -> tuple[str, list[str]] | None:
    """(question, the passages' texts) from a prompt laid out as DEFAULT_PROMPT is, or None
    when `text` is not: what a stand-in server answers from."""
    question = _QUESTION_LINE.search(text)
    start = _CONTEXT_START.search(text, question.end()) if question else None
    if start is None:
        return None
    block = text[start.end() :]
    end = _CONTEXT_END.search(block)
    block = block[: end.start()] if end else block
    passages = [part.strip() for part in _PASSAGE_HEADER.split(block)[1:]]
    return question.group(1).strip(), [passage for passage in passages if passage]


def endpoint_spec(generator: Generator) -> EndpointSpec:
    """An endpoint generator's request as the spec monitoring.endpoints checks and renders."""
    request = generator.request or {}
    return EndpointSpec(
        preset="generic",
        url=request.get("url", ""),
        method=request.get("method", "POST"),
        body_template=request.get("body_template", ""),
        params_template=request.get("params_template", ""),
        headers=tuple((name, value) for name, value in request.get("headers", [])),
        timeout_seconds=generator.timeout_seconds,
        retries=generator.retries,
        max_in_flight=generator.max_in_flight,
    )


def api_key_read(api_key_env: str, base_url: str) -> str | None:
    """The API key, read from the variable `api_key_env` names at call time (None when none
    is named); GoldsetError, before anything is sent, when it cannot be sent."""
    if not api_key_env:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise GoldsetError(f"the variable {api_key_env} is not set where the worker runs; nothing was sent")
    # The key goes only where its operator said (<VARIABLE>_HOSTS), not to any URL a manager types.
    problem = outbound.secret_host_problem(api_key_env, urlsplit(base_url).hostname or "", os.environ)
    if problem:
        raise GoldsetError(f"{problem}; nothing was sent")
    return key


def _answer_of(result: ChatResult, digest: str) -> AnswerResult:
    text, error = result.content, result.error
    if text is not None:
        text = text.strip()
        if not text:
            text, error = None, "the answer is empty"
    return AnswerResult(result.key, text, error, result.raw, result.requests, result.prompt_tokens, result.completion_tokens, digest)


def _answer_reader(answer_path: str) -> Callable[[str], Read]:
    segments = mapping.parse_path(answer_path)

    def read(text: str) -> Read:
        try:
            answer = json.loads(text)
        except ValueError as exc:
            raise Unreadable(f"the answer is not JSON ({exc})") from None
        value = mapping.read_path(answer, segments)
        if value is mapping.MISSING:
            raise Unreadable(f"answer_path {answer_path!r} is not in the answer ({mapping.top_level(answer)})")
        if not isinstance(value, str):
            raise Unreadable(f"answer_path {answer_path!r} holds {mapping.kind_of(value)}, not the answer's text")
        return Read(value)

    return read


def _endpoint_calls(generator: Generator, requests: Sequence[AnswerRequest]) -> tuple[Channel, list[HttpCall]]:
    spec = endpoint_spec(generator)
    secrets: dict[str, str] = {}
    try:
        resolved = resolve_headers(spec, env_prefix=settings.RETRIEVAL_HEADER_ENV_PREFIX, secrets=secrets)
    except MissingVariable as exc:
        raise GoldsetError(f"{exc}; nothing was sent") from None
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if spec.method == "POST":
        headers["Content-Type"] = "application/json"
    headers.update(resolved)
    calls = []
    for request in requests:
        values = {"query": request.question, "context": [{"id": p.id, "text": p.text} for p in request.context]}
        url = mapping.render_url(spec.url, values)
        if spec.params_template:
            url += ("&" if "?" in url else "?") + mapping.render_url(spec.params_template, values)
        body = mapping.render_json(spec.body_template, values).encode() if spec.method == "POST" else None
        calls.append(HttpCall(request.key, url, body, spec.method))
    channel = Channel(
        check_url=mapping.render_url(spec.url, ENDPOINT_SAMPLES),
        headers=headers,
        max_in_flight=generator.max_in_flight,
        timeout_seconds=generator.timeout_seconds,
        retries=generator.retries,
        allowed_networks=tuple(settings.RETRIEVAL_ALLOWED_NETWORKS),
        secrets=secrets,
    )
    return channel, calls


def generate_answers(
    generator: Generator,
    requests: Sequence[AnswerRequest],
    *,
    progress: Callable[[list[AnswerResult], str | None], None] | None = None,
    every: float = 1.0,
    waiting: Waiting | None = None,
) -> list[AnswerResult]:
    """Each request answered by `generator`, in their order; a failed one is a result with
    `error`, never an exception. `progress(settled, note)` is called in the caller's thread
    at most every `every` seconds and at the end, with the results settled since and the
    latest failed attempt to be tried again (lib.chat.run_reporting).

    Raises GoldsetError, before anything is sent, when the generator cannot be asked at all:
    its key's variable unset or not allowed to its host, a header's secret likewise."""
    if generator.kind == Generator.Kind.ENDPOINT:
        digest = generator.prompt_hash or endpoint_hash(generator.request, generator.answer_path)
        channel, calls = _endpoint_calls(generator, requests)

        def start(report):
            return exchange(channel, calls, _answer_reader(generator.answer_path), waiting, report)

    else:
        digest = generator.prompt_hash or prompt_hash(generator.prompt)
        chat = ChatSettings(
            base_url=generator.base_url,
            model=generator.model,
            api_key=api_key_read(generator.api_key_env, generator.base_url),
            max_in_flight=generator.max_in_flight,
            timeout_seconds=generator.timeout_seconds,
            retries=generator.retries,
            allowed_networks=tuple(settings.JUDGE_ALLOWED_NETWORKS),
            user_agent=USER_AGENT,
        )
        asked = [
            ChatRequest(
                request.key,
                [{"role": "user", "content": prompt_filled(generator.prompt, request.question, request.context)}],
                temperature=generator.temperature,
            )
            for request in requests
        ]

        def start(report):
            return chat_complete(chat, asked, waiting, report)

    def settled(report):
        if report is None:
            return start(None)
        return start(lambda results, note: report([_answer_of(result, digest) for result in results], note))

    return [_answer_of(result, digest) for result in run_reporting(settled, progress, every)]
