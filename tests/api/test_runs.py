"""Runs and their scores through the API: upload, list, one run, evaluations."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Evaluation, Run
from tests.api import RUN, SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"


@pytest.fixture
def writer(token, golden_set, version):
    return client_for(token("write", golden_set))


@pytest.fixture
def reader(token, golden_set, version):
    return client_for(token("read", golden_set))


def upload(client, text: str | bytes, name: str = "run.txt", **fields):
    content = text.encode() if isinstance(text, str) else text
    data = {"file": SimpleUploadedFile(name, content), "system": "dense", "stage": "reranked", **fields}
    return client.post(BASE + "runs/", data, format="multipart")


def test_a_run_is_uploaded_stored_and_scored_against_the_latest_version(writer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(writer, RUN, name="dense.run")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["system"], body["stage"], body["source_name"]) == ("dense reranked", "dense", "reranked", "dense.run")
    assert (body["query_count"], body["entry_count"], body["uploaded_by"]) == (3, 5, "manager")
    assert response["Location"] == BASE + f"runs/{body['id']}/"
    evaluation = Evaluation.objects.get(run_id=body["id"])
    assert (evaluation.status, evaluation.version.number) == (Evaluation.Status.DONE, 1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("q1 Q0 d1 1 3.0\n", "run.txt:1: expected 6 columns"),
        ("q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 x s\n", "run.txt:2: score 'x' is not a finite number"),
        ("q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 1e999 s\n", "run.txt:2: score '1e999' is not a finite number"),
        ("q1 Q0 d1 1 3.0 s\nq9 Q0 d1 1 3.0 s\n", "run.txt:2: query id 'q9' is not in the golden set"),
    ],
)
def test_a_bad_line_is_refused_with_its_line_number_in_the_error_shape(writer, text, problem):
    error = assert_error(upload(writer, text), 422, "invalid")
    assert error["problems"][0].startswith(problem) and error["field"] == "file"
    assert not Run.objects.filter(system="dense").exists()


def test_a_file_that_is_not_utf8_is_refused_naming_the_line(writer):
    error = assert_error(upload(writer, b"q1 Q0 d1 1 3.0 s\n" + b"q1 Q0 \xff 2 1.0 s\n"), 422, "invalid")
    assert error["problems"] == ["run.txt:2: bytes that are not UTF-8 (invalid start byte)"]


def test_missing_fields_and_an_unknown_stage_are_named(writer):
    error = assert_error(writer.post(BASE + "runs/", {"system": "x", "stage": "final"}, format="multipart"), 400, "invalid")
    assert {p.split(":")[0] for p in error["problems"]} == {"file", "stage"}
    assert error["field"] in ("file", "stage")


def test_a_second_run_with_the_same_name_is_refused(writer, uploaded_run):
    error = assert_error(upload(writer, RUN, system="bm25", stage="first_stage"), 409, "conflict")
    assert error["field"] == "name" and "already has a run named 'bm25 first_stage'" in error["message"]


def test_a_json_body_is_refused_as_an_unsupported_media_type(writer):
    assert_error(writer.post(BASE + "runs/", {"system": "x"}, format="json"), 415, "unsupported_media_type")


def test_runs_are_listed_newest_first_and_filtered_by_system_and_stage(reader, writer, uploaded_run):
    upload(writer, RUN)
    assert [r["name"] for r in reader.get(BASE + "runs/").json()["results"]] == ["dense reranked", "bm25 first_stage"]
    assert [r["name"] for r in reader.get(BASE + "runs/", {"system": "bm25"}).json()["results"]] == ["bm25 first_stage"]
    assert [r["name"] for r in reader.get(BASE + "runs/", {"stage": "reranked"}).json()["results"]] == ["dense reranked"]
    assert_error(reader.get(BASE + "runs/", {"stage": "final"}), 400, "invalid")


def test_one_run_and_a_run_of_another_set_which_is_404(reader, uploaded_run, other_set):
    assert reader.get(BASE + f"runs/{uploaded_run.id}/").json()["entry_count"] == 5
    from evaluation.services import run_import

    elsewhere = run_import(golden_set=other_set, lines=RUN.splitlines(True), source_name="r", system="s", stage="other")
    assert_error(reader.get(BASE + f"runs/{elsewhere.id}/"), 404, "not_found")
    assert_error(reader.get(BASE + "runs/99999999999999999999999/"), 404, "not_found")


def test_a_runs_evaluations_hold_overall_and_slice_scores_and_completeness(reader, run, version):
    body = reader.get(BASE + f"runs/{run.id}/evaluations/").json()
    assert body["count"] == 1
    evaluation = body["results"][0]
    assert (evaluation["version"], evaluation["content_hash"], evaluation["status"]) == (1, version.content_hash, "done")
    assert evaluation["run"] == {
        "id": run.id,
        "name": "bm25 first_stage",
        "system": "bm25",
        "stage": "first_stage",
        "archived": False,
        "partial": False,
    }
    # q1: d1 relevant at rank 1, CR93E-3103#37 relevant and missed; q/2:ü: d3 at rank 1, d:ü/4 missed; q3 has none.
    assert evaluation["scores"]["recall@10"] == 0.5
    assert (evaluation["queries_averaged"], evaluation["no_relevant_count"]) == (2, 1)
    assert list(evaluation["scores"]) == evaluation["metrics"]
    slices = {s["slice"]: s for s in evaluation["slices"]}
    assert slices["query:lang=de"]["scores"]["recall@10"] == 0.5 and slices["query:lang=de"]["queries_averaged"] == 1
    assert slices["page:kind=faq"]["scores"]["recall@10"] == 0.0
    # Judged@2: both of q1's top 2 are labelled, one of q/2:ü's (d5 is labelled for q3 only).
    overall = evaluation["completeness"][0]
    assert overall["slice"] == "" and overall["judged_at_k_final"] == 0.75
    assert evaluation["judged_floor"] == 0.9 and evaluation["unreliable"] is True


def test_evaluations_filter_by_version(reader, run):
    assert reader.get(BASE + f"runs/{run.id}/evaluations/", {"version": 1}).json()["count"] == 1
    assert reader.get(BASE + f"runs/{run.id}/evaluations/", {"version": 2}).json()["count"] == 0
    assert_error(reader.get(BASE + f"runs/{run.id}/evaluations/", {"version": "1.5"}), 400, "invalid")
    # A name may be a tag (goldenset.tags): an unknown one is not found, and named.
    assert "'one'" in assert_error(reader.get(BASE + f"runs/{run.id}/evaluations/", {"version": "one"}), 404, "not_found")["message"]


def test_every_runs_evaluation_on_a_version_defaults_to_the_latest(reader, run):
    body = reader.get(BASE + "evaluations/").json()
    assert [(e["run"]["name"], e["version"]) for e in body["results"]] == [("bm25 first_stage", 1)]
    assert reader.get(BASE + "evaluations/", {"version": 1, "system": "other"}).json()["count"] == 0
    assert_error(reader.get(BASE + "evaluations/", {"version": 5}), 404, "not_found")


def test_a_set_without_versions_has_no_evaluations(token, golden_set):
    assert client_for(token("read", golden_set)).get(BASE + "evaluations/").json()["count"] == 0


def test_a_page_of_evaluations_costs_a_few_queries_however_many_runs(reader, writer, run, version, django_assert_max_num_queries):
    from evaluation.services import evaluation_compute

    for number in range(3):
        response = upload(writer, RUN, name=f"run{number}.txt", system=f"sys{number}")
        evaluation_compute(run=Run.objects.get(pk=response.json()["id"]), version=version)
    with django_assert_max_num_queries(12):
        assert reader.get(BASE + "evaluations/").json()["count"] == 4
