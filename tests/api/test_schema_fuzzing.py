"""schemathesis against /api/schema/ with every check it has (`--checks all`): no 5xx, no
response outside the schema, no schema-violating request accepted, no schema-valid one
refused as malformed.

Every operation of the schema is fuzzed through the WSGI application (no server), with
positive and negative examples (wrong types, huge numbers, NUL bytes, unknown query
parameters), authenticated by a write token on a small golden set with a published
version and a scored run, a finished publish job, a live endpoint, its series and a night, and an incident.
The slug, run id, job id, series, endpoint, night id and incident id are pinned to that set's, so that
requests reach the real data and not only the 404 of an unknown slug, run or version (the permission and version
tests cover those).

A request that fits the schema may still be refused for its content: an id the set does
not have, a file that is not a TREC run. The API answers those 422 (and clashes with what
is stored, a name taken or nothing new to publish, 409), never 400, which is kept for
requests that do not fit the schema; positive_data_acceptance is told that 422 is such a
considered answer, as schemathesis's configuration provides for.

Bounded in time: a few examples per operation, derandomized, so the run is the same each
time. Nothing is excluded.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS
from schemathesis.config import ChecksConfig, PositiveDataAcceptanceConfig
from schemathesis.config._auth import AuthConfig

from evaluation.alerts.incidents import incident_alert_add
from evaluation.models import Alert
from evaluation.services import run_import
from goldenset.models import PublishJob
from goldset.wsgi import application
from monitoring.endpoints.services import endpoint_add
from monitoring.nightly.services import nightly_run_request
from tests.api import RUN, SLUG

pytestmark = pytest.mark.whole_system

EXAMPLES_PER_OPERATION = 10


@pytest.fixture
def wsgi_application():
    """The real WSGI application, with the test's database connection kept open across
    requests: Django closes it when a request finishes, which would end the transaction
    the test's data lives in (django.test.Client disconnects the same handler)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield application
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def monitored(run):
    """An endpoint of the set, its series with an uploaded night, and a pending night:
    the monitoring operations reach real rows (the night is never run: tasks sent on
    commit do not run inside a test's transaction)."""
    endpoint = endpoint_add(
        golden_set=run.golden_set,
        name="bm25",
        system="bm25",
        stage="first_stage",
        preset="goldset",
        url="http://127.0.0.1:9/search",
    )
    run_import(
        golden_set=run.golden_set,
        lines=RUN.splitlines(keepends=True),
        source_name="night.run",
        system="bm25",
        stage="first_stage",
        name="bm25 night",
        series=endpoint.series.name,
        measured_at=timezone.now(),
    )
    night = nightly_run_request(endpoint=endpoint, slot=timezone.now())
    # By location: the runs list has a `series` query parameter, which stays fuzzed.
    return {"path.series": endpoint.series.name, "path.endpoint": endpoint.name, "path.night_id": night.pk}


@pytest.fixture
def api_schema(wsgi_application, run, token, monitored):
    loaded = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_application)
    loaded.config.generation.update(max_examples=EXAMPLES_PER_OPERATION, deterministic=True)
    loaded.config.checks = ChecksConfig(
        positive_data_acceptance=PositiveDataAcceptanceConfig(
            expected_statuses=["2xx", "3xx", "401", "403", "404", "409", "422", "429"],
        )
    )
    # Through the schema's own scheme (bearerAuth), not a fixed header, so that the auth
    # checks can take the credentials away and see the request refused.
    loaded.config.auth = AuthConfig(openapi={"bearerAuth": {"bearer": token("write")}})
    # A finished publish job of the set, so that polling one reaches a real row.
    job = PublishJob.objects.create(
        golden_set=run.golden_set,
        status=PublishJob.Status.DONE,
        version=run.golden_set.latest_version(),
        progress={"step": "writing pages", "number": 6, "steps": 6, "done": 6, "total": 6},
    )
    # An incident of the set, so that reading and changing one reaches a real row.
    alert = Alert.objects.create(
        golden_set=run.golden_set, version=run.golden_set.latest_version(), run=run, kind=Alert.Kind.SLICE_UNDER_FLOOR,
        metric="recall@10", slice="query:lang=de", value=0.5, reference=0.75, message="recall@10 in slice query:lang=de is 0.500",
    )  # fmt: skip
    incident = incident_alert_add(alert)
    loaded.config.update(
        parameters={
            "slug": SLUG,
            "run_id": run.id,
            "number": "1",
            "other": "1",
            "job_id": job.pk,
            "incident_id": incident.pk,
            **monitored,
        }
    )
    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_5xx_or_breaks_its_schema(case):
    case.call_and_validate(checks=CHECKS.get_all())
