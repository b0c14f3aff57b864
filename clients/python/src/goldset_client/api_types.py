"""The answers of the API's newer operations (live endpoints, model labels, oracle
experiments, reference answers, version diffs, incidents, the monitoring summary, label imports), written from /api/schema/'s components: one
TypedDict per component, named as the schema names it without "Output". Field types are the
schema's (dates are ISO 8601 strings). tests/clients/test_client_covers_schema.py checks
their keys against the schema, so a field added or dropped by the server fails a test here.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from goldset_client.types import Night


class Header(TypedDict):
    """Schema Header."""

    name: str
    value: str


class NightlyRun(TypedDict):
    """One querying of a live endpoint (scheduled, or run now) and the run it made; schema NightlyRun."""

    id: int
    endpoint: str
    slot: str
    trigger: str
    status: str
    queries_total: int
    queries_done: int
    failed_count: int
    run_id: int | None
    version: NotRequired[int | None]
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    url: str


class Endpoint(TypedDict):
    """A live endpoint as registered, without secrets: header values are shown as typed; schema EndpointOutput."""

    name: str
    system: str
    stage: str
    preset: str
    url: str | None
    method: str | None
    body_template: str | None
    params_template: str | None
    headers: list[Header] | None
    hits_path: str
    doc_id_path: str
    score_path: str
    index_size_path: str
    count_url: str | None
    count_path: str
    timeout_seconds: float
    retries: int
    max_in_flight: int
    max_per_second: float
    run_schedule: str
    probe_schedule: str
    exact_body_template: str | None
    exact_params_template: str | None
    shard_path: str
    index_probe_schedule: str
    index_recall_floor: float
    enabled: bool
    series: str
    created_at: str
    last_night: NightlyRun | None
    running: NightlyRun | None
    next_run_at: str | None
    next_probe_at: str | None


class Probe(TypedDict):
    """Schema Probe."""

    canary: int
    query_id: str
    doc_id: str
    rank: int | None
    k: int
    found: bool
    latency_ms: float | None
    error: str


class ProbeRound(TypedDict):
    """Schema ProbeRound."""

    id: int
    slot: str
    trigger: str
    finished_at: str | None
    canaries: int
    missed: int
    probes: list[Probe]


class ProbeHistory(TypedDict):
    """Schema ProbeHistory."""

    endpoint: str
    rounds: list[ProbeRound]


class ShardFigures(TypedDict):
    """Schema ShardFigures."""

    exact: int
    returned: int
    share: float


class IndexProbe(TypedDict):
    """Schema IndexProbe."""

    id: int
    slot: str
    trigger: str
    version: int | None
    k: int | None
    finished_at: str | None
    queries_asked: int
    queries_compared: int
    ann_recall: float | None
    per_shard: dict[str, ShardFigures]
    errors: int
    error: str


class IndexProbeHistory(TypedDict):
    """Schema IndexProbeHistory."""

    endpoint: str
    index_recall_floor: float
    probes: list[IndexProbe]


class ModelLabelSource(TypedDict):
    """Schema ModelLabelSource."""

    model: str
    prompt_hash: str
    label_count: int


class ModelAgreement(TypedDict):
    """Schema ModelAgreement."""

    name: str
    pairs: int
    too_few_pairs: bool
    minimum_pairs: int
    model_only_share: float | None
    human_only_share: float | None
    kappa_quadratic: float | None
    kappa_unweighted: float | None
    values: list[int]
    confusion: list[list[int]]
    model_relevant: int
    model_relevant_humans_not: int
    human_relevant: int
    human_relevant_model_not: int


class ModelDisagreement(TypedDict):
    """Schema ModelDisagreement."""

    query_id: str
    doc_id: str
    human: int
    model: int
    flip: bool


class ModelFilledScore(TypedDict):
    """Schema ModelFilledScore."""

    metric: str
    human: float | None
    with_model_fill: float | None


class ModelShareOfTopK(TypedDict):
    """Schema ModelShareOfTopK."""

    k: int
    model: int
    labelled: int
    share: float | None


class ModelRunRanking(TypedDict):
    """Schema ModelRunRanking."""

    run_id: int
    name: str
    stage: str
    human: float | None
    filled: float | None
    human_rank: int
    filled_rank: int
    scores: list[ModelFilledScore]
    model_shares: list[ModelShareOfTopK]


class RecallInterval(TypedDict):
    """Schema RecallInterval."""

    recall: float | None
    low: float | None
    high: float | None
    share_relevant: float
    human_labels: int
    model_labels: int


class ModelSampleRecall(TypedDict):
    """Schema ModelSampleRecall."""

    sample_id: int
    k: int
    found: int
    population: int
    population_now: int
    model_called: int
    judged: int
    relevant: int
    human_only: RecallInterval | None
    prediction_powered: RecallInterval | None
    prediction_powered_label: str
    why_not: str


class ModelCalibration(TypedDict):
    """Schema ModelCalibration."""

    model: str
    prompt_hash: str
    version: NotRequired[int | None]
    model_labels: int
    metric: str
    overall: ModelAgreement | None
    slices: list[ModelAgreement]
    worst: list[ModelDisagreement]
    filled_pairs: int
    runs: list[ModelRunRanking]
    tau: float | None
    model_fill: str
    recalls: list[ModelSampleRecall]


class ModelLabels(TypedDict):
    """Schema ModelLabels."""

    sources: list[ModelLabelSource]
    calibration: ModelCalibration | None


class OracleExperiment(TypedDict):
    """Schema OracleExperimentOutput."""

    id: int
    status: str
    version: int
    run: str
    run_id: int
    generator: str
    judge: NotRequired[str | None]
    closed_book: bool
    sample_size: int | None
    seed: int
    k_final: int
    k_sweep: list[int]
    context_token_budget: int | None
    budget_dollars: str | None
    max_requests: int | None
    queries_total: int
    answers_total: int
    answers_done: int
    answers_failed: int
    grades_done: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cost: str
    progress_note: str
    error: str
    created_at: str
    finished_at: str | None


class GeneratedAnswer(TypedDict):
    """Schema GeneratedAnswerOutput."""

    query_id: str
    context: str
    sweep_k: int
    context_ids: list[str]
    context_tokens: int
    prompt_hash: str
    text: str
    error: str
    exact_match: float | None
    token_f1: float | None
    model_grade: str | None
    requests: int


class ReferenceAnswer(TypedDict):
    """Schema ReferenceAnswer."""

    answer: str
    aliases: list[str]
    key_facts: list[str]


class DiffCounts(TypedDict):
    """Schema _DiffCounts."""

    queries_added: int
    queries_removed: int
    pairs_added: int
    pairs_removed: int
    pairs_regraded: int
    answers_added: int
    answers_changed: int
    answers_removed: int


class Pair(TypedDict):
    """Schema _Pair."""

    query_id: str
    doc_id: str
    grade: int


class Regraded(TypedDict):
    """Schema _Regraded."""

    query_id: str
    doc_id: str
    old_grade: int
    new_grade: int


class VersionDiff(TypedDict):
    """Schema VersionDiff."""

    from_version: int
    from_hash: str
    to_version: int
    to_hash: str
    counts: DiffCounts
    truncated: bool
    queries_added: list[str]
    queries_removed: list[str]
    pairs_added: list[Pair]
    pairs_removed: list[Pair]
    pairs_regraded: list[Regraded]
    answers_added: list[str]
    answers_changed: list[str]
    answers_removed: list[str]


class VersionModelFill(TypedDict):
    """Schema VersionModelFill."""

    id: int
    variant: str
    version: int
    version_hash: str
    content_hash: str
    model: str
    prompt_hash: str
    human_label_count: int
    model_label_count: int
    model_relevant_count: int
    model_share: float
    created_at: str


class Incident(TypedDict):
    """Schema Incident."""

    id: int
    kind: str
    subject: str
    title: str
    state: str
    muted_until: str | None
    owner: NotRequired[str | None]
    opened_at: str
    updated_at: str
    resolved_at: str | None
    alert_count: int
    messages: int


class IncidentAlert(TypedDict):
    """Schema IncidentAlert."""

    id: int
    kind: str
    metric: str
    slice: str
    value: float
    reference: float | None
    message: str
    run: NotRequired[str | None]
    night: NotRequired[str | None]
    sent: bool
    created_at: str


class IncidentDetail(Incident):
    """Schema IncidentDetail: an incident with its alerts."""

    alerts: list[IncidentAlert]


class JudgmentImport(TypedDict):
    """Schema JudgmentImportOutput."""

    golden_set: str
    pages_created: int
    queries_created: int
    judgments_created: int
    grades: dict[str, int]
    duplicate_lines: int
    notes: list[str]


class MonitoringThresholds(TypedDict):
    """Schema MonitoringThresholds."""

    drop_points: float
    slice_floor: float
    rerank_loss_points: float


class SeriesTrend(TypedDict):
    """Schema SeriesTrend."""

    name: str
    endpoint: NotRequired[str | None]
    system: str
    stage: str
    latest: Night | None
    last_night: NightlyRun | None
    running: NightlyRun | None
    next_run_at: str | None
    next_probe_at: str | None


class RerankLoss(TypedDict):
    """Schema RerankLoss."""

    system: str
    measured_at: str
    version: int
    recall_first: float
    recall_final: float
    loss_points: float


class ProbeSummary(TypedDict):
    """Schema ProbeSummary."""

    endpoint: str
    canaries: int
    rounds: int
    latest_round_at: str | None
    latest_missed: int


class MonitoringAlert(TypedDict):
    """Schema MonitoringAlert."""

    id: int
    kind: str
    subject: str
    version: int
    run_id: int | None
    canary: int | None
    metric: str
    value: float
    reference: float | None
    message: str
    created_at: str


class Monitoring(TypedDict):
    """Schema Monitoring."""

    version: int | None
    slice: str
    slice_choices: list[str]
    thresholds: MonitoringThresholds
    series: list[SeriesTrend]
    rerank: list[RerankLoss]
    probes: list[ProbeSummary]
    open_alerts: list[MonitoringAlert]


class EndpointDepthAsk(TypedDict):
    """Schema EndpointDepthOutput: an endpoint asked once at a depth, and its run once done."""

    id: int
    status: str
    endpoint: str
    version: int
    depth: int
    queries_total: int
    queries_done: int
    failed_count: int
    run_id: int | None
    run: str | None
    error: str
    created_at: str
    finished_at: str | None


class AuditObject(TypedDict):
    """What an audit record is about."""

    type: str
    id: str
    label: str


class AuditRecord(TypedDict):
    """Schema AuditRecord: one manager's or admin's action (append-only)."""

    id: int
    at: str
    user: str
    action: str
    object: AuditObject
    before: Any
    after: Any


class OrganisationAuditRecord(AuditRecord):
    """Schema OrganisationAuditRecord: an audit record with the set it happened in ("" for
    the organisation's own actions)."""

    golden_set: str
