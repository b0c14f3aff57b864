"""Pool builds, extensions and sample draws as jobs (labeling.jobs): refused at once when
the service would refuse them unread, sent when the request commits, run once, their
result or refusal recorded; the sweeper; the completeness page's jobs section; and one
job on a real Celery worker."""

import pytest
from django.conf import settings
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from goldenset.models import Membership
from goldenset.services import membership_grant
from labeling.jobs import services as jobs
from labeling.jobs.services import GIVE_UP_AFTER, SEND_AGAIN_AFTER, pool_job_run, pool_job_submit, pool_jobs_sweep
from labeling.models import CompletenessSample, Pool, PoolJob
from labeling.tasks import pool_job_task
from lib.errors import GoldsetError
from tests.evaluation.test_worker import wait_until, workers  # noqa: F401  (workers: a fixture)
from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def golden_set(owner):
    return factories.golden_set("jobs", manager=owner, pages=factories.pages(*(f"d{n}" for n in range(1, 9))), qrels={("q1", "d1"): 2})


@pytest.fixture
def run(golden_set):
    return factories.run(golden_set, "a", {"q1": ["d1", "d2", "d3", "d4", "d5"], "q2": ["d3", "d4", "d5", "d6"]})


def build(golden_set, run, **arguments):
    return {"runs": [run.pk], "depth": 2, "strategy": "depth", "budget": None, **arguments}


