"""The golden-set navigation: every page of a set, and which roles may open it.

Each entry names the roles its view lets in, taken from that view's own constant, so the
menu cannot offer a page the view would answer 404 to (tests/goldset/test_navigation.py
follows every link as every role). Staff open every page, as `access_golden_set` lets them.
The project package (floor 5) is the one place that sees every app's pages.
"""

from dataclasses import dataclass

from answers.views import ANSWER_ROLES
from api.views.tokens import MANAGE_ROLES as TOKEN_ROLES
from evaluation.alerts.views import SETTINGS_ROLES
from goldenset.selectors import READ_ROLES
from goldenset.views import AUDIT_ROLES, MEMBER_ROLES, PUBLISH_ROLES
from labeling.coverage.views import COVERAGE_ROLES
from labeling.judging.views import JUDGING_ROLES, PREVIEW_ROLES
from labeling.model_labels.views import MODEL_LABEL_ROLES
from labeling.quality.views import ADJUDICATE_ROLES, AGREEMENT_ROLES, QUALITY_ROLES
from monitoring.endpoints.views import ENDPOINT_ROLES


@dataclass(frozen=True)
class SetPage:
    label: str
    url_name: str  # takes the set's slug as its one argument
    roles: tuple[str, ...]
    # Other url names that belong under this entry (the run page under "Runs"), so the
    # menu marks where the user is.
    also: tuple[str, ...] = ()


SET_PAGES: tuple[SetPage, ...] = (
    SetPage("Overview", "golden_set", READ_ROLES, also=("version", "version_changes")),
    SetPage("Results", "results", READ_ROLES, also=("compare", "run_sweep")),
    SetPage("Runs", "runs", READ_ROLES, also=("run", "run_versions", "run_query")),
    SetPage("Completeness", "completeness", READ_ROLES),
    SetPage("Coverage", "coverage", COVERAGE_ROLES),
    SetPage("Query logs", "query_logs", READ_ROLES, also=("query_log",)),
    SetPage("Monitoring", "monitoring", READ_ROLES),
    SetPage("Endpoints", "endpoints", ENDPOINT_ROLES, also=("endpoint_add", "endpoint_edit", "endpoint_try")),
    SetPage("Alerts", "alerts", READ_ROLES),
    SetPage("Oracle experiments", "oracle_experiments", ANSWER_ROLES, also=("oracle_experiment", "oracle_experiment_start")),
    SetPage("Generators", "generators", ANSWER_ROLES, also=("generator_add", "answer_judge_add")),
    SetPage("Agreement", "agreement", AGREEMENT_ROLES),
    SetPage("Adjudicate", "adjudicate", ADJUDICATE_ROLES, also=("adjudicate_pair",)),
    SetPage("Annotator quality", "quality", QUALITY_ROLES),
    SetPage("Model labels", "model_labels", MODEL_LABEL_ROLES),
    SetPage("Judging screen", "judging_screen", JUDGING_ROLES + PREVIEW_ROLES),  # a preview for non-annotators
    SetPage("Publish", "publish", PUBLISH_ROLES),
    SetPage("Settings", "evaluation_settings", SETTINGS_ROLES),
    SetPage("API tokens", "api_tokens", TOKEN_ROLES),
    SetPage("Members", "golden_set_members", MEMBER_ROLES),
    SetPage("Audit trail", "audit", AUDIT_ROLES),
)


def pages_for(roles: set[str], *, staff: bool) -> list[SetPage]:
    """The set pages a user holding `roles` in the set may open, in menu order."""
    return [page for page in SET_PAGES if staff or roles & set(page.roles)]
