"""Answer judges: a model behind an OpenAI-compatible chat API that grades a generated
answer against the reference answer with an editable rubric (correct, partly or wrong;
supported by its context or not), asked through lib.chat, the one chat client.

`answer_judge_add` records one (every fault named by its field; the rubric kept with its
hash: an edit is a new hash, its grades apart). `grade_answers` asks it about each answer.
Its reading of the judge's answer is strict: the two lines "grade: correct|partly|wrong"
and "supported: yes|no" must both be there, once each (or repeated alike); anything else
is an error naming what was wrong, with the raw answer kept, never a guess.

The rubric's layout (DEFAULT_RUBRIC: "Question:", "Reference answer:", "Answer to grade:"
lines and the context after "Context the answer was given:") is read back by `rubric_read`
for the stand-in servers of the tests, which grade with no model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from answers.checks import base_url_problems, limits_problems, name_problem
from answers.generation import api_key_read
from answers.models import AnswerJudge
from goldenset.models import GoldenSet
from lib.chat import ChatRequest, ChatResult, ChatSettings, Waiting, chat_complete, run_reporting
from lib.errors import ConflictError, ProblemCollector
from lib.hashing import text_hash

QUESTION_SLOT = "{{question}}"
REFERENCE_SLOT = "{{reference}}"
ANSWER_SLOT = "{{answer}}"
CONTEXT_SLOT = "{{context}}"
SLOTS = (QUESTION_SLOT, REFERENCE_SLOT, ANSWER_SLOT, CONTEXT_SLOT)
GRADES = ("correct", "partly", "wrong")
USER_AGENT = "Goldset answer judge"
ALIASES_LINE = "Accepted variants: "
NO_CONTEXT = "(no context)"

DEFAULT_RUBRIC = f"""You grade an answer to a question against the reference answer, as a careful examiner would.

Question: {QUESTION_SLOT}
Reference answer: {REFERENCE_SLOT}
Answer to grade: {ANSWER_SLOT}

Context the answer was given:
{CONTEXT_SLOT}

Grade the answer:
correct = it says what the reference answer (or an accepted variant) says, in any wording;
partly = it says part of it, or says it among claims that are wrong;
wrong = it does not say it, says something else, or says it does not know.
Then say whether the context supports the answer: yes when the context states what the answer says, no otherwise.

Answer with exactly these two lines and nothing else:
grade: correct|partly|wrong
supported: yes|no"""


@dataclass(frozen=True)
class AnswerToGrade:
    key: Hashable
    question: str
    reference: str
    aliases: tuple[str, ...]
    answer: str
    context_text: str  # the context the answer was made with, as its prompt held it ("" for none)


@dataclass
class AnswerJudgeResult:
    """The grade ("correct", "partly", "wrong") and whether the context supports the answer,
    both None with `error` when the judge's answer could not be read (or never came)."""

    key: Hashable
    grade: str | None
    supported: bool | None
    raw: str
    error: str | None
    requests: int
    prompt_tokens: int
    completion_tokens: int


def rubric_problem(rubric: str) -> str | None:
    """Why `rubric` cannot be a judge's rubric, or None: it must hold all four slots."""
    if not rubric or not rubric.strip():
        return "the rubric is empty"
    missing = [slot for slot in SLOTS if slot not in rubric]
    if missing:
        return f"the rubric must hold {', '.join(missing)}, where the question, reference, answer and context go"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def reference_text(reference: str, aliases: Sequence[str]) -> str:
    """The reference as the rubric holds it: one line, and the accepted variants as a JSON
    list on the next line when there are any."""
    text = _one_line(reference)
    if aliases:
        text += "\n" + ALIASES_LINE + json.dumps([_one_line(alias) for alias in aliases], ensure_ascii=False)
    return text


def rubric_filled(rubric: str, item: AnswerToGrade) -> str:
    """The rubric with its slots filled (str.replace: braces elsewhere stay as written)."""
    return (
        rubric.replace(QUESTION_SLOT, _one_line(item.question))
        .replace(REFERENCE_SLOT, reference_text(item.reference, item.aliases))
        .replace(ANSWER_SLOT, _one_line(item.answer))
        .replace(CONTEXT_SLOT, item.context_text.strip() or NO_CONTEXT)
    )


