"""Run uploads over RUN_INLINE_UPLOAD_MB read off the request path (hardening #31 item 6): the
page spools the file, records a RunUploadJob and goes to its page, which polls until a worker
has stored the run (or refused it, naming every line); the spooled file is deleted when the
job ends, whatever the outcome. And the upload form naming the run's chunking (issue 25 item 3)."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from evaluation import run_uploads
from evaluation.models import Run, RunUploadJob
from evaluation.run_uploads import GIVE_UP_AFTER, run_upload_job_run, run_upload_jobs_sweep
from evaluation.tasks import run_upload_job_task
from goldenset.models import Membership
from goldenset.services import membership_grant
from tests.support import factories
from tests.support.chunks import chunking

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny", manager="owner")]

RUN = "q1 Q0 d1 1 3.0 sys\nq1 Q0 d2 2 2.0 sys\nq2 Q0 d3 1 5.0 sys\n"
# Chunks of the tiny set's pages ("text of d1" is 10 characters).
PASSAGES = {"d1#0": ("d1", 0, 5), "d1#1": ("d1", 5, 10), "d2#0": ("d2", 0, 10), "d3#0": ("d3", 0, 10)}
CHUNK_RUN = "q1 Q0 d1#1 1 3.0 sys\nq1 Q0 d2#0 2 2.0 sys\nq2 Q0 d3#0 1 5.0 sys\n"


@pytest.fixture
def spool(settings, tmp_path):
    """Every upload over 0 MB (all of them) goes to a job; the spool is this test's own folder."""
    settings.RUN_INLINE_UPLOAD_MB = 0
    settings.RUN_UPLOAD_SPOOL = str(tmp_path / "spool")
    return tmp_path / "spool"


