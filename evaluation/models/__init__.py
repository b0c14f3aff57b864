"""Runs, their evaluations against versions, the scores, and the alerts they raise; one
module a family (settings, runs, scores, alerts), every model importable from here."""

from evaluation.models.alerts import Alert, Canary, Incident, IncidentMessage, SliceMute, WebhookDelivery
from evaluation.models.runs import Run, RunData, RunPooledLabels, RunQueryFailure, RunUploadJob, Series, VersionScoringInputs
from evaluation.models.scores import Completeness, DocumentScores, Evaluation, Score
from evaluation.models.settings import EvaluationSettings

__all__ = [
    "EvaluationSettings",
    "Series",
    "Run",
    "RunData",
    "RunQueryFailure",
    "RunUploadJob",
    "VersionScoringInputs",
    "RunPooledLabels",
    "Evaluation",
    "DocumentScores",
    "Score",
    "Completeness",
    "Incident",
    "IncidentMessage",
    "SliceMute",
    "Alert",
    "Canary",
    "WebhookDelivery",
]
