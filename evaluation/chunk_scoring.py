"""The chunk level of a run of a chunking (SEMANTICS.md, "Chunk level", "Evidence
recall@k", "Prompt tokens@k"): its metrics against the version's labels projected onto the
chunking, what its top k chunks cover of each query's relevant evidence, and what they
cost a prompt. evaluation.services.evaluation_compute stores them beside the document
level."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation import chunk_inputs, engine
from evaluation.metrics import Metric
from goldenset.models import Chunking, Version
from lib import levels
from lib.runs import RankedRun


def evidence_metric(k: int) -> str:
    """The Score.metric name of evidence recall@k."""
    return f"evidence_recall@{k}"


@dataclass(frozen=True)
class LevelFigure:
    """One chunk-level figure: a fraction in [0, 1] averaged over `queries` queries, with
    `no_relevant` queries of the version left out (no relevant chunk, or no relevant evidence)."""

    metric: str
    value: float
    queries: int
    no_relevant: int


@dataclass(frozen=True)
class ChunkLevel:
    """A run's chunk-level figures: metrics and evidence recall@k (k_final, k_first), and
    prompt tokens@k_final (characters of the top k_final chunks / 4, averaged over the
    version's queries the run answers; None when it answers none)."""

    figures: list[LevelFigure]
    prompt_tokens: float | None


def chunk_level(*, ranked: RankedRun, version: Version, chunking: Chunking, metrics: Sequence[Metric]) -> ChunkLevel:
    """`ranked`, a run of `chunking` (its doc keys are Chunk keys), at chunk level on `version`."""
    labels = chunk_inputs.chunk_labels(version, chunking)
    qrels = labels.qrels
    match = engine.match_run(qrels, ranked)
    result = engine.evaluate_run(qrels, ranked, metrics, relevance_threshold=version.relevance_threshold, match=match)
    figures = [
        LevelFigure(metric, value, result.query_count, result.no_relevant_count)
        for metric, value in result.means.items()
        if value is not None
    ]

    table = chunk_inputs.chunk_table(chunking)
    rows = table.rows(ranked.doc_keys)
    entry_pages, entry_starts, entry_ends = table.pages[rows], table.starts[rows], table.ends[rows]
    evidence_lengths = labels.evidence_ends - labels.evidence_starts
    owners = np.repeat(np.arange(len(qrels.query_ids)), np.diff(labels.evidence_offsets))
    totals = np.bincount(owners, weights=evidence_lengths, minlength=len(qrels.query_ids))
    with_evidence = totals > 0
    for k in sorted({version.k_final, version.k_first}):
        covered = levels.evidence_covered(
            starts=match.starts,
            ends=match.ends,
            entry_pages=entry_pages,
            entry_starts=entry_starts,
            entry_ends=entry_ends,
            evidence_offsets=labels.evidence_offsets,
            evidence_pages=labels.evidence_pages,
            evidence_starts=labels.evidence_starts,
            evidence_ends=labels.evidence_ends,
            k=k,
        )
        if with_evidence.any():
            value = float(np.mean(covered[with_evidence] / totals[with_evidence]))
            figures.append(LevelFigure(evidence_metric(k), value, int(with_evidence.sum()), int(len(totals) - with_evidence.sum())))

    characters = levels.prompt_characters(match.starts, match.ends, entry_ends - entry_starts, version.k_final)
    answered = match.run_row >= 0
    prompt_tokens = float(np.mean(characters[answered])) / levels.CHARACTERS_PER_TOKEN if answered.any() else None
    return ChunkLevel(figures=figures, prompt_tokens=prompt_tokens)
