"""Publishing as a background job (goldenset.publishing): what needs no label resolution is
refused at once; the job makes exactly the version a direct publish makes, reports its
steps, runs once, and leaves no version when it stops half way; two publishes at once make
one version; the sweeper; and one publish on a real Celery worker."""

import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import TestCase
from django.utils import timezone

from goldenset import version_rows
from goldenset.models import GoldenSet, Page, PublishJob, Query, Version, VersionLabel, VersionPage, VersionQuery
from goldenset.publishing import (
    GIVE_UP_AFTER,
    SEND_AGAIN_AFTER,
    publish_job_progress,
    publish_job_run,
    publish_jobs_sweep,
    version_publish_request,
)
from goldenset.selectors import version_check_intact, version_label_rows
from goldenset.services import PUBLISH_STEPS, judgment_record, query_retire, version_publish
from goldenset.tasks import publish_job_task
from lib.background_jobs import TRANSIENT
from lib.errors import ConflictError, GoldsetError
from lib.ids import natural_key
from tests.evaluation.test_worker import wait_until, workers  # noqa: F401  (workers: a fixture)
from tests.support import factories

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        "jobs",
        manager="owner",
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
        pages=factories.pages("d1", "d2", "d3", "d4", "d5", kind="doc"),
        queries=factories.queries("q1", "q2", "q3", lang="de"),
        qrels={("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1, ("q3", "d5"): 3},
    ),
]


