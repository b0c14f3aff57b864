"""A worker SIGKILLed and restarted under its OWN name (`--hostname` as before, as compose,
systemd or Kubernetes restart it) answers the sweepers' ping, yet what its killed
predecessor held is lost: the publish job, the recompute and the night it held are each
done exactly once within two minutes of the restart (hardening #31 item 1). What tells the
sweepers is the instance id of the worker start recorded on the job row when claimed
(lib.background_jobs.Holder), not the node name. Real workers and a real beat on Redis, the
sweepers at short intervals; a real engine server for the night.
"""

import time
from datetime import timedelta

from django.utils import timezone

from evaluation.models import Evaluation
from goldenset.models import PublishJob, Version
from goldenset.publishing import version_publish_request
from goldenset.tasks import publish_job_task
from monitoring.models import NightlyRun
from monitoring.nightly.services import nightly_run_now
from monitoring.tasks import night_send
from tests.evaluation.test_worker import (  # noqa: F401  (workers is the fixture)
    all_done,
    assert_every_result_there_exactly_once,
    build_golden_set,
    pytestmark,
    statuses,
    task_results,
    upload_run,
    wait_until,
    workers,
)
from tests.monitoring.conftest import endpoint, engines, watched_set  # noqa: F401  (fixtures)

RECOVERY = 120.0  # seconds from the restart to the work done: the bound
SWEEPS = {"EVALUATION_SWEEP_SECONDS": "5", "JOB_SWEEP_SECONDS": "5", "MONITORING_TICK_SECONDS": "5"}


def _restart(pool, killed):
    """Start a worker under the killed one's node name; the moment it is ready."""
    again = pool.start(name=killed.name)
    assert again.node == killed.node
    return again, time.monotonic()


def test_a_worker_restarted_under_its_own_name_leaves_no_publish_score_or_night_held_by_the_dead_one(workers, endpoint, engines):
    first = workers.start(wait=False)  # it starts while the data is made
    golden_set = build_golden_set("worker-restart", queries=600, pages=6000, seed=5)
    runs = [upload_run(golden_set, f"system-{n}", seed=n) for n in range(1, 5)]
    first.wait_ready()
    wait_until(lambda: len(task_results(first.log(), "evaluate_run_latest_task")) == len(runs), "the uploads' tasks", workers)
    workers.start_beat(env=SWEEPS)

    # A publish: the worker dies inside its transaction, so no version was made.
    job = version_publish_request(golden_set=golden_set, user=None, note="restart", job_task=publish_job_task)
    running = PublishJob.objects.filter(pk=job.pk, status=PublishJob.Status.RUNNING)
    wait_until(running.exists, "the publish job running", workers, every=0.005)
    first.kill()
    held = PublishJob.objects.get(pk=job.pk)
    assert (held.status, held.worker) == (PublishJob.Status.RUNNING, first.node)
    second, restarted = _restart(workers, first)
    done = PublishJob.objects.filter(pk=job.pk, status=PublishJob.Status.DONE)
    wait_until(done.exists, "the publish done after the restart", workers, timeout=RECOVERY - (time.monotonic() - restarted))
    assert Version.objects.filter(golden_set=golden_set).count() == 1
    version = Version.objects.get(golden_set=golden_set)

    # The recompute that publish sent: the worker dies holding an evaluation.
    just_started = Evaluation.objects.filter(
        version=version,
        status=Evaluation.Status.RUNNING,
        started_at__gte=timezone.now() - timedelta(milliseconds=40),
    )
    wait_until(
        lambda: statuses(version)[Evaluation.Status.DONE] >= 1 and just_started.exists(),
        "an evaluation just started after one finished",
        workers,
        every=0.005,
    )
    second.kill()
    orphan = Evaluation.objects.get(version=version, status=Evaluation.Status.RUNNING)
    assert orphan.worker == second.node
    third, restarted = _restart(workers, second)
    wait_until(
        lambda: all_done(version, len(runs)),
        "every run scored after the restart",
        workers,
        timeout=RECOVERY - (time.monotonic() - restarted),
    )
    assert_every_result_there_exactly_once(version, runs)

    # A night: the worker dies while it asks the endpoint.
    engines.hold_seconds = 0.4
    type(endpoint).objects.filter(pk=endpoint.pk).update(max_in_flight=1, enabled=False)  # no scheduled night beside it
    night = nightly_run_now(endpoint=endpoint)
    night_send(night)
    wait_until(
        lambda: NightlyRun.objects.filter(pk=night.pk, status=NightlyRun.Status.RUNNING).exists() and len(engines.seen) >= 2,
        "the night running",
        workers,
        every=0.02,
    )
    third.kill()
    assert NightlyRun.objects.get(pk=night.pk).worker == third.node
    engines.hold_seconds = 0.0
    _, restarted = _restart(workers, third)
    wait_until(
        lambda: NightlyRun.objects.filter(pk=night.pk, status=NightlyRun.Status.DONE).exists(),
        "the night done after the restart",
        workers,
        timeout=RECOVERY - (time.monotonic() - restarted),
    )
    done_night = NightlyRun.objects.get(pk=night.pk)
    assert list(endpoint.series.runs.all()) == [done_night.run] and done_night.attempts == 2
    scored = Evaluation.objects.filter(run=done_night.run, status=Evaluation.Status.DONE)
    wait_until(scored.exists, "the night's run scored", workers)
    assert Evaluation.objects.filter(run=done_night.run).count() == 1
