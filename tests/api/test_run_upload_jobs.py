"""Run uploads through the API: over RUN_INLINE_UPLOAD_MB, 202 with the upload job (Location:
its resource), which a worker reads; the job resource says its status, the run once done
and the refusal once failed, as the request would have answered it. And the upload naming
the run's chunking, which the run's output says."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Run, RunUploadJob
from tests.api import RUN, SLUG, assert_error, client_for
from tests.support.chunks import chunking

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"
PASSAGES = {"d1#0": ("d1", 0, 5), "d1#1": ("d1", 5, 10), "d2#0": ("d2", 0, 10), "d3#0": ("d3", 0, 10)}
CHUNK_RUN = "q1 Q0 d1#1 1 3.0 sys\nq1 Q0 d2#0 2 2.0 sys\nq/2:ü Q0 d3#0 1 5.0 sys\n"


@pytest.fixture
def writer(token, golden_set, version):
    return client_for(token("write", golden_set))


@pytest.fixture
def spool(settings, tmp_path):
    settings.RUN_INLINE_UPLOAD_MB = 0  # every upload goes to a job
    settings.RUN_UPLOAD_SPOOL = str(tmp_path)
    return tmp_path


def upload(client, text: str, name: str = "run.txt", **fields):
    data = {"file": SimpleUploadedFile(name, text.encode()), "system": "dense", "stage": "reranked", **fields}
    return client.post(BASE + "runs/", data, format="multipart")


def test_a_large_upload_is_answered_202_with_the_job_whose_resource_gives_the_run(writer, spool, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(writer, RUN, name="big.run")
    assert response.status_code == 202, response.content
    job = response.json()
    assert response["Location"] == job["url"] == BASE + f"run-uploads/{job['id']}/"
    assert (job["status"], job["source_name"], job["size"], job["run"], job["chunking"]) == (
        "queued",
        "big.run",
        len(RUN.encode()),
        None,
        None,
    )
    done = writer.get(job["url"]).json()
    run = Run.objects.get()
    assert (done["status"], done["error"], done["error_code"], done["problems"]) == ("done", "", None, [])
    assert done["run"] == writer.get(BASE + f"runs/{run.id}/").json()  # the run as a 201 would have answered it
    assert (done["run"]["entry_count"], done["run"]["uploaded_by"], done["run"]["chunking"]) == (5, "manager", None)
    assert list(spool.iterdir()) == []


def test_a_refused_large_upload_fails_its_job_with_the_answer_the_request_would_have_given(
    writer, spool, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = upload(writer, "q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 x s\n").json()
    failed = writer.get(job["url"]).json()
    assert (failed["status"], failed["error_code"], failed["error_status"], failed["field"]) == ("failed", "invalid", 422, "file")
    assert failed["problems"] == ["run.txt:2: score 'x' is not a finite number"] and "nothing was stored" in failed["error"]
    assert failed["run"] is None and not Run.objects.exists() and list(spool.iterdir()) == []


def test_what_needs_no_reading_is_refused_at_once_and_no_job_is_made(writer, uploaded_run, spool):
    error = assert_error(upload(writer, RUN, system="bm25", stage="first_stage"), 409, "conflict")
    assert error["field"] == "name"
    error = assert_error(upload(writer, RUN, chunking="nope"), 422, "invalid")
    assert error["field"] == "chunking" and error["message"] == "unknown chunking 'nope': the corpus has documents"
    assert not RunUploadJob.objects.exists() and list(spool.iterdir()) == []


def test_a_run_of_a_chunking_is_uploaded_and_says_its_chunking_inline_and_through_a_job(
    writer, golden_set, settings, tmp_path, django_capture_on_commit_callbacks
):
    chunking(golden_set, "passages", PASSAGES)
    response = upload(writer, CHUNK_RUN, chunking="passages", name="chunks.run")
    assert response.status_code == 201, response.content
    assert response.json()["chunking"] == "passages" and Run.objects.get().chunking.name == "passages"
    assert [run["chunking"] for run in writer.get(BASE + "runs/").json()["results"]] == ["passages"]
    error = assert_error(upload(writer, RUN, chunking="passages", system="docs"), 422, "invalid")
    assert error["field"] == "file" and error["problems"][0] == "run.txt:1: id 'd1' is not a chunk of chunking 'passages'"
    error = assert_error(upload(writer, CHUNK_RUN, chunking="sentences", system="other"), 422, "invalid")
    assert error["message"] == "unknown chunking 'sentences': the corpus has documents, passages"
    settings.RUN_INLINE_UPLOAD_MB, settings.RUN_UPLOAD_SPOOL = 0, str(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        job = upload(writer, CHUNK_RUN, chunking="passages", system="spooled").json()
    assert job["chunking"] == "passages"
    assert writer.get(job["url"]).json()["run"]["chunking"] == "passages"


def test_the_job_resource_answers_the_sets_readers_only(writer, token, golden_set, other_set, adjudicator, annotator, spool):
    job = upload(writer, RUN).json()  # its task waits for a commit that never comes: queued
    url = job["url"]
    assert client_for(token("read", golden_set)).get(url).json()["status"] == "queued"
    assert client_for(token("read", golden_set, owner=adjudicator)).get(url).status_code == 200
    assert_error(client_for(token("read", owner=annotator)).get(url), 404, "not_found")
    assert_error(client_for(token("read", other_set)).get(url), 404, "not_found")
    assert_error(client_for().get(url), 401)
    assert_error(client_for("gs_not-a-token").get(url), 401)
    error = assert_error(writer.get(BASE + f"run-uploads/{job['id'] + 1}/"), 404, "not_found")
    assert error["message"] == f"golden set {SLUG!r} has no run upload {job['id'] + 1}"