def _line(label: str, text: str) -> str | None:
    found = re.search(rf"^{re.escape(label)}[ \t]*(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def rubric_read(text: str) -> dict | None:
    """{"question", "reference", "aliases", "answer", "context"} from a prompt laid out as
    DEFAULT_RUBRIC is, or None when `text` is not one."""
    reference = _line("Reference answer:", text)
    question, answer = _line("Question:", text), _line("Answer to grade:", text)
    if reference is None or question is None or answer is None:
        return None
    aliases_line = _line(ALIASES_LINE.strip(), text)
    try:
        aliases = json.loads(aliases_line) if aliases_line else []
    except ValueError:
        aliases = []
    context = ""
    start = text.find("Context the answer was given:\n")
    if start >= 0:
        block = text[start + len("Context the answer was given:\n") :]
        end = block.find("\n\nGrade the answer:")
        context = (block[:end] if end >= 0 else block).strip()
    return {"question": question, "reference": reference, "aliases": aliases, "answer": answer, "context": context}


# "grade: correct", "**Grade:** partly", "## grade = wrong"
_GRADE = re.compile(r"^[\s*#>_-]*grade[\s*_]*[:=][\s*_]*([^\s*_]*)", re.IGNORECASE | re.MULTILINE)
_SUPPORTED = re.compile(r"^[\s*#>_-]*supported[\s*_]*[:=][\s*_]*([^\s*_]*)", re.IGNORECASE | re.MULTILINE)


def _one_of(pattern: re.Pattern, answer: str, name: str, choices: tuple[str, ...]) -> tuple[str | None, str | None]:
    found = {value.lower().rstrip(".") for value in pattern.findall(answer)}
    form = "|".join(choices)
    if not found:
        return None, f"no “{name}:” line in the answer (expected “{name}: {form}”)"
    if len(found) > 1:
        return None, f"the answer gives several {name} values ({', '.join(sorted(found))})"
    value = found.pop()
    if value not in choices:
        return None, f"{name} {value!r} is not one of {form}"
    return value, None


def read_verdict(answer: str) -> tuple[str | None, bool | None, str | None]:
    """(grade, supported, error) from a judge's answer: both read, or both None and the
    error naming every line that was wrong. Never a guess."""
    grade, grade_error = _one_of(_GRADE, answer, "grade", GRADES)
    supported, supported_error = _one_of(_SUPPORTED, answer, "supported", ("yes", "no"))
    errors = [error for error in (grade_error, supported_error) if error]
    if errors:
        return None, None, "; ".join(errors)
    return grade, supported == "yes", None


def answer_judge_add(
    *,
    golden_set: GoldenSet,
    name: str,
    base_url: str,
    model: str,
    rubric: str = DEFAULT_RUBRIC,
    api_key_env: str = "",
    max_in_flight: int = 4,
    timeout_seconds: float = 60.0,
    retries: int = 3,
    price_in: Decimal | None = None,
    price_out: Decimal | None = None,
    user: AbstractBaseUser | None = None,
) -> AnswerJudge:
    """Record an answer judge of `golden_set`. GoldsetError with every fault ("field: why")
    and nothing recorded; ConflictError when the set has a judge of that name."""
    problems = ProblemCollector()
    problem = name_problem(name)
    if problem:
        problems.add(problem)
    base_url_problems(problems, base_url, "an answer judge's base URL")
    limits_problems(
        problems,
        model=model,
        api_key_env=api_key_env,
        max_in_flight=max_in_flight,
        timeout_seconds=timeout_seconds,
        retries=retries,
        price_in=price_in,
        price_out=price_out,
    )
    problem = rubric_problem(rubric)
    if problem:
        problems.add(f"rubric: {problem}")
    problems.raise_if_any("the answer judge cannot be added")
    if AnswerJudge.objects.filter(golden_set=golden_set, name=name.strip()).exists():
        raise ConflictError(f"golden set {golden_set.slug!r} has an answer judge named {name.strip()!r} already", field="name")
    return AnswerJudge.objects.create(
        golden_set=golden_set,
        name=name.strip(),
        base_url=base_url.strip(),
        model=model.strip(),
        rubric=rubric,
        rubric_hash=text_hash(rubric),
        api_key_env=api_key_env or "",
        max_in_flight=max_in_flight,
        timeout_seconds=timeout_seconds,
        retries=retries,
        price_in=price_in,
        price_out=price_out,
        created_by=user,
    )


def _result_of(result: ChatResult) -> AnswerJudgeResult:
    grade = supported = None
    error = result.error
    if result.content is not None:
        grade, supported, error = read_verdict(result.content)
    return AnswerJudgeResult(
        result.key, grade, supported, result.raw, error, result.requests, result.prompt_tokens, result.completion_tokens
    )


def grade_answers(
    judge: AnswerJudge,
    items: Sequence[AnswerToGrade],
    *,
    progress: Callable[[list[AnswerJudgeResult], str | None], None] | None = None,
    every: float = 1.0,
    waiting: Waiting | None = None,
) -> list[AnswerJudgeResult]:
    """Each answer graded by `judge` at temperature 0, in their order; a failed one is a
    result with `error`, never an exception. `progress(settled, note)` as generate_answers
    calls it. GoldsetError, before anything is sent, when the key cannot be sent."""
    chat = ChatSettings(
        base_url=judge.base_url,
        model=judge.model,
        api_key=api_key_read(judge.api_key_env, judge.base_url),
        max_in_flight=judge.max_in_flight,
        timeout_seconds=judge.timeout_seconds,
        retries=judge.retries,
        allowed_networks=tuple(settings.JUDGE_ALLOWED_NETWORKS),
        user_agent=USER_AGENT,
    )
    asked = [ChatRequest(item.key, [{"role": "user", "content": rubric_filled(judge.rubric, item)}], temperature=0) for item in items]

    def start(report):
        if report is None:
            return chat_complete(chat, asked, waiting)
        return chat_complete(chat, asked, waiting, lambda results, note: report([_result_of(result) for result in results], note))

    return [_result_of(result) for result in run_reporting(start, progress, every)]
