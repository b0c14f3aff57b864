"""Reads of an evaluation's figures at each level (SEMANTICS.md, "Documents, chunkings and
levels"): what the results and run pages, and a page comparing chunkings, show side by
side. The document level is every run's; a run of a chunking adds its chunk level, with
evidence recall@k and prompt tokens@k_final."""

from collections.abc import Iterable
from dataclasses import dataclass, field

from evaluation.models import Evaluation, Score
from goldenset.models import Chunking

# What the pages say of the two levels, once.
LEVELS_SENTENCE = (
    "Document level maps each chunk to its document (a document counts once, at its best chunk) and scores "
    "against the document labels; chunk level scores the chunks themselves against the labels projected onto "
    "the run's chunking, where evidence recall@k is the share of the relevant spans' characters its top k chunks cover."
)


@dataclass
class LevelFigures:
    """One level of one evaluation: `name` "document" or "chunk", `chunking` the run's
    chunking ("documents" for a run of documents), `scores` metric -> fraction over all
    queries, `queries` metric -> queries averaged; `prompt_tokens` (chunk level only) the
    mean characters / 4 of the top `k_final` chunks."""

    name: str
    chunking: str
    scores: dict[str, float] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)
    prompt_tokens: float | None = None
    k_final: int | None = None


def evaluations_levels(evaluations: Iterable[Evaluation]) -> dict[int, list[LevelFigures]]:
    """evaluation id -> its levels, document first, from one read of the overall scores."""
    found = {e.pk: e for e in evaluations}
    if not found:
        return {}
    runs = Evaluation.objects.filter(pk__in=found).values_list("pk", "run__chunking__name", "prompt_tokens_k_final", "version__k_final")
    out: dict[int, list[LevelFigures]] = {}
    for pk, chunking, prompt_tokens, k_final in runs:
        name = chunking or Chunking.DOCUMENTS
        out[pk] = [LevelFigures(Score.Level.DOCUMENT, name)]
        # A run of documents has a chunk level when its corpus has chunkings: evidence recall
        # and prompt tokens only (evaluation.chunk_scoring.documents_level).
        if chunking or prompt_tokens is not None:
            out[pk].append(LevelFigures(Score.Level.CHUNK, name, prompt_tokens=prompt_tokens, k_final=k_final))
    rows = Score.every_level.filter(evaluation_id__in=found, slice="").order_by("id")
    for pk, level, metric, value, queries in rows.values_list("evaluation_id", "level", "metric", "value", "queries_averaged"):
        for figures in out.get(pk, ()):
            if figures.name == level:
                figures.scores[metric] = value
                figures.queries[metric] = queries
    return out


def evaluation_levels(evaluation: Evaluation) -> list[LevelFigures]:
    """The evaluation's levels, document first (evaluations_levels of one)."""
    return evaluations_levels([evaluation]).get(evaluation.pk, [])
