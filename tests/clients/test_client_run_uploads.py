"""GoldsetClient.upload_run against a live server whose inline limit every upload is over: the
API answers 202 with the upload job, which the client follows until a worker stored the run;
it returns the run as a 201 would have, and raises a refusal as the request would have. And
a run of a chunking named in the upload."""

import pytest

from evaluation.models import Run, RunUploadJob
from evaluation.run_uploads import run_upload_job_run
from evaluation.tasks import run_upload_job_task
from goldset_client import GoldsetAPIError
from tests.api import RUN, SLUG
from tests.support.chunks import chunking


@pytest.fixture
def spool(settings, tmp_path):
    settings.RUN_INLINE_UPLOAD_MB = 0
    settings.RUN_UPLOAD_SPOOL = str(tmp_path / "spool")
    return tmp_path / "spool"


def test_a_spooled_upload_returns_the_run_as_an_inline_one_does(client, spool):
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage", filename="big.run")
    stored = Run.objects.get()
    assert (run["id"], run["name"], run["source_name"], run["entry_count"]) == (stored.id, "bm25 first_stage", "big.run", 5)
    assert run == client.run(SLUG, stored.id) and RunUploadJob.objects.get().run == stored
    assert list(spool.iterdir()) == []


def test_the_client_polls_the_job_until_a_worker_has_stored_the_run(client, spool, monkeypatch):
    monkeypatch.setattr(run_upload_job_task, "delay", lambda job_id: None)  # no worker takes it yet
    pauses = []

    def a_worker_reads_it_on_the_second_pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            run_upload_job_run(RunUploadJob.objects.get().pk)

    run = client.upload_run(
        SLUG, RUN.encode(), system="bm25", stage="first_stage", poll_first=1.0, sleep=a_worker_reads_it_on_the_second_pause
    )
    assert pauses == [1.0, 1.5] and run["id"] == Run.objects.get().id


def test_a_refused_spooled_upload_raises_what_the_request_would_have(client, spool):
    with pytest.raises(GoldsetAPIError) as raised:
        client.upload_run(SLUG, b"q1 Q0 d1 1 high sys\n", system="bm25", stage="first_stage", filename="bad.run")
    error = raised.value
    assert (error.status, error.code, error.field) == (422, "invalid", "file")
    assert error.problems == ["bad.run:1: score 'high' is not a finite number"] and "nothing was stored" in error.message
    assert not Run.objects.exists()


def test_a_run_of_a_chunking_names_it(client, golden_set):
    chunking(golden_set, "passages", {"d1#0": ("d1", 0, 5), "d1#1": ("d1", 5, 10)})
    run = client.upload_run(
        SLUG, b"q1 Q0 d1#1 1 2.0 sys\nq1 Q0 d1#0 2 1.0 sys\n", system="chunks", stage="first_stage", chunking="passages"
    )
    assert run["chunking"] == "passages" and Run.objects.get().chunking.name == "passages"
