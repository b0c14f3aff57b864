"""The run upload API takes every run form (found from the content or named by `format`) and
the judgments API every qrels form the export writes, over a real server with a real token."""

import gzip
import json

import pytest
import requests

from evaluation.models import Run
from goldenset.models import Judgment
from tests.api import RUN, SLUG

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(live_server, token, golden_set, version):
    def call(method: str, path: str, scope: str = "write", **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {token(scope, golden_set)}", **kwargs.pop("headers", {})}
        return requests.request(method, f"{live_server.url}/api/v1/golden-sets/{SLUG}/{path}", headers=headers, timeout=30, **kwargs)

    return call


def jsonl(text: str) -> bytes:
    records = [dict(zip(("query_id", "_", "doc_id", "_r", "score"), line.split())) for line in text.splitlines()]
    return "".join(
        json.dumps({"query_id": r["query_id"], "doc_id": r["doc_id"], "score": float(r["score"])}) + "\n" for r in records
    ).encode()


def test_a_gzipped_jsonl_run_is_uploaded_as_its_trec_original(api):
    data = gzip.compress(jsonl(RUN))
    response = api("POST", "runs/", data={"system": "rag", "stage": "reranked"}, files={"file": ("run.jsonl.gz", data)})
    assert response.status_code == 201, response.text
    assert (response.json()["query_count"], response.json()["entry_count"]) == (3, 5)
    named = api("POST", "runs/", data={"system": "rag2", "stage": "reranked", "format": "jsonl"}, files={"file": ("run.bin", data)})
    assert named.status_code == 201, named.text


def test_a_malformed_json_run_is_refused_naming_its_key_path_and_a_read_token_may_not_upload(api):
    bad = json.dumps({"q1": {"d1": 1.0, "d2": "high"}}).encode()
    response = api("POST", "runs/", data={"system": "bad", "stage": "other"}, files={"file": ("run.json", bad)})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "file" and error["problems"] == ['run.json: ["q1"]["d2"]: score \'high\' is not a finite number']
    response = api("POST", "runs/", scope="read", data={"system": "ro", "stage": "other"}, files={"file": ("r.jsonl", jsonl(RUN))})
    assert response.status_code == 403
    unknown = api("POST", "runs/", data={"system": "x", "stage": "other", "format": "xml"}, files={"file": ("r", RUN.encode())})
    assert unknown.status_code == 400
    assert not Run.objects.filter(system__in=("bad", "ro", "x")).exists()


def test_the_judgments_api_takes_the_json_export_form(api):
    body = json.dumps({"q1": {"d5": 3}, "q3": {"d1": 1}})
    response = api("POST", "judgments/?format=json", data=body.encode(), headers={"Content-Type": "text/plain"})
    assert response.status_code == 201, response.text
    assert response.json()["judgments_created"] == 2
    bad = api("POST", "judgments/?format=json", data=b'{"q1": {"d5": "x"}}', headers={"Content-Type": "text/plain"})
    assert bad.status_code == 422 and bad.json()["error"]["problems"] == ['qrels: ["q1"]["d5"]: grade \'x\' is not an integer']
    assert Judgment.objects.filter(page__doc_id="d5", query__query_id="q1", grade=3).count() == 1


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("trec", "q1 0 d5 3\nq3 0 d1 1\n"),
        ("beir", "query-id\tcorpus-id\tscore\nq1\td5\t3\nq3\td1\t1\n"),
        ("csv", "query_id,doc_id,relevance\nq1,d5,3\nq3,d1,1\n"),
    ],
)
def test_the_judgments_api_takes_every_text_export_form_named_by_format(api, fmt, body):
    """?format= is the qrels form here, not a DRF renderer (which answered 404 for trec, beir, csv)."""
    response = api("POST", f"judgments/?format={fmt}", data=body.encode(), headers={"Content-Type": "text/plain"})
    assert response.status_code == 201, response.text
    assert response.json()["judgments_created"] == 2
    assert api("TRACE", f"judgments/?format={fmt}").status_code == 405
