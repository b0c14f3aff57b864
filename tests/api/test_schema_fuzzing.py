"""schemathesis against /api/schema/: no 5xx and no response that breaks the schema.

Every operation of the schema is fuzzed through the WSGI application (no server), with
positive and negative examples (wrong types, huge numbers, NUL bytes, unknown query
parameters), authenticated by a write token on a small golden set with a published
version and a scored run. The slug and run id are pinned to that set's, so that requests
reach the real data and not only the 404 of an unknown slug, run or version (the
permission and version tests cover those).

Bounded in time: a few examples per operation, derandomized, so the run is the same each
time. Nothing is excluded.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from goldset.wsgi import application
from tests.api import SLUG

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
def api_schema(wsgi_application, run, token):
    loaded = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_application)
    loaded.config.generation.update(max_examples=EXAMPLES_PER_OPERATION, deterministic=True)
    loaded.config.update(
        headers={"Authorization": f"Bearer {token('write')}"},
        parameters={"slug": SLUG, "run_id": run.id, "number": "1", "other": "1"},
    )
    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_5xx_or_breaks_its_schema(case):
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance])
