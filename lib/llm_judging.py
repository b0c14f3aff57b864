"""Pure helpers of a model that grades (query, page) pairs through a chat-completions API:
the default prompt, the messages sent, the grade read from an answer, the backoff between
attempts and the money a run cost. No I/O here: labeling.model_labels.judges sends.

The prompt follows the structure of UMBRELA (castorini/umbrela; Upadhyay et al., arXiv
2411.08275): the query, the passage, a 0-3 scale with what each grade means, and an answer
asked for as the score alone after "##final score:". The wording is Goldset's own.
"""

import re
from dataclasses import dataclass
from decimal import Decimal

from lib import retrying

QUERY_SLOT = "{query}"
PASSAGE_SLOT = "{passage}"
# An API key is named, never typed: the variable must start with this, so that a manager
# cannot have the worker send DATABASE_URL or SECRET_KEY to a server of their choice.
API_KEY_ENV_PREFIX = "JUDGE_"
API_KEY_ENV_NAME = re.compile(r"^JUDGE_[A-Z0-9_]+$")
PASSAGE_CHARS = 4000  # a page's text is cut here: a grade needs the gist, tokens cost money
RETRY_AFTER_CAP = 60.0  # seconds: hosted APIs ask for up to a minute when rate limited
BACKOFF_BASE = 0.5
BACKOFF_CAP = 20.0
# Passages of one query graded in one request at most: past a score of passages a model's
# answers drift and the prompt grows past what small local models hold (20 x PASSAGE_CHARS).
MAX_BATCH = 20

DEFAULT_PROMPT = """You judge how well a passage answers a search query, as a careful human assessor would.

Grade the passage on this scale:
0 = the passage has nothing to do with the query.
1 = the passage is on the query's topic but does not answer it.
2 = the passage answers part of the query, or answers it among much unrelated text.
3 = the passage is dedicated to the query and holds its exact answer.

Grade 1 when the passage only touches the query's subject without answering it.

Query: {query}
Passage: {passage}

Think it through privately: what the query asks, whether the passage says it, and how much of it.
Then answer with the score only, on one line, in this form:
##final score: N"""

# "##final score: 2", "## Final Score = 2", "final score: **2**"
_FINAL = re.compile(r"#*\s*final\s+score\s*[:=]?\s*\**\s*(-?\d+)\b", re.IGNORECASE)
_BARE = re.compile(r"^\s*\**\s*(-?\d+)\s*\**\s*\.?\s*$")


def prompt_problem(text: str) -> str | None:
    """Why `text` cannot be a judge's prompt, or None: it must name both slots."""
    if not text or not text.strip():
        return "the prompt is empty"
    missing = [slot for slot in (QUERY_SLOT, PASSAGE_SLOT) if slot not in text]
    if missing:
        return f"the prompt must hold {' and '.join(missing)}, where the pair's text goes"
    return None


def api_key_env_problem(name: str) -> str | None:
    """Why `name` cannot name the API key's variable, or None ("" means no key is sent)."""
    if name and not API_KEY_ENV_NAME.match(name):
        return f"{name!r} is not a variable Goldset reads: name one starting with {API_KEY_ENV_PREFIX} (capitals, digits, _)"
    return None


def messages_for(prompt: str, query: str, passage: str) -> list[dict[str, str]]:
    """The chat messages for one pair: the prompt with its slots filled, as the user's turn.
    str.replace, not str.format: braces elsewhere in an edited prompt stay as written."""
    text = prompt.replace(QUERY_SLOT, query.strip()).replace(PASSAGE_SLOT, passage.strip()[:PASSAGE_CHARS])
    return [{"role": "user", "content": text}]


BATCH_INSTRUCTIONS = """

There are {count} passages above, numbered [1] to [{count}]. Grade each passage on its own, against the query alone.
Answer with one line per passage, in their order, each the passage's number and its score in this form:
[1] ##final score: N
and nothing else."""


