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


def chunk_level(
    *, ranked: RankedRun, version: Version, chunking: Chunking, metrics: Sequence[Metric], rows: np.ndarray | None = None
) -> ChunkLevel:
    """`ranked`, a run of `chunking` (its doc keys are Chunk keys), at chunk level on `version`.
    `rows`: each entry's row in the chunking's table, when the caller looked them up already."""
    labels = chunk_inputs.chunk_labels(version, chunking)
    qrels = labels.qrels
    grouped = chunk_inputs.chunks_in_groups(ranked=ranked, version=version, chunking=chunking)
    if grouped is not ranked:  # duplicates stood in for: other keys, other rows
        ranked, rows = grouped, None
    table = chunk_inputs.chunk_table(chunking)
    rows = table.rows(ranked.doc_keys) if rows is None else rows
    match = engine.match_run(qrels, ranked, rows=engine.TableRows(labels=labels.label_rows, entries=rows, count=len(table.keys)))
    result = engine.evaluate_run(qrels, ranked, metrics, relevance_threshold=version.relevance_threshold, match=match)
    figures = [
        LevelFigure(metric, value, result.query_count, result.no_relevant_count)
        for metric, value in result.means.items()
        if value is not None
    ]
    evidence = (labels.evidence_offsets, labels.evidence_pages, labels.evidence_starts, labels.evidence_ends)
    more, prompt_tokens = _evidence_and_tokens(version, match, evidence, rows, table)
    return ChunkLevel(figures=figures + more, prompt_tokens=prompt_tokens)


def documents_level(*, ranked: RankedRun, version: Version, match: engine.RunMatch) -> ChunkLevel:
    """A run of documents at chunk level, each of its chunks a whole document (the implicit
    chunking `documents`): its metrics would be its document level's, so only evidence
    recall@k and prompt tokens@k_final, which let it be compared with a run of a chunking.
    `match`: the run matched against the version's labels (engine.match_run), as its
    document level has it already."""
    # The lengths read are those of the documents the figures look at: a labelled one (the
    # only kind that can hold evidence: top_chunks_cover passes over the others), read once
    # a process for the version, and the rest of each query's top k_final (the prompt).
    inside = ranked.doc_keys > 0
    labelled = inside & (match.entry_label >= 0)
    prompted = inside & ~labelled & (ranked.ranks <= version.k_final)
    ends = np.zeros(len(ranked), dtype=np.int64)
    ends[labelled] = chunk_inputs.labelled_page_lengths(version, ranked.doc_keys[labelled])
    ends[prompted] = chunk_inputs.page_text_lengths(ranked.doc_keys[prompted])
    rows = np.arange(len(ends), dtype=np.int64)  # entry e is "chunk" e: its whole document
    whole_documents = levels.ChunkTable(keys=rows, pages=ranked.doc_keys, starts=np.zeros(len(ends), dtype=np.int64), ends=ends)
    more, prompt_tokens = _evidence_and_tokens(version, match, chunk_inputs.document_evidence(version), rows, whole_documents)
    return ChunkLevel(figures=more, prompt_tokens=prompt_tokens)


def _evidence_and_tokens(
    version: Version, match, evidence, entry_rows: np.ndarray, chunks: levels.ChunkTable
) -> tuple[list[LevelFigure], float | None]:
    """Evidence recall@k (k_final, k_first) and prompt tokens@k_final of a run whose entry
    e is the chunk at row entry_rows[e] of `chunks`, given each query's relevant `evidence`
    (offsets, pages, starts, ends)."""
    offsets, pages, starts, ends = evidence
    query_count = len(offsets) - 1
    owners = np.repeat(np.arange(query_count), np.diff(offsets))
    totals = np.bincount(owners, weights=ends - starts, minlength=query_count)
    with_evidence = totals > 0
    ks = sorted({version.k_final, version.k_first})
    top = levels.top_chunks_cover(
        starts=match.starts,
        ends=match.ends,
        entry_rows=entry_rows,
        entry_label=match.entry_label,
        chunks=chunks,
        evidence_offsets=offsets,
        evidence_pages=pages,
        evidence_starts=starts,
        evidence_ends=ends,
        ks=ks,
        prompt_k=version.k_final,
    )
    figures = []
    if with_evidence.any():
        for k, covered in zip(ks, top.covered):
            value = float(np.mean(covered[with_evidence] / totals[with_evidence]))
            figures.append(LevelFigure(evidence_metric(k), value, int(with_evidence.sum()), int(query_count - with_evidence.sum())))
    answered = match.run_row >= 0
    prompt_tokens = float(np.mean(top.characters[answered])) / levels.CHARACTERS_PER_TOKEN if answered.any() else None
    return figures, prompt_tokens
