"""How the oracle experiment asks its generator and its answer judge, on the one chat client
(lib.chat): a block of items in, one result per item out, what settled handed to `progress`
as it settles (in the caller's thread, so it may write), failures as values.

A generator's prompt is its template with {{question}} and {{context}} filled in, sent as
one user message at the generator's temperature; the answer is the reply's text, stripped.
An empty reply is a failed answer ("the generator answered nothing"), not an empty answer:
garbage is recorded as such and asked again by the next run. The prompt's hash stored with
each answer is the template's (Generator.prompt_hash, or its sha256 when that is empty):
the same template and context make the same prompt.

An answer judge is sent its rubric, the question, the reference answer and the generated
answer, and must answer a JSON object {"grade": "correct" | "partly" | "wrong",
"supported": true | false} (text around it is allowed, the first {...} is read); anything
else is a grade that could not be read, kept with its raw answer and its error.
"""

import json
import re
from dataclasses import dataclass

from django.conf import settings

from answers.contexts import Context
from answers.models import AnswerGrade, AnswerJudge, Generator
from lib.chat import ChatRequest, ChatSettings, Waiting, chat_complete_sync
from lib.hashing import text_hash

DEFAULT_PROMPT = "Answer the question from the context. Answer with a short phrase.\n\nContext:\n{{context}}\n\nQuestion: {{question}}"
JUDGE_FORMAT = (
    '\n\nAnswer with one JSON object: {"grade": "correct" | "partly" | "wrong", "supported": true | false}, '
    "where supported says whether the answer is supported by a context."
)
# What settled is handed to `progress` at most this often, in seconds.
PROGRESS_SECONDS = 1.0
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


@dataclass(frozen=True)
class AnswerItem:
    key: tuple[int, str]  # (query pk, context kind)
    question: str
    context: Context


@dataclass
class AnswerResult:
    item: AnswerItem
    text: str = ""
    error: str | None = None
    raw: str = ""
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_hash: str = ""


@dataclass(frozen=True)
class GradeItem:
    answer_pk: int
    question: str
    reference: str
    answer: str


@dataclass
class GradeResult:
    item: GradeItem
    grade: str | None = None
    supported: bool | None = None
    error: str | None = None
    raw: str = ""
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def template_of(generator: Generator) -> tuple[str, str]:
    """(the generator's template, its hash)."""
    template = generator.prompt or DEFAULT_PROMPT
    return template, generator.prompt_hash or text_hash(template)


def prompt_for(template: str, question: str, context: str) -> str:
    # Each part filled once, so a question holding "{{context}}" is not filled in a second time.
    head, found, tail = template.partition("{{question}}")
    if not found:
        return template.replace("{{context}}", context)
    return head.replace("{{context}}", context) + question + tail.replace("{{context}}", context)


def _settings(model: Generator | AnswerJudge, api_key: str | None) -> ChatSettings:
    return ChatSettings(
        base_url=model.base_url,
        model=model.model,
        api_key=api_key,
        max_in_flight=model.max_in_flight,
        timeout_seconds=model.timeout_seconds,
        retries=model.retries,
        allowed_networks=tuple(settings.JUDGE_ALLOWED_NETWORKS),
    )


def answer_items(
    generator: Generator, items: list[AnswerItem], *, api_key: str | None, progress=None, waiting: Waiting | None = None
) -> list[AnswerResult]:
    """Each item answered by `generator` (kind openai); `progress(results)` as they settle."""
    template, digest = template_of(generator)
    by_key = {item.key: item for item in items}
    requests = [
        ChatRequest(item.key, [{"role": "user", "content": prompt_for(template, item.question, item.context.text)}], generator.temperature)
        for item in items
    ]

    def result(r) -> AnswerResult:
        text = (r.content or "").strip()
        error = r.error or (None if text else "the generator answered nothing")
        return AnswerResult(by_key[r.key], text, error, r.raw, r.requests, r.prompt_tokens, r.completion_tokens, digest)

    report = None if progress is None else (lambda settled, retrying: progress([result(r) for r in settled]))
    return [result(r) for r in chat_complete_sync(_settings(generator, api_key), requests, waiting, report, PROGRESS_SECONDS)]


def read_judgement(content: str) -> tuple[str, bool | None]:
    """(grade, supported) from a judge's answer; ValueError saying why it cannot be read."""
    match = _OBJECT.search(content or "")
    if match is None:
        raise ValueError("the judge's answer holds no JSON object")
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the judge's JSON cannot be read ({exc.msg})") from exc
    grade = value.get("grade") if isinstance(value, dict) else None
    if grade not in AnswerGrade.Grade.values:
        raise ValueError(f"the judge's grade {grade!r} is not one of correct, partly, wrong")
    supported = value.get("supported")
    return grade, supported if isinstance(supported, bool) else None


def grade_items(
    judge: AnswerJudge, items: list[GradeItem], *, api_key: str | None, progress=None, waiting: Waiting | None = None
) -> list[GradeResult]:
    """Each answer graded by `judge`; `progress(results)` as they settle."""
    by_key = {item.answer_pk: item for item in items}
    requests = [
        ChatRequest(
            item.answer_pk,
            [
                {"role": "system", "content": judge.rubric + JUDGE_FORMAT},
                {"role": "user", "content": f"Question: {item.question}\nReference answer: {item.reference}\nAnswer: {item.answer}"},
            ],
        )
        for item in items
    ]

    def result(r) -> GradeResult:
        out = GradeResult(
            by_key[r.key],
            error=r.error,
            raw=r.raw,
            requests=r.requests,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
        )
        if r.error is None:
            try:
                out.grade, out.supported = read_judgement(r.content)
            except ValueError as exc:
                out.error = str(exc)
        return out

    report = None if progress is None else (lambda settled, retrying: progress([result(r) for r in settled]))
    return [result(r) for r in chat_complete_sync(_settings(judge, api_key), requests, waiting, report, PROGRESS_SECONDS)]