def batch_messages_for(prompt: str, query: str, passages: list[str]) -> list[dict[str, str]]:
    """The chat messages grading several passages of one query in one request: the prompt
    with the passages, numbered [1], [2], ..., where the passage goes, and the batch's
    answer form after it (one "[i] ##final score: N" line per passage, read_batch_grades)."""
    # Each passage starts a line of its own, after the prompt's "Passage:" label.
    numbered = "".join(f"\n\n[{number}] {passage.strip()[:PASSAGE_CHARS]}" for number, passage in enumerate(passages, start=1))
    text = prompt.replace(QUERY_SLOT, query.strip()).replace(PASSAGE_SLOT, numbered)
    return [{"role": "user", "content": text + BATCH_INSTRUCTIONS.format(count=len(passages))}]


NO_SCORE = "no score found in the answer (expected “##final score: N” or a number alone)"


@dataclass(frozen=True)
class GradeRead:
    grade: int | None
    error: str | None


def read_grade(answer: str, scale: tuple[int, int]) -> GradeRead:
    """The grade in a model's answer: the number after "final score", or the answer when it
    is a number alone. Never a guess: no such number, two different ones, or one off the
    scale is an error naming what was wrong."""
    low, high = scale
    found = {int(value) for value in _FINAL.findall(answer)}
    if not found:
        bare = _BARE.match(answer)
        found = {int(bare.group(1))} if bare else set()
    if not found:
        return GradeRead(None, NO_SCORE)
    if len(found) > 1:
        return GradeRead(None, f"the answer gives several scores ({', '.join(map(str, sorted(found)))})")
    grade = found.pop()
    if not low <= grade <= high:
        return GradeRead(None, f"score {grade} is not on the set's scale {low}-{high}")
    return GradeRead(grade, None)


# "[2] ##final score: 1", "2. final score: 1", "2: 1"
_NUMBERED = re.compile(r"^\s*\**\s*\[?\s*(\d+)\s*\]?\s*[.):\-]?\s*(.*)$")


def read_batch_grades(answer: str, count: int, scale: tuple[int, int]) -> list[GradeRead]:
    """One grade per passage of a batch of `count`, read from the answer's numbered lines
    (each by read_grade). A passage the answer does not number, numbers twice with different
    scores, or grades off the scale fails alone, with the reason; the others keep theirs.
    Lines that are not numbered, number a passage the batch does not have, or hold no
    score (a numbered line of reasoning) are ignored."""
    found: dict[int, list[GradeRead]] = {}
    for line in answer.splitlines():
        numbered = _NUMBERED.match(line)
        if numbered and 1 <= int(numbered.group(1)) <= count:
            read = read_grade(numbered.group(2), scale)
            if read.error != NO_SCORE:
                found.setdefault(int(numbered.group(1)), []).append(read)
    out = []
    for number in range(1, count + 1):
        reads = found.get(number)
        if not reads:
            out.append(GradeRead(None, f"the batch answer gives no score for passage [{number}] of {count}"))
        elif len({(read.grade, read.error) for read in reads}) > 1:
            out.append(GradeRead(None, f"the batch answer grades passage [{number}] more than once, differently"))
        else:
            out.append(reads[0])
    return out


def backoff_delay(retry: int, random_part: float, retry_after: float | None = None) -> float:
    """Seconds before retry number `retry` of a judge's request (lib.retrying's rule with the
    judge's caps)."""
    return retrying.backoff_delay(
        retry,
        random_part,
        retry_after,
        base=BACKOFF_BASE,
        cap=BACKOFF_CAP,
        retry_after_cap=RETRY_AFTER_CAP,
    )


def token_count(value: object) -> int:
    """A count of tokens from an answer's `usage` as the number it says, 0 for anything that
    is not a whole number of at least 0 (a server that sends "12", null or -5 has not told
    how many it used): one odd answer must neither fail a job nor lower its cost."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return int(value) if float(value).is_integer() else 0


def cost(prompt_tokens: int, completion_tokens: int, price_in: Decimal | None, price_out: Decimal | None) -> Decimal | None:
    """The money of the tokens at the given prices per million (input, output), or None when
    no price was given."""
    if price_in is None and price_out is None:
        return None
    total = Decimal(prompt_tokens) * (price_in or 0) + Decimal(completion_tokens) * (price_out or 0)
    return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))
