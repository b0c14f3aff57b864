"""Hardening #31 item 10: deeply nested JSON and a lone surrogate in JSON ids answered 500 on
upload (nothing was stored). Each is now a 4xx naming the file, the key path or the id."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Run
from goldenset.models import Judgment
from tests.api import SLUG, client_for
from tests.api.conftest import golden_set, manager, token, version  # noqa: F401

pytestmark = pytest.mark.django_db

NESTED = "[" * 100_000 + "]" * 100_000
RUNS = {
    "a lone surrogate in a ranx JSON run's query id": ('{"q1\\ud800": {"d1": 1.0}}', "query id 'q1\\ud800' contains a lone surrogate"),
    "a ranx JSON run nested past the stack": ('{"q1": ' + NESTED + "}", "not JSON (maximum recursion depth exceeded"),
    "a JSONL run line nested past the stack": ('{"query_id": "q1", "doc_id": ' + NESTED + ', "score": 1}\n', "not JSON"),
    "a lone surrogate in a JSONL run's query id": (
        '{"query_id": "q1\\ud800", "doc_id": "d1", "score": 1}\n',
        "r.json:1: not a JSON object",
    ),
}
QRELS = {
    "a lone surrogate in a JSON qrels query id": ('{"q1\\ud800": {"d1": 1}}', "query id 'q1\\ud800' contains a lone surrogate (U+D800)"),
    "JSON qrels nested past the stack": ('{"q1": ' + NESTED + "}", "qrels: not JSON (maximum recursion depth exceeded"),
}


@pytest.mark.parametrize("case", sorted(RUNS))
def test_a_hostile_json_run_is_refused_naming_the_spot(case, token, golden_set, version):  # noqa: F811
    body, named = RUNS[case]
    client = client_for(token("write", golden_set))
    response = client.post(
        f"/api/v1/golden-sets/{SLUG}/runs/",
        {
            "system": "hostile",
            "stage": "other",
            "file": SimpleUploadedFile("r.json", body.encode("utf-8", "surrogatepass")),
        },
    )
    assert response.status_code == 422, response.content[:300]
    assert named in " ".join(response.json()["error"]["problems"])
    assert not Run.objects.filter(system="hostile").exists()


@pytest.mark.parametrize("case", sorted(QRELS))
def test_hostile_json_qrels_are_refused_naming_the_spot(case, token, golden_set, version):  # noqa: F811
    body, named = QRELS[case]
    before = Judgment.objects.count()
    response = client_for(token("write", golden_set)).post(
        f"/api/v1/golden-sets/{SLUG}/judgments/?format=json",
        body.encode("utf-8", "surrogatepass"),
        content_type="text/plain",
    )
    assert response.status_code == 422, response.content[:300]
    assert named in " ".join(response.json()["error"]["problems"])
    assert Judgment.objects.count() == before