def requested(golden_set, user=None, note="") -> PublishJob:
    """Ask for a publish in a transaction of its own and run what its commit sends (in-process here)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        job = version_publish_request(golden_set=golden_set, user=user, note=note, job_task=publish_job_task)
    job.refresh_from_db()
    return job


def snapshot(version: Version) -> dict:
    return {
        "hash": version.content_hash,
        "labels": list(version_label_rows(version)),
        "positions": list(VersionLabel.objects.filter(version=version).order_by("position").values_list("query_id", "page_id", "grade")),
        "queries": list(VersionQuery.objects.filter(version=version).order_by("query_id").values_list("query_id", "metadata")),
        "pages": list(
            VersionPage.objects.filter(version=version)
            .order_by("page_id")
            .values_list("page_id", "metadata", "published_at", "content_hash")
        ),
        "counts": (version.number, version.query_count, version.label_count, version.relevant_count, version.queries_without_relevant),
        "settings": (version.relevance_threshold, version.k_first, version.k_final, version.query_slice_fields, version.page_slice_fields),
    }


class RolledBack(Exception):
    pass


# --- the job's version is the direct publish's ---------------------------------------------


def test_the_jobs_version_equals_a_direct_publish_on_the_same_data_label_for_label_and_hash_for_hash(golden_set, owner):
    judgment_record(query=Query.objects.get(query_id="q2"), page=Page.objects.get(doc_id="d4"), grade=2, annotator=owner)
    direct = {}
    with pytest.raises(RolledBack), transaction.atomic():  # the direct publish, then undone
        direct = snapshot(version_publish(golden_set=golden_set, user=owner, note="direct"))
        raise RolledBack
    assert not Version.objects.exists()

    job = requested(golden_set, owner, "by the job")
    assert (job.status, job.error) == (PublishJob.Status.DONE, "")
    assert snapshot(job.version) == direct
    assert (job.version.note, job.version.author) == ("by the job", owner)


def test_a_done_job_records_its_last_step_and_when_it_ran(golden_set, owner):
    job = requested(golden_set, owner)
    assert job.progress == {"step": "writing pages", "number": 6, "steps": 6, "done": 4, "total": 4}
    assert job.enqueued_at and job.started_at and job.finished_at and job.created_by == owner


def test_a_running_job_reports_each_step_as_it_goes(golden_set, owner, monkeypatch):
    seen = []
    real_rows_insert, real_arrays_insert = version_rows.model_rows_insert, version_rows.model_arrays_insert

    def watching(model, fields, rows):
        rows = list(rows)  # the step's rows go by: its report is then complete
        seen.append((model._meta.db_table, publish_job_progress(PublishJob.objects.get())))
        return real_rows_insert(model, fields, rows)

    def watching_arrays(model, values, count):  # the labels, a block of version_rows.LABEL_BLOCK at a time
        seen.append((model._meta.db_table, publish_job_progress(PublishJob.objects.get())))
        return real_arrays_insert(model, values, count)

    monkeypatch.setattr(version_rows, "model_rows_insert", watching)
    monkeypatch.setattr(version_rows, "model_arrays_insert", watching_arrays)
    requested(golden_set, owner)
    # The label step counts blocks of version_rows.LABEL_BLOCK labels (here one, seen as it
    # is written: none done yet); the query and page steps count rows.
    assert [(table, progress["step"], progress["number"], progress["done"], progress["total"]) for table, progress in seen] == [
        (VersionLabel._meta.db_table, "writing labels", 4, 0, 1),
        (VersionQuery._meta.db_table, "writing queries", 5, 3, 3),
        (VersionPage._meta.db_table, "writing pages", 6, 4, 4),
    ]
    assert PUBLISH_STEPS[3:] == ("writing labels", "writing queries", "writing pages")


def test_labels_are_stored_in_the_natural_order_of_their_ids_and_give_the_versions_hash(owner):
    doc_ids = ["d10", "d9", "D1", "d1", "é2", "d01", "x#1/2", "10", "9"]
    query_ids = ["q10", "q2", "q1", "Q1", "ü", "q01"]
    qrels = {(q, d): (n + m) % 4 for n, q in enumerate(query_ids) for m, d in enumerate(doc_ids) if (n + m) % 3}
    golden_set = factories.golden_set(
        "order", manager=owner, pages=factories.pages(*doc_ids), queries=factories.queries(*query_ids), qrels=qrels
    )
    version = requested(golden_set, owner).version
    expected = sorted(((q, d, g) for (q, d), g in qrels.items()), key=lambda row: (natural_key(row[0]), natural_key(row[1])))
    assert list(version_label_rows(version)) == expected
    assert list(VersionLabel.objects.filter(version=version).order_by("position").values_list("position", flat=True)) == list(
        range(len(expected))
    )
    version_check_intact(version)  # the stored rows give the version's hash again


# --- refused at once -------------------------------------------------------------------------


def test_publishing_an_unchanged_set_is_refused_at_once_with_the_services_message_and_nothing_recorded(golden_set, owner):
    requested(golden_set, owner)
    with pytest.raises(ConflictError, match="^nothing changed since version 1 of 'jobs'; not published$"):
        version_publish_request(golden_set=golden_set, user=owner, note="again", job_task=publish_job_task)
    assert PublishJob.objects.count() == 1 and Version.objects.count() == 1


def test_a_version_published_directly_is_refused_again_at_once_too(golden_set):
    version_publish(golden_set=golden_set)
    with pytest.raises(ConflictError, match="nothing changed since version 1"):
        version_publish_request(golden_set=golden_set, user=None, note="", job_task=publish_job_task)
    assert not PublishJob.objects.exists()


def test_a_set_without_an_active_query_is_refused_at_once(golden_set):
    for query in Query.objects.all():
        query_retire(query=query)
    with pytest.raises(GoldsetError, match="has no queries to publish"):
        version_publish_request(golden_set=golden_set, user=None, note="", job_task=publish_job_task)
    assert not PublishJob.objects.exists()


def test_a_publish_under_way_refuses_the_next_at_once(golden_set, owner, monkeypatch):
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", lambda job_id: None)  # a worker that has not started
    first = requested(golden_set, owner)
    assert first.status == PublishJob.Status.QUEUED
    with pytest.raises(ConflictError, match=rf"a publish of 'jobs' is already under way \(job {first.pk}\)"):
        version_publish_request(golden_set=golden_set, user=owner, note="", job_task=publish_job_task)


@pytest.mark.parametrize("change", ["page slice value", "page content", "query slice value", "query retired", "setting", "new label"])
def test_any_change_the_hash_covers_lets_the_publish_through(golden_set, owner, change):
    requested(golden_set, owner)
    if change == "page slice value":
        Page.objects.filter(doc_id="d5").update(metadata={"kind": "faq"})
    elif change == "page content":
        Page.objects.filter(doc_id="d1").update(content_hash="0" * 64)
    elif change == "query slice value":
        Query.objects.filter(query_id="q3").update(metadata={"lang": "en"})
    elif change == "query retired":
        query_retire(query=Query.objects.get(query_id="q3"))
    elif change == "setting":
        GoldenSet.objects.filter(pk=golden_set.pk).update(relevance_threshold=2)
        golden_set.refresh_from_db()
    else:
        judgment_record(query=Query.objects.get(query_id="q3"), page=Page.objects.get(doc_id="d4"), grade=1, annotator=owner)
    job = requested(golden_set, owner)
    assert (job.status, job.version.number) == (PublishJob.Status.DONE, 2)


def test_a_judgment_that_changes_no_label_goes_to_the_job_which_refuses_with_the_same_message(golden_set, owner):
    requested(golden_set, owner)
    # A second import of the same grade: a new judgment, the same label.
    judgment_record(query=Query.objects.get(query_id="q1"), page=Page.objects.get(doc_id="d1"), grade=2, annotator=None, source="imported")
    job = requested(golden_set, owner)
    assert (job.status, job.error, job.version) == (
        PublishJob.Status.FAILED,
        "nothing changed since version 1 of 'jobs'; not published",
        None,
    )
    assert Version.objects.count() == 1


# --- sending, claiming, failing --------------------------------------------------------------


def test_a_job_is_sent_only_when_the_request_commits(golden_set, monkeypatch):
    sent = []
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", sent.append)
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        job = version_publish_request(golden_set=golden_set, user=None, note="", job_task=publish_job_task)
    assert sent == [] and len(callbacks) == 1
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert sent == [job.pk] and job.enqueued_at is not None and job.status == PublishJob.Status.QUEUED


def test_a_job_the_broker_refused_is_sent_by_the_next_sweep_not_ten_minutes_later(golden_set, monkeypatch):
    """Hardening #31 item 2: a publish confirmed while Redis was away ran 13 minutes after it
    came back, because enqueued_at was written before a send that failed."""
    from kombu.exceptions import OperationalError

    def refuse(job_id):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", refuse)
    with TestCase.captureOnCommitCallbacks(execute=True):
        job = version_publish_request(golden_set=golden_set, user=None, note="", job_task=publish_job_task)
    job.refresh_from_db()
    assert job.enqueued_at is None and job.status == PublishJob.Status.QUEUED
    assert publish_jobs_sweep(job_task=publish_job_task) == (0, 0)  # still away: nothing counted as sent
    sent = []
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", sent.append)
    assert publish_jobs_sweep(job_task=publish_job_task) == (1, 0)  # the broker is back: the very next pass
    job.refresh_from_db()
    assert sent == [job.pk] and job.enqueued_at is not None
    assert settings.CELERY_BEAT_SCHEDULE["sweep-publish-jobs"]["schedule"] <= 60


def test_a_job_delivered_twice_publishes_once(golden_set, monkeypatch):
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", lambda job_id: None)
    job = requested(golden_set)
    assert publish_job_run(job.pk).status == PublishJob.Status.DONE
    assert publish_job_run(job.pk) is None
    assert Version.objects.count() == 1


def test_a_crash_half_way_leaves_no_version_and_the_job_failed_with_a_readable_error(golden_set, owner, monkeypatch):
    real_rows_insert = version_rows.model_rows_insert

    def disk_full_after_the_labels(model, fields, rows):
        if model is VersionQuery:
            raise OSError("disk full")
        return real_rows_insert(model, fields, rows)

    monkeypatch.setattr(version_rows, "model_rows_insert", disk_full_after_the_labels)
    with pytest.raises(OSError, match="disk full"):  # raised again, for the worker's log
        requested(golden_set, owner)
    job = PublishJob.objects.get()
    assert job.status == PublishJob.Status.FAILED and job.version is None
    assert job.error == "the publish stopped on an internal error (OSError: disk full); no version was made"
    assert job.progress["step"] == "writing labels"  # how far it got
    assert not Version.objects.exists() and not VersionLabel.objects.exists()
    # Nothing is left active: the next publish goes through.
    monkeypatch.undo()
    assert requested(golden_set, owner).version.number == 1


def test_the_sweeper_sends_lost_jobs_again_and_fails_those_whose_worker_vanished(golden_set, owner, monkeypatch):
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", lambda job_id: None)
    lost = requested(golden_set, owner)
    other = factories.golden_set("other", manager=owner)
    vanished = requested(other, owner)
    now = timezone.now()
    PublishJob.objects.filter(pk=lost.pk).update(enqueued_at=now - SEND_AGAIN_AFTER - timedelta(seconds=1))
    PublishJob.objects.filter(pk=vanished.pk).update(
        status=PublishJob.Status.RUNNING, started_at=now - GIVE_UP_AFTER - timedelta(seconds=1)
    )
    sent = []

    class Task:
        delay = staticmethod(sent.append)

    assert publish_jobs_sweep(job_task=Task, now=now) == (1, 1)
    assert sent == [lost.pk]
    vanished.refresh_from_db()
    assert vanished.status == PublishJob.Status.FAILED and "no version was made" in vanished.error
    assert "sweep-publish-jobs" in settings.CELERY_BEAT_SCHEDULE


def test_the_database_allows_one_active_publish_per_set(golden_set):
    from django.db import IntegrityError

    PublishJob.objects.create(golden_set=golden_set)
    # PostgreSQL names the constraint; SQLite names its column.
    with pytest.raises(IntegrityError, match="publish_job_one_active_per_set|goldenset_publishjob.golden_set_id"), transaction.atomic():
        PublishJob.objects.create(golden_set=golden_set, status=PublishJob.Status.RUNNING)
    PublishJob.objects.create(golden_set=golden_set, status=PublishJob.Status.DONE)  # finished ones are many


# --- two at once ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="threads share one SQLite connection in tests")
def test_two_publishes_of_one_set_at_once_make_one_version_and_a_clear_refusal(golden_set, owner):
    both_checked = threading.Barrier(2, timeout=30)
    both_created = threading.Event()
    attempts = []
    real_create = PublishJob.objects.create
    outcomes = []

    def create_after_both_checked(**fields):
        both_checked.wait()  # each request has validated: now both record their job at once
        try:
            return real_create(**fields)
        finally:
            attempts.append(fields["note"])
            if len(attempts) == 2:
                both_created.set()

    class RunsOnceBothTried:
        """publish_job_task, held until both requests tried to record their job. Tasks run
        in-process here, at the commit: unheld, the first request could finish its whole
        publish before the second inserted, and the second would then rightly make a job."""

        name = publish_job_task.name

        @staticmethod
        def delay(job_id):
            assert both_created.wait(30), "the second request never tried to record its job"
            return publish_job_task.delay(job_id)

    def publish(note: str):
        try:
            job = version_publish_request(golden_set=golden_set, user=owner, note=note, job_task=RunsOnceBothTried)
            outcomes.append(("job", job.pk))
        except ConflictError as exc:
            outcomes.append(("refused", exc.message))
        finally:
            connection.close()

    PublishJob.objects.create = create_after_both_checked
    try:
        threads = [threading.Thread(target=publish, args=(f"request {n}",)) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        del PublishJob.objects.create
    assert sorted(kind for kind, _ in outcomes) == ["job", "refused"], outcomes
    refusal = next(message for kind, message in outcomes if kind == "refused")
    assert refusal.startswith("a publish of 'jobs' is already under way")
    assert Version.objects.count() == 1
    assert PublishJob.objects.get().status == PublishJob.Status.DONE


# --- a real worker ------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not settings.REDIS_AVAILABLE, reason=f"Redis does not answer at {settings.TEST_REDIS_URL}")
@pytest.mark.skipif(not settings.POSTGRES_AVAILABLE, reason="a worker process needs the PostgreSQL test database")
def test_a_worker_publishes_the_version_the_publish_page_asked_for(workers, client, owner):
    worker = workers.start(wait=False)
    golden_set = factories.golden_set("publish-worker", manager=owner)
    worker.wait_ready()
    client.force_login(owner)
    response = client.post(f"/sets/{golden_set.slug}/publish/", {"note": "from the page"})
    job = PublishJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/sets/{golden_set.slug}/publish/{job.pk}/"
    done = PublishJob.objects.filter(pk=job.pk, status=PublishJob.Status.DONE)
    wait_until(done.exists, "the publish job", workers)
    job.refresh_from_db()
    assert (job.version.number, job.version.note, job.version.label_count) == (1, "from the page", 3)
    assert "publish_job_task[" in worker.log()
    page = client.get(response["Location"]).content.decode()
    assert f'href="/sets/{golden_set.slug}/versions/1/"' in page and "hx-get" not in page


# --- the command ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the worker below is another thread, reading what the command committed
def test_the_command_waits_for_a_worker_printing_what_the_job_is_doing(golden_set, owner, monkeypatch, capsys):
    from django.core.management import call_command

    from goldenset.management.commands import publish_version

    def worker_picks_it_up_later(job_id: int) -> None:
        def run():
            # As publish_job_task runs it (autoretry_for=TRANSIENT, max_retries=5): on SQLite
            # the command's polling may hold the table when the job writes, and the job is
            # handed back to waiting; with no retry, and no sweeper here, the command would
            # wait for ever. Past the retries the job is failed, so the test fails instead.
            # (publish_job_task.apply() would retry at once, without the backoff, and leave
            # the job waiting after its last retry: the hang again.)
            try:
                for attempt in range(6):
                    try:
                        publish_job_run(job_id)
                        return
                    except TRANSIENT:
                        time.sleep(0.05 * 2**attempt)
                PublishJob.objects.filter(pk=job_id).update(status=PublishJob.Status.FAILED, error="the test's worker gave up")
            finally:
                connection.close()

        threading.Timer(0.3, run).start()

    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", worker_picks_it_up_later)
    monkeypatch.setattr(publish_version, "POLL_SECONDS", 0.05)
    call_command("publish_version", "jobs", "--note", "from the shell", "--user", "owner")
    captured = capsys.readouterr()
    job = PublishJob.objects.get()
    assert captured.err.splitlines()[:2] == [f"publish job {job.pk} started", "waiting for a worker"]
    assert captured.out.splitlines()[0] == "published jobs version 1"
    assert (job.version.note, job.version.author) == ("from the shell", owner)
