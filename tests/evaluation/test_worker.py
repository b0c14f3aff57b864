"""A real Celery worker on Redis scores every run when a version is published, and workers
killed in the middle of a recompute leave every result there exactly once.

The worker is `celery -A goldset worker` in a subprocess (tests.worker_harness) on the
committed rows of the test database, so these tests use `transactional_db`. A kill is a
SIGKILL of a worker's whole process group while it holds an evaluation: the evaluation
stays marked running, and its message stays delivered-but-unacknowledged in Redis
(acks_late). The kill test shows the two things that bring it back, one after the other:

- Redis redelivery: once the message is older than the broker's visibility timeout
  (CELERY_BROKER_VISIBILITY_TIMEOUT, an hour by default; a second here), a worker puts it
  back at the head of its queue, as it starts and then every 100 s or so.
- The beat sweeper (sweep_missing_evaluations_task, every EVALUATION_SWEEP_SECONDS, 30 by
  default): it pings the workers and re-enqueues, at once, every running evaluation whose
  worker does not answer, besides what was never sent, on every version. This is what a
  deployment relies on first (tests/hardening/test_worker_loss.py runs it under beat);
  redelivery an hour later is the backstop for messages the sweeper did not resend.
"""

import random
import re
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation.models import Evaluation, Run, Score
from evaluation.services import evaluation_compute, run_import
from evaluation.tasks import sweep_missing_evaluations_task
from goldenset.models import GoldenSet, Version, default_grade_scale
from goldenset.services import GoldenSetSource, golden_set_create, version_publish
from lib.formats import JsonRecord
from tests.worker_harness import Worker, WorkerPool, purge_queue, sending_to, session_queue, unacknowledged

pytestmark = [
    pytest.mark.worker,
    # Under CI=true settings_test already refuses to start without them.
    pytest.mark.skipif(not settings.REDIS_AVAILABLE, reason=f"Redis does not answer at {settings.TEST_REDIS_URL}"),
    pytest.mark.skipif(
        not settings.POSTGRES_AVAILABLE,
        reason="a worker process needs the PostgreSQL test database; the SQLite fallback is in use",
    ),
]

LANGS = ("en", "de", "fr")
DOC_TYPES = ("faq", "manual", "article")
DEPTH = 100
WAIT = 60.0  # seconds any one wait may take before the test fails with the workers' logs
# kombu's Redis transport gives back unacknowledged messages older than the visibility timeout
# when a consumer starts polling and then on every tenth of its 10-second ticks (QoS.restore_visible,
# interval=10), and skips a pass while another worker's pass holds its mutex. A redelivery is
# therefore due within 100 s of the second worker's start when its first pass is skipped (seen
# once on CI), not within WAIT.
REDELIVERY_WAIT = 130.0
VISIBILITY_TIMEOUT = 1  # the second worker's, in seconds


class Rollback(Exception):
    """Raised to undo an in-process computation once its results have been read."""


@pytest.fixture
def workers(transactional_db, tmp_path):
    """Start real workers on TEST_REDIS_URL with `workers.start()`; this process sends its
    tasks there too. Every worker is killed at the end, whatever happened."""
    broker, queue = settings.TEST_REDIS_URL, session_queue()
    purge_queue(broker, queue)
    pool = WorkerPool(broker_url=broker, queue=queue, log_dir=tmp_path)
    try:
        with sending_to(broker, queue):
            yield pool
    finally:
        pool.kill_all()
        purge_queue(broker, queue)


# --- data, made through the services --------------------------------------------------


def build_golden_set(slug: str, *, queries: int, pages: int, seed: int) -> GoldenSet:
    """`queries` queries in three languages (a query slice) over `pages` pages of three doc
    types (a page slice), each query with about 6 labels, one in six of grade 0."""
    rng = random.Random(seed)
    page_records = [
        JsonRecord(line=n, id=f"kb/{n}#chunk", title=f"page {n}", text=f"text {n}", metadata={"doc_type": DOC_TYPES[n % 3]})
        for n in range(1, pages + 1)
    ]
    query_records = [JsonRecord(line=n, id=f"q{n}", text=f"question {n}", metadata={"lang": LANGS[n % 3]}) for n in range(1, queries + 1)]
    qrels = {}
    for query in query_records:
        for page in rng.sample(page_records, 6):
            qrels[(query.id, page.id)] = rng.choice((0, 1, 1, 2, 2, 3))
    source = GoldenSetSource(
        pages=page_records,
        queries=query_records,
        qrels=qrels,
        grade_scale=default_grade_scale(),
        query_slice_fields=["lang"],
        page_slice_fields=["doc_type"],
    )
    golden_set_create(slug=slug, name=slug, source=source)
    return GoldenSet.objects.get(slug=slug)


