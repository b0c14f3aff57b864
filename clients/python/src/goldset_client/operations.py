"""Which client method calls each operation of Goldset's API, by the operationId
/api/schema/ gives it. tests/clients/test_client_covers_schema.py checks this table against
the server's schema both ways (every operation has a method, every entry is an operation and
a method of GoldsetClient) and each method's TypedDict answer against the schema's fields.

A new API operation fails that test until it has a method and a row here.
"""

from __future__ import annotations

OPERATIONS: dict[str, str] = {
    # --- golden sets and versions ---
    "golden_sets_list": "golden_sets",
    "golden_sets_retrieve": "golden_set",
    "versions_list": "versions",
    "versions_retrieve": "version",
    "versions_publish": "publish",
    "publish_jobs_retrieve": "publish_job",
    "versions_qrels": "qrels",
    "versions_queries": "queries",
    "versions_answers": "answers",
    "versions_diff": "version_diff",
    "version_tags_list": "tags",
    "version_tags_retrieve": "tag",
    "version_tags_move": "move_tag",
    # --- labels: judgments, model labels, reference answers ---
    "judgments_import": "import_labels",
    "versions_model_fills_list": "model_fills",
    "versions_model_fills_create": "add_model_fill",
    "versions_model_fills_qrels": "model_fill_qrels",
    "model_labels_calibration": "model_label_calibration",
    "queries_answer_retrieve": "reference_answer",
    "queries_answer_update": "set_reference_answer",
    "queries_answer_destroy": "delete_reference_answer",
    # --- corpus: chunkings and documents ---
    "chunkings_list": "chunkings",
    "chunkings_upload": "upload_chunks",
    "chunkings_chunks": "chunks",
    "documents_get": "document",
    # --- runs and their scores ---
    "runs_list": "runs",
    "runs_upload": "upload_run",
    "run_uploads_retrieve": "run_upload",
    "runs_retrieve": "run",
    "runs_archive": "archive_run",
    "runs_unarchive": "unarchive_run",
    "runs_mark_complete": "mark_run_complete",
    "runs_mark_partial": "mark_run_partial",
    "run_evaluations_list": "run_evaluations",
    "evaluations_list": "scores",
    "run_comparisons_create": "compare_runs",
    # --- oracle experiments ---
    "oracle_experiments_list": "oracle_experiments",
    "oracle_experiments_create": "start_oracle_experiment",
    "oracle_experiments_retrieve": "oracle_experiment",
    "oracle_experiments_answers": "oracle_experiment_answers",
    "oracle_experiments_continue": "continue_oracle_experiment",
    "endpoint_depth_create": "ask_endpoint_at_depth",
    "endpoint_depth_retrieve": "depth_ask",
    # --- monitoring: series, live endpoints, incidents ---
    "series_list": "series",
    "series_nights": "series_nights",
    "monitoring_retrieve": "monitoring",
    "endpoints_list": "endpoints",
    "endpoints_retrieve": "endpoint",
    "endpoint_probes_list": "endpoint_probes",
    "endpoint_index_probes_list": "endpoint_index_probes",
    "endpoint_runs_create": "run_endpoint",
    "endpoint_runs_retrieve": "endpoint_night",
    "incidents_list": "incidents",
    "incidents_retrieve": "incident",
    "incidents_update": "incident_update",
    # --- audit log (issue 29) ---
    "audit_records_list": "audit_records",
    "organisation_audit_records_list": "organisation_audit_records",
}
