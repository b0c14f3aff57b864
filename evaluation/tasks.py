"""Celery tasks: take ids, re-fetch, call a service. All idempotent, so acks_late is safe.

A publish enqueues evaluate_version_task, which fans out one evaluate_run_task per run;
an upload enqueues evaluate_run_latest_task. An upload too large to read in the request is
read by run_upload_job_task (evaluation.run_uploads). The beat sweeper re-enqueues whatever a lost
broker message or a dead worker left undone, so numbers can be late but never lost. Each
alert an evaluation raises enqueues alert_deliver_task (evaluation.receivers), which sends
its incident's message when it is gathered; send_incident_messages_task, on the beat, sends
the rest and the retries that are due (evaluation.alerts.delivery).
"""

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_process_init
from django.db.models import Q
from django.utils import timezone

from evaluation.alerts.delivery import incident_message_send, incident_messages_release, incident_messages_send_due
from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert, Evaluation, Run
from evaluation.run_uploads import run_upload_job_run, run_upload_jobs_sweep
from evaluation.services import (
    evaluation_compute,
    evaluation_fail,
    evaluations_missing_create,
    evaluations_schedule,
)
from goldenset.models import Version
from lib.background_jobs import NO_HOLDER, SWEEP_LIMITS, TRANSIENT, dead_holders, held_by, task_holder
from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

# An evaluation still "running" after this long lost its worker, or its worker is stuck;
# the sweeper restarts it. A worker start that died is noticed sooner: it no longer answers
# (lib.background_jobs.holders_answering), even when a new start took its name.
STALE_AFTER = timedelta(minutes=15)
# Time limits, in seconds (soft: the task is interrupted and records why; hard: its process
# is killed). A run's scoring stops before STALE_AFTER, so the sweeper never sends again a
# score that is still being computed; what only schedules or sends stops within minutes.
SCORE_LIMITS = {"soft_time_limit": 12 * 60, "time_limit": 14 * 60}
SCHEDULE_LIMITS = {"soft_time_limit": 5 * 60, "time_limit": 6 * 60}
# Reading a spooled upload (MAX_REQUEST_MB, expanding to RUN_MAX_EXPANDED_MB at most) stops
# well before evaluation.run_uploads.GIVE_UP_AFTER, when the sweeper would fail it.
UPLOAD_LIMITS = {"soft_time_limit": 20 * 60, "time_limit": 22 * 60}


