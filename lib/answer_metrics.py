"""Exact match and token F1 of a generated answer against a reference answer and its
aliases, as SQuAD v1.1's official evaluation script (evaluate-v1.1.py) computes them: both
texts normalised (lower case, punctuation removed, the articles a, an and the removed,
whitespace collapsed), exact match 1.0 when the normalised texts are equal, token F1 the
harmonic mean of the precision and recall of the shared tokens (a multiset: a token
repeated counts as often as both sides hold it); the best over the reference and each alias.

Values are fractions in [0, 1]. Punctuation is Python's `string.punctuation`, as the
official script has it: ASCII only, so a unicode dash or quote stays part of its token.
"""

import re
import string
from collections import Counter
from collections.abc import Iterable

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalize_answer: lower case, punctuation dropped, articles dropped,
    whitespace collapsed (in the official order, which matters: "a.b" loses its dot first)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, truth: str) -> float:
    """1.0 when the normalised texts are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def token_f1(prediction: str, truth: str) -> float:
    """Token F1 of the normalised texts. Two empty texts score 0.0, as the v1.1 script does
    (its common-token count is 0), not 1.0 as v2.0's does."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(truth).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def best_scores(prediction: str, truths: Iterable[str]) -> tuple[float, float]:
    """(exact match, token F1), each the best over `truths` (the reference and its aliases),
    as the official script's metric_max_over_ground_truths; (0.0, 0.0) for no truths."""
    truths = [truth for truth in truths if truth is not None]
    if not truths:
        return 0.0, 0.0
    return max(exact_match(prediction, t) for t in truths), max(token_f1(prediction, t) for t in truths)
