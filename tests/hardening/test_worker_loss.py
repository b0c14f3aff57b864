"""A worker SIGKILLed in the middle of a recompute is replaced, and every score is stored
exactly once within two minutes of the kill, with a deployment's defaults: the message the
dead worker held stays unacknowledged for Redis's hour-long visibility timeout, so what
brings the evaluation back is beat's sweeper, which finds that the worker holding it no
longer answers a ping (hardening finding 3; it used to wait STALE_AFTER, 15 minutes).
"""

import time

from goldenset.services import version_publish
from tests.evaluation.test_worker import (  # noqa: F401  (workers is the fixture)
    all_done,
    assert_every_result_there_exactly_once,
    assert_no_task_failed,
    build_golden_set,
    kill_mid_evaluation,
    pytestmark,
    task_results,
    upload_run,
    wait_until,
    workers,
)

RECOVERY = 120.0  # seconds from the kill to every score stored: the bound


def test_a_worker_killed_mid_recompute_is_replaced_and_every_score_is_stored_once_within_two_minutes(workers):
    first = workers.start(wait=False)  # it starts while the data is made
    golden_set = build_golden_set("worker-loss", queries=300, pages=3000, seed=3)
    runs = [upload_run(golden_set, f"system-{n}", seed=n) for n in range(1, 7)]
    first.wait_ready()
    wait_until(lambda: len(task_results(first.log(), "evaluate_run_latest_task")) == len(runs), "the uploads' tasks", workers)
    workers.start_beat()  # the deployment's schedule, sweeping every EVALUATION_SWEEP_SECONDS
    version = version_publish(golden_set=golden_set, note="recompute")

    orphan, orphan_task = kill_mid_evaluation(first, version, workers, done_at_least=1)
    killed_at = time.monotonic()
    second = workers.start()  # with the hour-long visibility timeout: no redelivery
    wait_until(
        lambda: all_done(version, len(runs)),
        "every run scored after the kill",
        workers,
        timeout=RECOVERY - (time.monotonic() - killed_at),
    )
    # It was the sweeper that sent the orphan again, not Redis that gave its message back.
    assert orphan_task not in second.log()
    assert "1" in task_results(second.log(), "sweep_missing_evaluations_task")
    assert_every_result_there_exactly_once(version, runs)
    assert_no_task_failed(workers)
