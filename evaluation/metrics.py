"""Measure definitions: names, parsing, descriptions. The computation is in evaluation.engine.

A measure is named by its ranx string (`recall@100`, `ndcg@10`, `mrr`, `hit_rate@8`), stored
as written and parsed back with `parse_metric`. Only the canonical spelling is accepted
(lowercase, no leading zeros, no ranx `-l` suffix: the relevance threshold belongs to the
golden set, not to the name), so two spellings never label the same number.

Every value is a fraction in [0, 1], averaged over queries.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lib.errors import GoldsetError

MAX_K = 10_000  # deeper than any stored run (lib.runs caps runs at their depth, 1,000 by default)

# family -> (binary, description with {k} and {top} placeholders)
_FAMILIES: dict[str, tuple[bool, str]] = {
    "recall": (
        True,
        "Share of the query's relevant pages that appear in {top}.",
    ),
    "precision": (
        True,
        "Share of {top} positions that hold a relevant page; an empty position counts as a miss.",
    ),
    "hit_rate": (
        True,
        "1 when at least one relevant page is in {top}, else 0: the share of queries with a hit.",
    ),
    "mrr": (
        True,
        "1 / rank of the first relevant page within {top}, 0 when none is there (mean reciprocal rank).",
    ),
    "map": (
        True,
        "Mean of the precision at the rank of each relevant page within {top}, over all the query's relevant pages.",
    ),
    "ndcg": (
        False,
        "Graded quality of the order of {top}: grades are gains (negative grades count 0), discounted by "
        "log2(rank + 1), divided by the best possible order of the judged pages.",
    ),
}
SUPPORTED_FAMILIES = tuple(_FAMILIES)

_NAME = re.compile(r"(?P<family>[a-z_]+)(?:@(?P<k>[0-9]+))?")


@dataclass(frozen=True)
class Metric:
    """One measure. `k` is the cut-off, or None for the whole (depth-capped) ranking."""

    name: str
    family: str
    k: int | None

    @property
    def binary(self) -> bool:
        """True when a page counts as relevant or not by the golden set's relevance threshold."""
        return _FAMILIES[self.family][0]

    @property
    def graded(self) -> bool:
        """True when the grades themselves matter (nDCG); such metrics ignore the threshold."""
        return not self.binary

    @property
    def description(self) -> str:
        top = f"the top {self.k}" if self.k else "the whole ranking"
        text = _FAMILIES[self.family][1].format(k=self.k, top=top)
        if self.binary:
            text += " Relevant means grade >= the golden set's relevance threshold."
        return text

    def __str__(self) -> str:
        return self.name


def parse_metric(name: str) -> Metric:
    """The Metric named `name`; GoldsetError (naming the field `metric`) when it is not one."""
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or match["family"] not in _FAMILIES:
        raise GoldsetError(
            f"unknown metric {name!r}; use a ranx name such as recall@100, ndcg@10, mrr, hit_rate@8 "
            f"(families: {', '.join(SUPPORTED_FAMILIES)})",
            field="metric",
        )
    raw_k = match["k"]
    if raw_k is None:
        return Metric(name=name, family=match["family"], k=None)
    k = int(raw_k)
    if k < 1 or k > MAX_K or raw_k != str(k):
        raise GoldsetError(
            f"metric {name!r}: the cut-off after '@' must be a whole number from 1 to {MAX_K} written without leading zeros",
            field="metric",
        )
    return Metric(name=name, family=match["family"], k=k)


def parse_metrics(names: Iterable[str]) -> tuple[Metric, ...]:
    """Metrics for `names`, in order, duplicates dropped; one GoldsetError listing every bad name."""
    metrics: dict[str, Metric] = {}
    problems: list[str] = []
    for name in names:
        try:
            metrics.setdefault(name, parse_metric(name))
        except GoldsetError as exc:
            problems.append(exc.message)
    if problems:
        raise GoldsetError("some metric names are not valid", problems=problems, field="metrics")
    return tuple(metrics.values())


def default_metrics(k_first: int, k_final: int) -> tuple[Metric, ...]:
    """The measures every run is scored with, for a golden set's `k_first` and `k_final`.

    In order: recall@5, recall@k_final, recall@10, recall@20, recall@50, recall@k_first,
    ndcg@10, mrr, hit_rate@k_final, precision@k_final, with repeats dropped (k_final = 10
    gives one recall@10, in the place of recall@k_final).
    """
    for label, k in (("k_first", k_first), ("k_final", k_final)):
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise GoldsetError(f"{label} must be a whole number from 1 to {MAX_K}, got {k!r}", field=label)
    return parse_metrics(
        [
            "recall@5",
            f"recall@{k_final}",
            "recall@10",
            "recall@20",
            "recall@50",
            f"recall@{k_first}",
            "ndcg@10",
            "mrr",
            f"hit_rate@{k_final}",
            f"precision@{k_final}",
        ]
    )
