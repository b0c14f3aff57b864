"""Celery tasks: take ids, re-fetch, call a service. All idempotent, so acks_late is safe.

A publish enqueues evaluate_version_task, which fans out one evaluate_run_task per run;
an upload enqueues evaluate_run_latest_task. The beat sweeper re-enqueues whatever a lost
broker message or a dead worker left undone, so numbers can be late but never lost.
"""

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_process_init
from django.db import InterfaceError, OperationalError
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from evaluation.alerts.delivery import alert_deliver_task  # noqa: F401  (a worker must know the delivery task at start)
from evaluation.alerts.rules import alerts_check
from evaluation.models import Evaluation, Run
from evaluation.services import evaluation_compute, evaluation_fail, evaluations_schedule
from goldenset.models import GoldenSet, Version
from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

# An evaluation still "running" after this long lost its worker; the sweeper restarts it.
STALE_AFTER = timedelta(minutes=15)
TRANSIENT = (OperationalError, InterfaceError)


@worker_process_init.connect
def warm_kernels_in_worker(**kwargs) -> None:
    """Compile (or load from NUMBA_CACHE_DIR) ranx's kernels before the first task, in the
    child process: numba's thread pool must not be started before a fork."""
    from evaluation.warmup import warm_kernels

    warm_kernels()


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, retry_backoff_max=300, max_retries=8)
def evaluate_run_task(run_id: int, version_id: int) -> str:
    run = Run.objects.select_related("golden_set").filter(pk=run_id).first()
    version = Version.objects.select_related("golden_set").filter(pk=version_id).first()
    if run is None or version is None:
        return "gone"  # deleted meanwhile: nothing to score
    try:
        evaluation = evaluation_compute(run=run, version=version)
    except GoldsetError as exc:
        evaluation_fail(run_id=run_id, version_id=version_id, error=str(exc))
        return "failed"
    except TRANSIENT:
        raise  # retried with backoff; the evaluation stays pending for the sweeper meanwhile
    except Exception as exc:
        # Anything else is a bug: record it, so the row does not stay "running" and the
        # sweeper does not retry it every few minutes forever.
        evaluation_fail(run_id=run_id, version_id=version_id, error=f"{type(exc).__name__}: {exc}")
        raise
    alerts_check(evaluation=evaluation)
    return "done"


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=8)
def evaluate_version_task(version_id: int) -> int:
    """Schedule and enqueue the evaluation of every run against the version; returns how many."""
    version = Version.objects.filter(pk=version_id).first()
    if version is None:
        return 0
    enqueued = 0
    for evaluation in evaluations_schedule(version=version):
        if evaluation.status != Evaluation.Status.DONE:
            _enqueue(evaluation)
            enqueued += 1
    return enqueued


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=8)
def evaluate_run_latest_task(run_id: int) -> str:
    """A new run is scored against the latest version of its set (if there is one)."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return "gone"
    latest = Version.objects.filter(golden_set_id=run.golden_set_id).order_by("-number").first()
    if latest is None:
        return "no version"
    evaluation, _ = Evaluation.objects.get_or_create(run=run, version=latest)
    _enqueue(evaluation)
    return "enqueued"


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def sweep_missing_evaluations_task() -> int:
    """Enqueue every (run, latest version) pair with no finished evaluation whose task was
    never sent or was sent STALE_AFTER ago (lost with a broker, say), and every evaluation
    whose worker vanished. Returns how many were enqueued."""
    now = timezone.now()
    latest = Version.objects.filter(golden_set=OuterRef("golden_set")).order_by("-number").values("id")[:1]
    enqueued = 0
    for run_id, version_id in Run.objects.annotate(latest_version=Subquery(latest)).exclude(latest_version=None).values_list("id", "latest_version"):
        evaluation, _ = Evaluation.objects.get_or_create(run_id=run_id, version_id=version_id)
        # A pending evaluation sent a moment ago is waiting its turn in the queue.
        lost = evaluation.status == Evaluation.Status.PENDING and (
            evaluation.enqueued_at is None or now - evaluation.enqueued_at > STALE_AFTER
        )
        stale = evaluation.status == Evaluation.Status.RUNNING and (evaluation.started_at is None or now - evaluation.started_at > STALE_AFTER)
        if lost or stale:
            _enqueue(evaluation)
            enqueued += 1
    if enqueued:
        logger.info("sweeper enqueued %d evaluation(s)", enqueued)
    return enqueued


def _enqueue(evaluation: Evaluation) -> None:
    """Send the evaluation's task and note when (Evaluation.enqueued_at)."""
    Evaluation.objects.filter(pk=evaluation.pk).update(enqueued_at=timezone.now())
    evaluate_run_task.delay(evaluation.run_id, evaluation.version_id)


def golden_set_evaluate_now(golden_set: GoldenSet, version: Version) -> list[Evaluation]:
    """Evaluate every run of the set against `version` in this process (the `evaluate` command)."""
    results = []
    for evaluation in evaluations_schedule(version=version):
        results.append(evaluation_compute(run=evaluation.run, version=version))
    return results
