"""The API's answers as the client returns them: plain dicts, typed for a type checker.

Field names and meanings are the API's (`/api/schema/`). Scores are fractions in [0, 1]
named by ranx metric strings (`recall@100`, `ndcg@10`); changes in points are hundredths.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Stage = Literal["first_stage", "reranked", "other"]
EvaluationStatus = Literal["pending", "running", "done", "failed"]
QrelsFormat = Literal["trec", "json", "beir", "csv", "jsonl"]


class Grade(TypedDict):
    value: int
    label: str


class GoldenSet(TypedDict):
    slug: str
    name: str
    description: str
    corpus: str
    grade_scale: list[Grade]
    relevance_threshold: int
    k_first: int
    k_final: int
    query_slice_fields: list[str]
    page_slice_fields: list[str]
    query_count: int
    latest_version: int | None


class Version(TypedDict):
    number: int
    content_hash: str
    note: str
    author: str | None
    created_at: str
    relevance_threshold: int
    k_first: int
    k_final: int
    query_slice_fields: list[str]
    page_slice_fields: list[str]
    query_count: int
    label_count: int
    relevant_count: int
    queries_without_relevant: int


class VersionAnswer(TypedDict):
    """A reference answer as a version froze it (what the oracle experiment grades against)."""

    query_id: str
    answer: str
    aliases: list[str]
    key_facts: list[str]


class VersionQuery(TypedDict):
    """A query as a version holds it, with its sampling weight as frozen at publish.

    `inclusion_probability` is the chance the sampling design drew the query from a query
    log (weight a drawn query's score by its inverse to estimate for the traffic); None for
    a query added by hand, whose weight is unknown: count it apart, never weight it."""

    query_id: str
    text: str
    metadata: dict[str, Any]
    label_count: int
    relevant_count: int
    reference_answer: dict[str, Any] | None
    inclusion_probability: float | None
    stratum: str
    traffic_count: int | None


class Run(TypedDict):
    id: int
    name: str
    system: str
    stage: Stage
    source_name: str
    uploaded_by: str | None
    created_at: str
    query_count: int
    entry_count: int
    depth_cap: int
    dropped_by_depth: int
    external_doc_count: int
    extra_column_lines: int
    series: str | None
    measured_at: str | None
    chunking: str | None
    failed_query_count: int
    index_size: int | None
    entries_dropped: bool
    archived: bool
    archived_at: str | None
    archived_by: str | None
    expected_query_count: int | None
    answered_query_count: int | None
    partial: bool
    completed_at: str | None
    counted: bool
    partial_note: str


class RunUploadJob(TypedDict):
    """A run upload a worker reads (the API's 202): poll `url` until status is done or failed."""

    id: int
    status: PublishStatus
    source_name: str
    size: int
    system: str
    stage: Stage
    name: str
    chunking: str | None
    run: Run | None
    error: str
    error_code: str | None
    error_status: int | None
    field: str | None
    problems: list[str]
    url: str
    created_at: str
    started_at: str | None
    finished_at: str | None


class EvaluationRun(TypedDict):
    id: int
    name: str
    system: str
    stage: Stage
    archived: bool
    partial: bool


class SliceScores(TypedDict):
    slice: str
    queries_averaged: int
    no_relevant_count: int
    scores: dict[str, float]


class Completeness(TypedDict):
    slice: str
    queries: int
    judged_at_k_final: float
    judged_at_k_first: float
    loro_depth: int | None
    loro_other_runs: int | None
    loro_recall_k_first: float | None
    loro_ndcg_10: float | None
    loro_recall_change_points: float | None
    loro_ndcg_change_points: float | None
    unique_relevant_count: int | None
    loro_emptied_queries: int | None


class WeightedEstimate(TypedDict):
    """A traffic-weighted estimate and its 95% interval (fractions), over `queries` drawn
    queries with a relevant page."""

    estimate: float
    low: float
    high: float
    queries: int


class Evaluation(TypedDict):
    run: EvaluationRun
    version: int
    content_hash: str
    status: EvaluationStatus
    error: str
    started_at: str | None
    finished_at: str | None
    metrics: list[str]
    queries_in_version: int
    queries_averaged: int
    unanswered_count: int
    no_relevant_count: int
    scores: dict[str, float]
    slices: list[SliceScores]
    completeness: list[Completeness]
    judged_floor: float
    unreliable: bool
    # Set when the version's queries were drawn from a query log, else None: metric name ->
    # estimate overall, stratum -> metric name -> estimate, and the averaged queries added by
    # hand (in `scores`, not in `weighted`).
    weighted: dict[str, WeightedEstimate] | None
    weighted_strata: dict[str, dict[str, WeightedEstimate]] | None
    unweighted_queries: int | None


PublishStatus = Literal["queued", "running", "done", "failed"]


class PublishProgress(TypedDict):
    step: str
    number: int
    steps: int
    done: int
    total: int | None


class PublishJob(TypedDict):
    id: int
    status: PublishStatus
    note: str
    progress: PublishProgress | None
    version: Version | None
    error: str
    url: str
    created_at: str
    started_at: str | None
    finished_at: str | None


class Night(TypedDict):
    run_id: int
    name: str
    measured_at: str
    version: int | None
    k_first: int | None
    k_final: int | None
    recall_first: float | None
    recall_final: float | None
    failed_query_count: int
    failing: bool
    index_size: int | None
    slice_scores: dict[str, float]


class Series(TypedDict):
    name: str
    endpoint: str | None
    system: str | None
    stage: Stage | None
    run_count: int
    created_at: str
    latest: Night | None


class SeriesNights(TypedDict):
    series: str
    slice: str
    nights: list[Night]


class Chunking(TypedDict):
    """A named way of cutting the corpus's documents (`documents`, each one chunk, is implicit)."""

    name: str
    description: str
    chunk_count: int
    document_count: int
    created_at: str


class Chunk(TypedDict):
    """Characters [start, end) of a document's text."""

    chunk_id: str
    doc_id: str
    start: int
    end: int


class Document(TypedDict):
    doc_id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]
    content_hash: str
    duplicate_of: str | None
    chunks: dict[str, list[Chunk]]


class ChunkingImport(TypedDict):
    corpus: str
    chunking: str
    chunks: int
    documents: int
    replaced: bool


class VersionTag(TypedDict):
    """A movable name for a version (`prod`): the number and hash it names now."""

    name: str
    version: int
    content_hash: str
    moved_by: str | None
    moved_at: str


class VersionTagMove(TypedDict):
    name: str
    from_version: int | None
    to_version: int
    to_hash: str
    moved_by: str | None
    moved_at: str
    note: str


class VersionTagDetail(VersionTag):
    history: list[VersionTagMove]


class ComparisonFigure(TypedDict):
    """One (metric, slice) of a run comparison: means are fractions, drops in points."""

    metric: str
    slice: str
    queries: int
    baseline: float
    candidate: float
    drop_points: float
    p_value: float
    detectable_points: float | None
    significant: bool
    failed: bool


class RunComparison(TypedDict):
    status: Literal["pending", "done"]
    version: int
    content_hash: str
    tag: str | None
    baseline_run: str
    candidate_run: str
    max_drop: float
    passed: bool | None
    figures: list[ComparisonFigure]
