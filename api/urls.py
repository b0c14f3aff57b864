"""The REST API under /api/v1/, its schema and docs, and the token pages of a golden set.

Paths end as the issue names them: collections and objects with a slash, the qrels,
queries, answers and diff of a version, and a query's answer, without one. Every other /api/ path answers 404 in the
API's error shape (ApiNotFound, last).
"""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api.converters import EndpointNameConverter, SeriesNameConverter, VersionNumberConverter
from api.views import (
    answers,
    audit,
    chunkings,
    comparisons,
    endpoint_depth,
    endpoints,
    evaluations,
    golden_sets,
    incidents,
    judgments,
    model_fills,
    model_labels,
    monitoring,
    oracle_experiments,
    runs,
    series,
    tokens,
    version_tags,
    versions,
)
from api.views.not_found import ApiNotFound

register_converter(VersionNumberConverter, "version")
register_converter(SeriesNameConverter, "series")
register_converter(EndpointNameConverter, "endpoint")

SET = "api/v1/golden-sets/<slug:slug>/"
VERSION = SET + "versions/<version:number>/"
# Series names hold spaces (and may hold slashes): sent URL-encoded, `bm25%20nightly`.
SERIES = SET + "series/<series:series>/"
ENDPOINT = SET + "endpoints/<endpoint:endpoint>/"

urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script (CSP).
    # Swagger UI adds <style> elements of its own as it draws: styles only are let in here.
    path(
        "api/docs/", csp_update({"style-src": [UNSAFE_INLINE]})(SpectacularSwaggerSplitView.as_view(url_name="api_schema")), name="api_docs"
    ),
    path("api/v1/golden-sets/", golden_sets.GoldenSetListApi.as_view(), name="api_golden_sets"),
    path(SET, golden_sets.GoldenSetDetailApi.as_view(), name="api_golden_set"),
    path(SET + "versions/", versions.VersionsApi.as_view(), name="api_versions"),
    path(VERSION, versions.VersionDetailApi.as_view(), name="api_version"),
    path(SET + "audit/", audit.AuditRecordListApi.as_view(), name="api_audit_records"),
    path(
        "api/v1/organisations/<slug:org_slug>/audit/", audit.OrganisationAuditRecordListApi.as_view(), name="api_organisation_audit_records"
    ),
    path(SET + "tags/", version_tags.VersionTagListApi.as_view(), name="api_version_tags"),
    path(SET + "tags/<str:name>/", version_tags.VersionTagDetailApi.as_view(), name="api_version_tag"),
    path(SET + "publish-jobs/<int:job_id>/", versions.PublishJobDetailApi.as_view(), name="api_publish_job"),
    path(VERSION + "qrels", versions.VersionQrelsApi.as_view(), name="api_version_qrels"),
    path(VERSION + "queries", versions.VersionQueriesApi.as_view(), name="api_version_queries"),
    path(VERSION + "answers", answers.VersionAnswersApi.as_view(), name="api_version_answers"),
    path(VERSION + "model-fills/", model_fills.VersionModelFillsApi.as_view(), name="api_version_model_fills"),
    path(VERSION + "model-fills/<int:fill_id>/qrels", model_fills.VersionModelFillQrelsApi.as_view(), name="api_version_model_fill_qrels"),
    path(VERSION + "diff/<version:other>", versions.VersionDiffApi.as_view(), name="api_version_diff"),
    path(SET + "runs/", runs.RunsApi.as_view(), name="api_runs"),
    path(SET + "runs/<int:run_id>/", runs.RunDetailApi.as_view(), name="api_run"),
    path(SET + "run-uploads/<int:job_id>/", runs.RunUploadJobDetailApi.as_view(), name="api_run_upload"),
    path(SET + "runs/<int:run_id>/archive/", runs.RunArchiveApi.as_view(), name="api_run_archive"),
    path(SET + "runs/<int:run_id>/unarchive/", runs.RunUnarchiveApi.as_view(), name="api_run_unarchive"),
    path(SET + "runs/<int:run_id>/mark-complete/", runs.RunMarkCompleteApi.as_view(), name="api_run_mark_complete"),
    path(SET + "runs/<int:run_id>/mark-partial/", runs.RunMarkPartialApi.as_view(), name="api_run_mark_partial"),
    path(SET + "runs/<int:run_id>/comparisons/", comparisons.RunComparisonApi.as_view(), name="api_run_comparison"),
    path(SET + "runs/<int:run_id>/evaluations/", evaluations.RunEvaluationListApi.as_view(), name="api_run_evaluations"),
    path(SET + "evaluations/", evaluations.EvaluationListApi.as_view(), name="api_evaluations"),
    path(SET + "judgments/", judgments.JudgmentImportApi.as_view(), name="api_judgments"),
    path(SET + "queries/<path:query_id>/answer", answers.QueryAnswerApi.as_view(), name="api_query_answer"),
    path(SET + "chunkings/", chunkings.ChunkingsApi.as_view(), name="api_chunkings"),
    path(SET + "chunkings/<str:name>/chunks/", chunkings.ChunkingChunksApi.as_view(), name="api_chunking_chunks"),
    path(SET + "document/", chunkings.DocumentApi.as_view(), name="api_document"),
    path(SET + "series/", series.SeriesListApi.as_view(), name="api_series"),
    path(SERIES + "nights/", series.SeriesNightsApi.as_view(), name="api_series_nights"),
    path(SET + "endpoints/", endpoints.EndpointListApi.as_view(), name="api_endpoints"),
    path(ENDPOINT, endpoints.EndpointDetailApi.as_view(), name="api_endpoint"),
    path(ENDPOINT + "probes/", endpoints.EndpointProbeListApi.as_view(), name="api_endpoint_probes"),
    path(ENDPOINT + "index-probes/", endpoints.EndpointIndexProbeListApi.as_view(), name="api_endpoint_index_probes"),
    path(ENDPOINT + "runs/", endpoints.EndpointRunNowApi.as_view(), name="api_endpoint_runs"),
    path(ENDPOINT + "runs/<int:night_id>/", endpoints.EndpointNightDetailApi.as_view(), name="api_endpoint_night"),
    path(SET + "monitoring/", monitoring.MonitoringApi.as_view(), name="api_monitoring"),
    path(SET + "incidents/", incidents.IncidentListApi.as_view(), name="api_incidents"),
    path(SET + "incidents/<int:incident_id>/", incidents.IncidentDetailApi.as_view(), name="api_incident"),
    path(SET + "model-labels/calibration/", model_labels.ModelLabelCalibrationApi.as_view(), name="api_model_label_calibration"),
    path(SET + "depth-asks/", endpoint_depth.EndpointDepthApi.as_view(), name="api_endpoint_depth"),
    path(SET + "depth-asks/<int:job_id>/", endpoint_depth.EndpointDepthDetailApi.as_view(), name="api_endpoint_depth_detail"),
    path(SET + "oracle-experiments/", oracle_experiments.OracleExperimentsApi.as_view(), name="api_oracle_experiments"),
    path(
        SET + "oracle-experiments/<int:experiment_id>/",
        oracle_experiments.OracleExperimentDetailApi.as_view(),
        name="api_oracle_experiment",
    ),
    path(
        SET + "oracle-experiments/<int:experiment_id>/continue/",
        oracle_experiments.OracleExperimentContinueApi.as_view(),
        name="api_oracle_experiment_continue",
    ),
    path(
        SET + "oracle-experiments/<int:experiment_id>/answers/",
        oracle_experiments.OracleExperimentAnswersApi.as_view(),
        name="api_oracle_experiment_answers",
    ),
    re_path(r"^api/", ApiNotFound.as_view()),
    # Pages (HTML) where managers make and revoke tokens.
    path("sets/<slug:slug>/tokens/", tokens.golden_set_tokens, name="api_tokens"),
    path("sets/<slug:slug>/tokens/<int:token_id>/revoke/", tokens.golden_set_token_revoke, name="api_token_revoke"),
]
