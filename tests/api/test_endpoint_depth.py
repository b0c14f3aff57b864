"""An endpoint asked once at a depth through the API: a manager's write token starts it
(202; the job runs in process here, against a real engine server), readers follow it to its
run; a bad field is named, a busy endpoint is 409, and read tokens, adjudicators and other
sets are refused."""

import pytest

from answers.models import EndpointDepthRun
from monitoring.endpoints.services import endpoint_add
from tests.api import SLUG, assert_error, client_for
from tests.monitoring.endpoints import engines as engine_server

pytestmark = pytest.mark.django_db(transaction=True)


def url(suffix: str = "", slug: str = SLUG) -> str:
    return f"/api/v1/golden-sets/{slug}/depth-asks/{suffix}"


@pytest.fixture
def engines():
    server = engine_server.start()
    try:
        yield server
    finally:
        engine_server.stop(server)


@pytest.fixture
def endpoint(golden_set, version, engines):
    return endpoint_add(
        golden_set=golden_set, name="prod-rerank", system="prod", stage="reranked", preset="goldset", url=engines.base + "/goldset"
    )


def test_a_manager_asks_at_a_depth_and_readers_follow_it_to_its_run(endpoint, engines, token, golden_set):
    made = client_for(token("write", golden_set)).post(url(), {"endpoint": "prod-rerank", "depth": 7}, format="json")
    assert made.status_code == 202, made.content
    job = client_for(token("read", golden_set)).get(url(f"{made.json()['id']}/")).json()
    assert job["status"] == "done" and job["depth"] == 7 and job["run"].startswith("prod-rerank depth 7 ")
    assert job["queries_done"] == job["queries_total"] > 0 and {r["body"]["k"] for r in engines.seen} == {7}


def test_bad_fields_busy_endpoints_and_other_tokens_are_refused(endpoint, token, golden_set, other_set, adjudicator):
    writer = client_for(token("write", golden_set))
    error = assert_error(writer.post(url(), {"endpoint": "nope", "depth": 0}, format="json"), 422)
    assert any(p.startswith("endpoint:") for p in error["problems"]) and any(p.startswith("depth:") for p in error["problems"])
    assert_error(writer.post(url(), {"endpoint": "prod-rerank"}, format="json"), 400)
    assert_error(client_for(token("read", golden_set)).post(url(), {"endpoint": "prod-rerank", "depth": 5}, format="json"), 403)
    assert_error(client_for(token("write", owner=adjudicator)).post(url(), {"endpoint": "prod-rerank", "depth": 5}, format="json"), 403)
    assert not EndpointDepthRun.objects.exists()
    busy = EndpointDepthRun.objects.create(golden_set=golden_set, endpoint=endpoint, version=golden_set.latest_version(), depth=5)
    assert_error(writer.post(url(), {"endpoint": "prod-rerank", "depth": 6}, format="json"), 409)
    assert client_for(token("read", golden_set)).get(url(f"{busy.pk}/")).json()["status"] == "queued"
    assert_error(client_for(token("read", other_set)).get(url(f"{busy.pk}/", slug=other_set.slug)), 404)
    assert_error(client_for().get(url(f"{busy.pk}/")), 401)
