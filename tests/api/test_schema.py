"""The OpenAPI schema and the Swagger UI, served without network access."""

import re

import pytest
import yaml
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db

OPERATIONS = {
    ("get", "/api/v1/golden-sets/"),
    ("get", "/api/v1/golden-sets/{slug}/"),
    ("get", "/api/v1/golden-sets/{slug}/versions/"),
    ("post", "/api/v1/golden-sets/{slug}/versions/"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/qrels"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/queries"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/answers"),
    ("get", "/api/v1/golden-sets/{slug}/queries/{query_id}/answer"),
    ("put", "/api/v1/golden-sets/{slug}/queries/{query_id}/answer"),
    ("delete", "/api/v1/golden-sets/{slug}/queries/{query_id}/answer"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/model-fills/"),
    ("post", "/api/v1/golden-sets/{slug}/versions/{number}/model-fills/"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/model-fills/{fill_id}/qrels"),
    ("get", "/api/v1/golden-sets/{slug}/versions/{number}/diff/{other}"),
    ("get", "/api/v1/golden-sets/{slug}/publish-jobs/{job_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/runs/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/"),
    ("get", "/api/v1/golden-sets/{slug}/runs/{run_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/run-uploads/{job_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/runs/{run_id}/evaluations/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/{run_id}/comparisons/"),
    ("get", "/api/v1/golden-sets/{slug}/audit/"),
    ("get", "/api/v1/organisations/{org_slug}/audit/"),
    ("get", "/api/v1/golden-sets/{slug}/tags/"),
    ("get", "/api/v1/golden-sets/{slug}/tags/{name}/"),
    ("put", "/api/v1/golden-sets/{slug}/tags/{name}/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/{run_id}/archive/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/{run_id}/unarchive/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/{run_id}/mark-complete/"),
    ("post", "/api/v1/golden-sets/{slug}/runs/{run_id}/mark-partial/"),
    ("get", "/api/v1/golden-sets/{slug}/evaluations/"),
    ("post", "/api/v1/golden-sets/{slug}/judgments/"),
    ("get", "/api/v1/golden-sets/{slug}/chunkings/"),
    ("post", "/api/v1/golden-sets/{slug}/chunkings/"),
    ("get", "/api/v1/golden-sets/{slug}/chunkings/{name}/chunks/"),
    ("get", "/api/v1/golden-sets/{slug}/document/"),
    ("get", "/api/v1/golden-sets/{slug}/series/"),
    ("get", "/api/v1/golden-sets/{slug}/series/{series}/nights/"),
    ("get", "/api/v1/golden-sets/{slug}/endpoints/"),
    ("get", "/api/v1/golden-sets/{slug}/endpoints/{endpoint}/"),
    ("get", "/api/v1/golden-sets/{slug}/endpoints/{endpoint}/probes/"),
    ("get", "/api/v1/golden-sets/{slug}/endpoints/{endpoint}/index-probes/"),
    ("post", "/api/v1/golden-sets/{slug}/endpoints/{endpoint}/runs/"),
    ("get", "/api/v1/golden-sets/{slug}/endpoints/{endpoint}/runs/{night_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/monitoring/"),
    ("get", "/api/v1/golden-sets/{slug}/incidents/"),
    ("get", "/api/v1/golden-sets/{slug}/incidents/{incident_id}/"),
    ("patch", "/api/v1/golden-sets/{slug}/incidents/{incident_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/model-labels/calibration/"),
    ("post", "/api/v1/golden-sets/{slug}/depth-asks/"),
    ("get", "/api/v1/golden-sets/{slug}/depth-asks/{job_id}/"),
    ("get", "/api/v1/golden-sets/{slug}/oracle-experiments/"),
    ("post", "/api/v1/golden-sets/{slug}/oracle-experiments/"),
    ("get", "/api/v1/golden-sets/{slug}/oracle-experiments/{experiment_id}/"),
    ("post", "/api/v1/golden-sets/{slug}/oracle-experiments/{experiment_id}/continue/"),
    ("get", "/api/v1/golden-sets/{slug}/oracle-experiments/{experiment_id}/answers/"),
}


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def test_the_schema_is_openapi_3_with_every_operation_and_nothing_else(schema):
    assert schema["openapi"].startswith("3.")
    found = {(method, path) for path, operations in schema["paths"].items() for method in operations if method != "parameters"}
    assert found == OPERATIONS


def test_every_operation_documents_the_error_shape_and_the_bearer_token(schema):
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "an API token, gs_..., made by a manager",
    }
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "401", "403", "404"):
                content = operation["responses"][status]["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/Error"}, (method, path, status)
            assert {"bearerAuth": []} in operation["security"], (method, path)


def test_the_qrels_are_declared_in_every_media_type_they_stream_in(schema):
    responses = schema["paths"]["/api/v1/golden-sets/{slug}/versions/{number}/qrels"]["get"]["responses"]
    assert set(responses["200"]["content"]) == {"text/plain", "application/json", "text/tab-separated-values", "text/csv"}
    assert {"302", "304"} <= set(responses)


def test_the_schema_also_answers_as_json(client):
    assert client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["info"]["title"] == "Goldset API"


def test_swagger_ui_is_served_from_our_own_static_files(client):
    page = client.get("/api/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    # Swagger UI's start-up script comes from the docs view itself (no inline script: CSP).
    start_up = [source for source in sources if source.startswith("/api/docs/?")]
    assert len(start_up) == 1 and "<script>" not in page
    static = [source for source in sources if source not in start_up]
    assert static and all(source.startswith("/static/drf_spectacular_sidecar/") for source in static), sources
    assert not re.findall(r"https?://", page + client.get(start_up[0].replace("&amp;", "&")).content.decode()), (
        "the docs page must not reach for the network"
    )
    for source in static:
        assert finders.find(source.removeprefix("/static/")), source