@worker_process_init.connect
def warm_kernels_in_worker(**kwargs) -> None:
    """Compile (or load from NUMBA_CACHE_DIR) the scoring's kernels before the first task, in the
    child process: numba's thread pool must not be started before a fork."""
    from evaluation.warmup import warm_kernels

    warm_kernels()


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, retry_backoff_max=300, max_retries=8, **SCORE_LIMITS)
def evaluate_run_task(self, run_id: int, version_id: int) -> str:
    run = Run.objects.select_related("golden_set").filter(pk=run_id).first()
    version = Version.objects.select_related("golden_set").filter(pk=version_id).first()
    if run is None or version is None:
        return "gone"  # deleted meanwhile: nothing to score
    try:
        # In-process there is no worker that could die on its own: nothing is recorded.
        evaluation = evaluation_compute(run=run, version=version, holder=task_holder(self))
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
    incident_messages_release(version_id=version_id)
    return "done"


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=8, **SCHEDULE_LIMITS)
def evaluate_version_task(version_id: int) -> int:
    """Schedule and enqueue the evaluation of every run against the version; returns how many."""
    version = Version.objects.filter(pk=version_id).first()
    if version is None:
        return 0
    enqueued = 0
    for evaluation in evaluations_schedule(version=version):
        if evaluation.status != Evaluation.Status.DONE:
            evaluation_enqueue(evaluation)
            enqueued += 1
    return enqueued


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=8, **SCHEDULE_LIMITS)
def evaluate_run_latest_task(run_id: int) -> str:
    """A new run is scored against the latest version of its set (if there is one); a run
    that asked a version's queries (a night, Run.version_asked) against that version and
    every later one, as a later one may have been published while it was asked."""
    run = Run.objects.select_related("version_asked").filter(pk=run_id).first()
    if run is None:
        return "gone"
    versions = Version.objects.filter(golden_set_id=run.golden_set_id).order_by("-number")
    if run.version_asked is not None:
        versions = versions.filter(number__gte=run.version_asked.number)
    else:
        versions = versions[:1]
    if not versions:
        return "no version"
    for version in versions:
        evaluation, _ = Evaluation.objects.get_or_create(run=run, version=version)
        evaluation_enqueue(evaluation)
    return "enqueued"


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SCHEDULE_LIMITS)
def sweep_missing_evaluations_task(self) -> int:
    """Enqueue, in every golden set and on every version, what publishing and uploading
    scheduled and nobody is scoring: pairs with no evaluation yet (their task was never
    sent, a broker outage say), pending evaluations whose task was never sent or was sent
    STALE_AFTER ago (lost with a broker), running ones whose worker start no longer
    answers (killed, whether or not a new start took its name), and running ones older
    than STALE_AFTER (a worker that answers but is stuck). Returns how many were enqueued."""
    created = evaluations_missing_create()
    now = timezone.now()
    stale = now - STALE_AFTER
    lost = Q(status=Evaluation.Status.PENDING) & (Q(enqueued_at=None) | Q(enqueued_at__lt=stale))
    stuck = Q(status=Evaluation.Status.RUNNING) & (Q(started_at=None) | Q(started_at__lt=stale))
    running = Q(status=Evaluation.Status.RUNNING)
    orphaned = running & held_by(dead_holders(Evaluation, running, self))
    due = Evaluation.objects.filter(lost | stuck | orphaned).values_list(
        "pk", "run_id", "version_id", "status", "started_at", "enqueued_at"
    )
    enqueued = 0
    for pk, run_id, version_id, status, started_at, enqueued_at in due:
        # Back to pending, as sent now, if nothing changed it since it was read: a worker
        # that finished it meanwhile keeps its result, a sweeper running beside this one
        # does not send it too, and the next passes leave the copy waiting in the queue.
        marked = Evaluation.objects.filter(pk=pk, status=status, started_at=started_at, enqueued_at=enqueued_at).update(
            status=Evaluation.Status.PENDING,
            enqueued_at=now,
            **NO_HOLDER.fields(),
        )
        if marked:
            evaluate_run_task.delay(run_id, version_id)
            enqueued += 1
    if enqueued:
        logger.info("sweeper enqueued %d evaluation(s), %d of them never scheduled before", enqueued, created)
    return enqueued


def evaluation_enqueue(evaluation: Evaluation) -> None:
    """Send the evaluation's task and note when (Evaluation.enqueued_at)."""
    Evaluation.objects.filter(pk=evaluation.pk).update(enqueued_at=timezone.now())
    evaluate_run_task.delay(evaluation.run_id, evaluation.version_id)


# Named for the module it was first defined in, so that queued deliveries still find it.
@shared_task(name="evaluation.alerts.alert_deliver_task", acks_late=True, **SCHEDULE_LIMITS)
def alert_deliver_task(alert_id: int) -> str:
    """Send the message the alert joined, if it is gathered (a SendResult). Never retried
    here: a failed round waits for its next_attempt_at, and send_incident_messages_task
    sends it then, with a worker or without one."""
    message_id = Alert.objects.filter(pk=alert_id).values_list("incident_message_id", flat=True).first()
    if message_id is None:
        return "not sent"  # gone, within noise, or silenced by a mute or an acknowledgement
    return incident_message_send(message_id=message_id)


@shared_task(acks_late=True, **SCHEDULE_LIMITS)
def send_incident_messages_task() -> dict[str, int]:
    """The beat's sweep of incident messages: gathered ones and retries whose time has come."""
    return incident_messages_send_due()


# acks_late: a worker lost mid-read leaves the message for another; the job's claim
# (queued -> running) keeps a second delivery from storing the run twice. A transient
# database error puts the job back in the queue, its file kept, and is retried here.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5, **UPLOAD_LIMITS)
def run_upload_job_task(self, job_id: int) -> str:
    job = run_upload_job_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SWEEP_LIMITS)
def sweep_run_upload_jobs_task(self) -> list[int]:
    return list(run_upload_jobs_sweep(job_task=run_upload_job_task, sweeper=self))