def submitted(**kwargs) -> PoolJob:
    """Submit in a transaction of its own and run what its commit sends (in-process here)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return pool_job_submit(job_task=pool_job_task, **kwargs)


# --- submit -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, arguments, field, message",
    [
        ("build", {"depth": 0}, "depth", "depth must be a whole number of at least 1, got 0"),
        ("build", {"strategy": "random"}, "strategy", "unknown strategy 'random'"),
        ("build", {"runs": [999999]}, "runs", "has no run with id 999999"),
        ("extend", {"pool": 999999}, "pool", "has no pool 999999"),
        ("sample", {"pool": 999999, "size": 3}, "pool", "has no pool 999999"),
        ("flagged", {"version": 7, "depth": 5, "strategy": "depth"}, "version", "has no version 7"),
        ("other", {}, "kind", "unknown job kind 'other'"),
    ],
)
def test_what_the_service_refuses_unread_is_refused_at_once_and_nothing_is_recorded(golden_set, run, kind, arguments, field, message):
    if kind == "build":
        arguments = build(golden_set, run, **arguments)
    with pytest.raises(GoldsetError) as caught:
        pool_job_submit(golden_set=golden_set, kind=kind, arguments=arguments, job_task=pool_job_task)
    assert caught.value.field == field and message in caught.value.message
    assert not PoolJob.objects.exists()


def test_a_run_pooled_already_at_that_depth_is_refused_at_once(golden_set, run):
    submitted(golden_set=golden_set, kind="build", arguments=build(golden_set, run))
    pool = Pool.objects.get()
    with pytest.raises(GoldsetError) as caught:
        pool_job_submit(
            golden_set=golden_set,
            kind="extend",
            arguments={"pool": pool.pk, "runs": [run.pk], "depth": 2},
            job_task=pool_job_task,
        )
    assert caught.value.problems == ["run 'a' is already pooled at depth 2"]


def test_a_job_is_sent_only_when_the_request_commits(golden_set, run, monkeypatch):
    sent = []
    monkeypatch.setattr("labeling.tasks.pool_job_task.delay", sent.append)
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        job = pool_job_submit(golden_set=golden_set, kind="build", arguments=build(golden_set, run), job_task=pool_job_task)
    assert (job.status, job.enqueued_at, sent) == ("queued", None, [])
    assert not Pool.objects.exists()
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert sent == [job.pk] and job.enqueued_at is not None


# --- run ----------------------------------------------------------------------------------------


def test_a_job_runs_its_service_once_and_records_what_it_wrote(golden_set, run, owner):
    job = submitted(golden_set=golden_set, kind="build", arguments=build(golden_set, run), user=owner)
    job.refresh_from_db()
    pool = Pool.objects.get()
    assert (job.status, pool.created_by, pool.depth) == ("done", owner, 2)
    assert job.lines[0] == f"pool {pool.pk} of jobs: strategy depth, runs a (depth 2)"
    assert job.started_at <= job.finished_at and job.took.endswith(" s")
    # A second delivery of its message finds it claimed and runs nothing.
    assert pool_job_run(job.pk) is None
    assert Pool.objects.count() == 1


def test_every_kind_of_job_runs_its_service(golden_set, run, owner):
    pool_job = submitted(golden_set=golden_set, kind="build", arguments=build(golden_set, run))
    pool = Pool.objects.get()
    extend = submitted(golden_set=golden_set, kind="extend", arguments={"pool": pool.pk, "runs": [run.pk], "depth": 3})
    sample = submitted(golden_set=golden_set, kind="sample", arguments={"pool": pool.pk, "size": 1, "depth_to": 5, "seed": 3})
    for job in (pool_job, extend, sample):
        job.refresh_from_db()
        assert job.status == "done", job.error
    pool.refresh_from_db()
    assert pool.pool_runs.get().depth == 3 and CompletenessSample.objects.get().seed == 3


def test_a_refusal_met_while_running_fails_the_job_with_its_message(golden_set, run):
    submitted(golden_set=golden_set, kind="build", arguments=build(golden_set, run))
    pool = Pool.objects.get()
    job = submitted(golden_set=golden_set, kind="sample", arguments={"pool": pool.pk, "size": 50, "depth_to": 5})
    job.refresh_from_db()
    assert job.status == "failed" and job.error.startswith("size 50 is over the population")
    assert job.lines == [] and not CompletenessSample.objects.exists()


def test_an_unexpected_error_fails_the_job_and_is_raised_for_the_log(golden_set, run, monkeypatch):
    monkeypatch.setattr(jobs, "_work", lambda job: 1 / 0)
    with TestCase.captureOnCommitCallbacks(execute=False):
        job = pool_job_submit(golden_set=golden_set, kind="build", arguments=build(golden_set, run), job_task=pool_job_task)
    with pytest.raises(ZeroDivisionError):
        pool_job_run(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "internal error (ZeroDivisionError" in job.error and "nothing was written" in job.error


def test_a_database_gone_for_a_moment_puts_the_job_back_for_the_retry(golden_set, run, monkeypatch):
    from django.db import OperationalError

    def away(job):
        raise OperationalError("server closed the connection unexpectedly")

    with TestCase.captureOnCommitCallbacks(execute=False):
        job = pool_job_submit(golden_set=golden_set, kind="build", arguments=build(golden_set, run), job_task=pool_job_task)
    monkeypatch.setattr(jobs, "_work", away)
    with pytest.raises(OperationalError):
        pool_job_run(job.pk)
    job.refresh_from_db()
    assert (job.status, job.started_at) == ("queued", None)
    monkeypatch.undo()
    assert pool_job_run(job.pk).status == "done"  # the retry


# --- the sweeper -------------------------------------------------------------------------------


def test_the_sweeper_sends_lost_jobs_again_and_fails_those_whose_worker_vanished(golden_set, run, monkeypatch):
    sent = []
    monkeypatch.setattr("labeling.tasks.pool_job_task.delay", sent.append)
    now = timezone.now()
    arguments = build(golden_set, run)
    lost = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments, enqueued_at=now - SEND_AGAIN_AFTER * 2)
    never_sent = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments)
    waiting = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments, enqueued_at=now)
    orphan = PoolJob.objects.create(
        golden_set=golden_set, kind="build", arguments=arguments, status="running", started_at=now - GIVE_UP_AFTER * 2
    )
    busy = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments, status="running", started_at=now)
    assert pool_jobs_sweep(now=now, job_task=pool_job_task) == (2, 1)
    assert sorted(sent) == sorted([lost.pk, never_sent.pk])
    statuses = dict(PoolJob.objects.values_list("pk", "status"))
    assert (statuses[waiting.pk], statuses[orphan.pk], statuses[busy.pk]) == ("queued", "failed", "running")
    assert "submit it again" in PoolJob.objects.get(pk=orphan.pk).error


# --- the page's jobs section ----------------------------------------------------------------------


def jobs_url(golden_set, following: str = "") -> str:
    url = reverse("completeness_jobs", kwargs={"slug": golden_set.slug})
    return f"{url}?following={following}" if following else url


def test_the_jobs_section_follows_jobs_still_going_and_reloads_the_page_when_one_ends(client, golden_set, run, owner):
    with TestCase.captureOnCommitCallbacks(execute=False):
        job = pool_job_submit(golden_set=golden_set, kind="build", arguments=build(golden_set, run), job_task=pool_job_task, user=owner)
    client.force_login(owner)
    page = client.get(reverse("completeness", kwargs={"slug": golden_set.slug})).content.decode()
    assert f'hx-get="{jobs_url(golden_set, str(job.pk))}"' in page and "Waiting for a worker." in page
    going = client.get(jobs_url(golden_set, str(job.pk)))
    assert going.status_code == 200 and "HX-Refresh" not in going
    pool_job_run(job.pk)
    ended = client.get(jobs_url(golden_set, str(job.pk)))
    assert ended["HX-Refresh"] == "true" and "hx-trigger" not in ended.content.decode()


def test_the_jobs_section_is_for_those_who_read_the_page(client, golden_set, run, owner, teammate, stranger, make_user):
    url = jobs_url(golden_set)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    for user in (stranger, teammate):
        client.force_login(user)
        assert client.get(url).status_code == 404
    adjudicator = make_user("adjudicator")
    membership_grant(user=adjudicator, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    for user in (adjudicator, owner, make_user("staff", is_staff=True)):
        client.force_login(user)
        assert client.get(url).status_code == 200
    client.force_login(owner)
    assert client.post(url).status_code == 405


# --- a real worker ------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not settings.REDIS_AVAILABLE, reason=f"Redis does not answer at {settings.TEST_REDIS_URL}")
@pytest.mark.skipif(not settings.POSTGRES_AVAILABLE, reason="a worker process needs the PostgreSQL test database")
def test_a_worker_builds_the_pool_a_page_asked_for(workers, client, owner):
    worker = workers.start(wait=False)
    golden_set = factories.golden_set("jobs-worker", manager=owner, qrels={}, pages=factories.pages(*(f"d{n}" for n in range(1, 9))))
    run = factories.run(golden_set, "a", {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d4"]})
    worker.wait_ready()
    client.force_login(owner)
    response = client.post(
        reverse("completeness", kwargs={"slug": golden_set.slug}),
        {"form": "pool", "pool": "", "runs": [run.pk], "depth": "2", "strategy": "depth"},
    )
    assert response.status_code == 302
    job = PoolJob.objects.get()
    done = PoolJob.objects.filter(pk=job.pk, status=PoolJob.Status.DONE)
    wait_until(done.exists, "the pool job", workers)
    assert Pool.objects.get().pair_count == 4
    assert "pool_job_task[" in worker.log()


def test_the_sweeper_sends_again_at_once_a_job_held_by_a_worker_start_that_no_longer_answers(golden_set, run, monkeypatch):
    """A worker restarted under its own name answers for its node, but with a new start: what
    the killed start held is sent again at the next pass, what the live one holds is left."""
    from types import SimpleNamespace

    sent = []
    monkeypatch.setattr("labeling.tasks.pool_job_task.delay", sent.append)
    now = timezone.now()
    arguments = build(golden_set, run)
    held = {"status": "running", "started_at": now, "enqueued_at": now, "worker": "w1@host"}
    dead = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments, worker_start="killed", **held)
    alive = PoolJob.objects.create(golden_set=golden_set, kind="build", arguments=arguments, worker_start="restarted", **held)
    answers = [{"w1@host": {"instance": "restarted"}}]
    sweeper = SimpleNamespace(
        request=SimpleNamespace(is_eager=False, hostname="w1@host"),
        app=SimpleNamespace(control=SimpleNamespace(broadcast=lambda *args, **kwargs: answers)),
    )
    assert pool_jobs_sweep(now=now, job_task=pool_job_task, sweeper=sweeper) == (1, 0)
    assert sent == [dead.pk]
    dead.refresh_from_db()
    assert (dead.status, dead.worker, dead.worker_start) == ("queued", "", "")
    assert PoolJob.objects.get(pk=alive.pk).status == "running"