def upload_run(golden_set: GoldenSet, system: str, *, seed: int) -> Run:
    """A run of DEPTH pages a query that finds about two thirds of the labelled pages at
    random ranks, leaves one query in ten unanswered and returns one page outside the corpus."""
    rng = random.Random(seed)
    doc_ids = list(golden_set.corpus.pages.values_list("doc_id", flat=True))
    labelled: dict[str, list[str]] = {}
    for query_id, doc_id in golden_set.queries.values_list("query_id", "judgments__page__doc_id"):
        labelled.setdefault(query_id, []).append(doc_id)
    lines = []
    for query_id, judged in labelled.items():
        if rng.random() < 0.1:
            continue
        found = [doc_id for doc_id in judged if rng.random() < 0.66]
        ranking = found + ["outside/corpus"] + rng.sample(doc_ids, DEPTH - len(found) - 1)
        rng.shuffle(ranking)
        ranking = list(dict.fromkeys(ranking))
        lines += [f"{query_id} Q0 {doc_id} {rank} {1000 - rank} {system}\n" for rank, doc_id in enumerate(ranking, 1)]
    return run_import(golden_set=golden_set, lines=lines, source_name=f"{system}.trec", system=system, stage="first_stage")


# --- waiting and checking --------------------------------------------------------------


def wait_until(condition, what: str, pool: WorkerPool, *, timeout: float = WAIT, every: float = 0.1):
    """Poll `condition` until it returns something truthy and return that; fail with the logs."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{pool.logs()}")
        time.sleep(every)


def statuses(version: Version) -> Counter:
    return Counter(Evaluation.objects.filter(version=version).values_list("status", flat=True))


def all_done(version: Version, runs: int) -> bool:
    return statuses(version) == Counter({Evaluation.Status.DONE: runs})


def scores_of(evaluation: Evaluation) -> list[tuple[str, str, float, int, int]]:
    rows = Score.objects.filter(evaluation=evaluation)
    return sorted(rows.values_list("slice", "metric", "value", "queries_averaged", "no_relevant_count"))


def scores_computed_here(run: Run, version: Version) -> list[tuple[str, str, float, int, int]]:
    """The scores evaluation_compute gives in this process, read inside a transaction that
    is then rolled back, so the worker's rows are left as they are."""
    try:
        with transaction.atomic():
            evaluation = evaluation_compute(run=run, version=version)
            computed = scores_of(evaluation)
            raise Rollback
    except Rollback:
        return computed


def assert_every_result_there_exactly_once(version: Version, runs: list[Run]) -> None:
    assert Evaluation.objects.filter(version=version).count() == len(runs)
    expected_total = 0
    for run in runs:
        evaluation = Evaluation.objects.get(run=run, version=version)
        assert evaluation.status == Evaluation.Status.DONE
        stored = scores_of(evaluation)
        expected = scores_computed_here(run, version)
        keys = [(slice_name, metric) for slice_name, metric, *_ in stored]
        assert len(keys) == len(set(keys))
        assert keys == [row[:2] for row in expected]
        assert [row[3:] for row in stored] == [row[3:] for row in expected]
        assert [row[2] for row in stored] == pytest.approx([row[2] for row in expected], abs=1e-12)
        expected_total += len(expected)
    # Every slice and metric of every run, and nothing else: 7 slices (overall, 3 languages,
    # 3 doc types, each with relevant pages in this data) x 10 default metrics.
    assert Score.objects.filter(evaluation__version=version).count() == expected_total
    assert expected_total == len(runs) * 7 * 10


def assert_no_task_failed(pool: WorkerPool) -> None:
    logs = pool.logs()
    assert "raised unexpected" not in logs and "Traceback" not in logs, logs


def task_results(log: str, task: str) -> list[str]:
    """The return values the worker logged for `task`, in order."""
    return re.findall(rf"Task evaluation\.tasks\.{task}\[[0-9a-f-]+\] succeeded in [0-9.e-]+s: (.*)", log)


# --- the tests -----------------------------------------------------------------------------


