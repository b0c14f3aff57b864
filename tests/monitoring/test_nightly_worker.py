"""A worker SIGKILLed in the middle of a nightly run: the night is made exactly once, and
complete. Real Celery workers and a real beat on Redis, a real engine server on 127.0.0.1.

The dead worker's message stays unacknowledged for Redis's hour-long visibility timeout;
what brings the night back is beat's monitoring tick, which finds that the worker holding
it no longer answers a ping, puts it back to pending and sends it again.
"""

import time

from monitoring.models import NightlyRun
from monitoring.nightly.services import nightly_run_now
from monitoring.tasks import night_send
from tests.evaluation.test_worker import assert_no_task_failed, pytestmark, wait_until, workers  # noqa: F401

TICK_SECONDS = "2"


def test_a_worker_killed_mid_night_leaves_one_complete_run_for_that_night(workers, endpoint, engines):
    engines.hold_seconds = 0.4  # ten queries one at a time: four seconds of querying to be killed in
    type(endpoint).objects.filter(pk=endpoint.pk).update(max_in_flight=1, enabled=False)  # no scheduled night beside it
    first = workers.start()
    night = nightly_run_now(endpoint=endpoint)
    night_send(night)
    wait_until(
        lambda: NightlyRun.objects.filter(pk=night.pk, status=NightlyRun.Status.RUNNING).exists() and len(engines.seen) >= 2,
        "the first worker querying the endpoint",
        workers,
        every=0.02,
    )
    first.kill()
    held_by = NightlyRun.objects.get(pk=night.pk)
    assert held_by.status == NightlyRun.Status.RUNNING and held_by.worker == first.node
    asked_before_the_kill = len(engines.seen)

    engines.hold_seconds = 0.0
    workers.start()  # with the hour-long visibility timeout: no redelivery from Redis
    workers.start_beat(env={"MONITORING_TICK_SECONDS": TICK_SECONDS})
    wait_until(
        lambda: NightlyRun.objects.filter(pk=night.pk, status=NightlyRun.Status.DONE).exists(),
        "the night done by the second worker",
        workers,
        timeout=90,
    )
    done = NightlyRun.objects.select_related("run").get(pk=night.pk)
    runs = list(endpoint.series.runs.all())
    assert runs == [done.run]
    assert (done.run.query_count, done.run.failed_query_count, done.queries_done, done.failed_count) == (10, 0, 10, 0)
    assert done.attempts == 2 and done.worker != first.node
    assert len(engines.seen) >= asked_before_the_kill + 10  # it started over: nothing half written was kept
    time.sleep(float(TICK_SECONDS) * 2)  # a tick or two later, still one run for that night
    assert endpoint.series.runs.count() == 1
    assert_no_task_failed(workers)