def spooled(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def post(client, golden_set, text: str = RUN, filename: str = "run.txt", **fields):
    data = {"file": SimpleUploadedFile(filename, text.encode()), "system": "bm25", "stage": "first_stage", **fields}
    return client.post(reverse("runs", kwargs={"slug": golden_set.slug}), data)


def job_url(job: RunUploadJob, *, status: bool = False) -> str:
    return reverse("run_upload_status" if status else "run_upload", kwargs={"slug": job.golden_set.slug, "job_id": job.pk})


def test_a_large_upload_goes_to_a_job_whose_page_links_to_the_run_it_stored(
    client, golden_set, owner, spool, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, golden_set, filename="big.run")
    job = RunUploadJob.objects.get()
    assert response.status_code == 302 and response["Location"] == job_url(job)
    run = Run.objects.get()
    assert (job.status, job.run, job.source_name, job.created_by, job.size) == ("done", run, "big.run", owner, len(RUN))
    assert (run.entry_count, run.query_count, run.uploaded_by, run.source_name) == (3, 2, owner, "big.run")
    assert spooled(spool) == [] and job.spool_name == ""
    page = client.get(response["Location"]).content.decode()
    assert reverse("run", kwargs={"slug": golden_set.slug, "run_id": run.id}) in page and "hx-trigger" not in page


def test_a_refused_upload_fails_its_job_and_its_page_names_every_line(client, golden_set, owner, spool, django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, golden_set, text="q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 high s\nq9 Q0 d1 1 1.0 s\n")
    job = RunUploadJob.objects.get()
    assert (job.status, job.error_code, job.error_status, job.error_field) == ("failed", "invalid", 422, "file")
    assert job.problems[0] == "run.txt:2: score 'high' is not a finite number"
    assert job.problems[1].startswith("run.txt:3: query id 'q9' is not in the golden set") and len(job.problems) == 2
    assert "nothing was stored" in job.error and not Run.objects.exists()
    assert spooled(spool) == [] and job.spool_name == ""
    page = client.get(response["Location"]).content.decode()
    assert "run.txt:2: score &#x27;high&#x27; is not a finite number" in page and "run.txt:3: query id &#x27;q9&#x27;" in page


def test_a_name_taken_is_refused_before_the_file_is_spooled(client, golden_set, owner, spool):
    factories.run(golden_set, "taken", {"q1": ["d1"]})
    client.force_login(owner)
    response = post(client, golden_set, name="taken")
    assert response.status_code == 400 and "already has a run named &#x27;taken&#x27;" in response.content.decode()
    assert not RunUploadJob.objects.exists() and spooled(spool) == []


@pytest.mark.django_db(transaction=True)  # the worker thread reads the job on its own connection
def test_a_large_upload_returns_at_once_and_a_worker_reads_it_after(client, golden_set, owner, spool, background_tasks):
    """The request only spools the file and records the job; the in-process background thread
    (standing for a worker) is held before it takes the job (so holding no database lock)
    until the test has seen the page answer."""
    from goldset.celery import tasks_inline

    client.force_login(owner)
    response = post(client, golden_set, filename="big.run")
    assert response.status_code == 302
    job = RunUploadJob.objects.get()
    assert job.status == "queued" and not Run.objects.exists()  # answered before the parse
    waiting = client.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 1s"' in waiting and job_url(job, status=True) in waiting
    assert f'<a href="{job_url(job)}">big.run</a> (Queued' in client.get(reverse("runs", kwargs={"slug": golden_set.slug})).content.decode()
    assert background_tasks.arrived.wait(30)
    assert [name for name, _ in background_tasks.started] == [run_upload_job_task.name]  # held on the thread
    background_tasks.release()
    tasks_inline()  # the queued work finishes
    job.refresh_from_db()
    assert job.status == "done" and job.run.entry_count == 3
    fragment = client.get(job_url(job, status=True), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in fragment and reverse("run", kwargs={"slug": golden_set.slug, "run_id": job.run_id}) in fragment
    assert spooled(spool) == [] and job_url(job) not in client.get(reverse("runs", kwargs={"slug": golden_set.slug})).content.decode()


def test_a_run_of_a_chunking_is_uploaded_from_the_page_inline_and_through_a_job(
    client, golden_set, owner, settings, tmp_path, django_capture_on_commit_callbacks
):
    chunking(golden_set, "passages", PASSAGES)
    client.force_login(owner)
    form = client.get(reverse("runs", kwargs={"slug": golden_set.slug})).content.decode()
    assert '<option value="passages">passages</option>' in form
    response = post(client, golden_set, text=CHUNK_RUN, chunking="passages", name="inline")
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Run.objects.get(name="inline").chunking.name == "passages"
    response = post(client, golden_set, text=RUN, chunking="passages", name="doc ids")
    assert response.status_code == 400 and "id &#x27;d1&#x27; is not a chunk of chunking &#x27;passages&#x27;" in response.content.decode()
    settings.RUN_INLINE_UPLOAD_MB, settings.RUN_UPLOAD_SPOOL = 0, str(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, golden_set, text=CHUNK_RUN, chunking="passages", name="spooled")
    job = RunUploadJob.objects.get()
    assert (job.chunking, job.status, job.run.chunking.name) == ("passages", "done", "passages")


def test_a_corpus_without_chunkings_keeps_the_field_out_of_sight_and_refuses_a_name(client, golden_set, owner, spool):
    client.force_login(owner)
    form = client.get(reverse("runs", kwargs={"slug": golden_set.slug})).content.decode()
    assert '<input type="hidden" name="chunking"' in form and "Chunking:" not in form
    response = post(client, golden_set, chunking="passages")
    assert response.status_code == 400 and "unknown chunking &#x27;passages&#x27;: the corpus has documents" in response.content.decode()
    assert not Run.objects.exists() and not RunUploadJob.objects.exists() and spooled(spool) == []


def make_job(golden_set, owner, spool, **fields) -> RunUploadJob:
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "waiting.run").write_text(RUN)
    values = {"source_name": "big.run", "system": "bm25", "stage": "first_stage", "size": len(RUN), "spool_name": "waiting.run"}
    return RunUploadJob.objects.create(golden_set=golden_set, created_by=owner, **{**values, **fields})


def test_the_job_page_is_read_by_those_who_read_runs_and_no_one_else(client, golden_set, owner, teammate, stranger, make_user, spool):
    job = make_job(golden_set, owner, spool)
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    adjudicator = make_user("adjudicator")
    membership_grant(user=adjudicator, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    staff = make_user("staff", is_staff=True)
    for url in (job_url(job), job_url(job, status=True)):
        client.logout()
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
        client.force_login(stranger)
        assert client.get(url).status_code == 404
        client.force_login(teammate)
        assert client.get(url).status_code == 404  # annotators judge blind: no system names
        for reader in (adjudicator, owner, staff):
            client.force_login(reader)
            assert "Waiting for a worker" in client.get(url).content.decode()
    elsewhere = factories.golden_set("elsewhere", manager=owner)
    theirs = RunUploadJob.objects.create(golden_set=elsewhere, source_name="x", system="x", stage="other", size=1)
    assert client.get(reverse("run_upload", kwargs={"slug": golden_set.slug, "job_id": theirs.pk})).status_code == 404


def test_a_database_gone_for_a_moment_hands_the_job_back_with_its_file(golden_set, owner, spool, monkeypatch):
    job = make_job(golden_set, owner, spool)

    def gone(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(run_uploads, "run_import", gone)
    with pytest.raises(OperationalError):
        run_upload_job_run(job.pk)
    job.refresh_from_db()
    assert (job.status, job.spool_name, spooled(spool)) == ("queued", "waiting.run", ["waiting.run"])
    monkeypatch.undo()
    assert run_upload_job_run(job.pk).status == "done"
    assert spooled(spool) == []


def test_a_spool_the_worker_does_not_share_fails_the_job_saying_so(golden_set, owner, spool):
    job = make_job(golden_set, owner, spool)
    (spool / "waiting.run").unlink()
    with pytest.raises(FileNotFoundError):
        run_upload_job_run(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "web and workers must share RUN_UPLOAD_SPOOL" in job.error and job.spool_name == ""


def test_the_sweeper_sends_a_lost_job_again_and_deletes_the_file_of_one_it_fails(golden_set, owner, spool):
    lost = make_job(golden_set, owner, spool)
    (spool / "stuck.run").write_text(RUN)
    stuck = RunUploadJob.objects.create(
        golden_set=golden_set,
        source_name="stuck.run",
        system="dense",
        stage="other",
        size=len(RUN),
        spool_name="stuck.run",
        status="running",
        started_at=timezone.now() - GIVE_UP_AFTER - timedelta(minutes=1),
    )
    assert run_upload_jobs_sweep(job_task=run_upload_job_task) == (1, 1)
    lost.refresh_from_db()
    stuck.refresh_from_db()
    assert lost.status == "done" and lost.run.system == "bm25"
    assert stuck.status == "failed" and "no run was stored" in stuck.error and stuck.spool_name == ""
    assert spooled(spool) == []