def test_publishing_a_version_gets_every_run_scored_by_the_worker_without_anyone_asking(workers):
    worker = workers.start(wait=False)  # it starts while the data is made
    golden_set = build_golden_set("worker-publish", queries=60, pages=300, seed=1)
    runs = [upload_run(golden_set, f"system-{n}", seed=n) for n in range(1, 4)]
    worker.wait_ready()
    # Each upload asked for a score against the latest version, and there is none yet.
    wait_until(lambda: len(task_results(worker.log(), "evaluate_run_latest_task")) == 3, "the uploads' tasks", workers)
    assert task_results(worker.log(), "evaluate_run_latest_task") == ["'no version'"] * 3
    assert not Evaluation.objects.exists()

    version = version_publish(golden_set=golden_set, note="first")
    wait_until(lambda: all_done(version, 3), "every run scored against version 1", workers)
    assert task_results(worker.log(), "evaluate_version_task") == ["3"]

    # A run uploaded later is scored against the latest version, again with nobody asking.
    late = upload_run(golden_set, "system-late", seed=4)
    wait_until(lambda: all_done(version, 4), "the late run scored against version 1", workers)
    assert_every_result_there_exactly_once(version, [*runs, late])
    assert_no_task_failed(workers)


def kill_mid_evaluation(worker: Worker, version: Version, pool: WorkerPool, *, done_at_least: int) -> tuple[Evaluation, str]:
    """SIGKILL `worker` while it holds an evaluation, once `done_at_least` are finished.

    Returns the evaluation it held, left running, and the id of its task, whose message
    Redis now holds as delivered and never acknowledged.
    """

    def just_started() -> bool:
        # One running that started a moment ago, so that the kill lands inside it rather
        # than in the gap after it (a poll that saw it late could kill between tasks).
        fresh = Evaluation.objects.filter(
            version=version,
            status=Evaluation.Status.RUNNING,
            started_at__gte=timezone.now() - timedelta(milliseconds=40),
        )
        return statuses(version)[Evaluation.Status.DONE] >= done_at_least and fresh.exists()

    wait_until(just_started, f"an evaluation just started in {worker.name}'s hands after {done_at_least} finished", pool, every=0.005)
    worker.kill()
    orphan = Evaluation.objects.get(version=version, status=Evaluation.Status.RUNNING)
    [message] = unacknowledged(pool.broker_url, pool.queue)
    assert message["task"] == "evaluation.tasks.evaluate_run_task"
    assert message["argsrepr"] == repr((orphan.run_id, version.id))
    return orphan, message["id"]


def test_workers_killed_mid_recompute_leave_every_result_there_exactly_once(workers):
    first = workers.start(wait=False)  # it starts while the data is made
    third = workers.start(wait=False, standby=True)  # and so does the last, idle until needed
    golden_set = build_golden_set("worker-kill", queries=300, pages=3000, seed=2)
    runs = [upload_run(golden_set, f"system-{n}", seed=n) for n in range(1, 9)]
    first.wait_ready()
    wait_until(lambda: len(task_results(first.log(), "evaluate_run_latest_task")) == len(runs), "the uploads' tasks", workers)
    version = version_publish(golden_set=golden_set, note="recompute")

    # Redis redelivery. The first worker dies holding an evaluation, with at least one done
    # and the rest queued. The second, with a visibility timeout of a second, gets the
    # dead worker's message back first, then takes the queue.
    first_orphan, first_task = kill_mid_evaluation(first, version, workers, done_at_least=1)
    # The second worker's first pass gives the message back only if it is older than the
    # timeout by then (its age counts from its delivery, before the kill). A worker that
    # started sooner found it too young, left it to a pass 100 s later, and emptied the
    # queue meanwhile, leaving nothing for the sweeper's half (seen once on CI).
    time.sleep(VISIBILITY_TIMEOUT + 0.5)
    second = workers.start(env={"CELERY_BROKER_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT)})
    redelivered = Evaluation.objects.filter(pk=first_orphan.pk, status=Evaluation.Status.DONE)
    wait_until(redelivered.exists, "the redelivered evaluation", workers, timeout=REDELIVERY_WAIT)
    assert f"evaluate_run_task[{first_task}] received" in second.log()

    # The beat sweeper. The second worker dies holding another evaluation. The third, with
    # the hour-long default, does the queued rest while the orphan waits, marked running,
    # until the sweeper finds that the worker holding it does not answer.
    done = statuses(version)[Evaluation.Status.DONE]
    second_orphan, second_task = kill_mid_evaluation(second, version, workers, done_at_least=done + 1)
    third.wait_ready()
    third.take_queue(workers.queue)
    wait_until(lambda: statuses(version)[Evaluation.Status.DONE] == len(runs) - 1, "the queued evaluations", workers)
    assert Evaluation.objects.get(pk=second_orphan.pk).status == Evaluation.Status.RUNNING
    sweep_missing_evaluations_task.delay()
    wait_until(lambda: all_done(version, len(runs)), "every run scored after the sweep", workers)
    assert task_results(third.log(), "sweep_missing_evaluations_task") == ["1"]
    assert second_task not in third.log()

    assert_every_result_there_exactly_once(version, runs)
    assert_no_task_failed(workers)
