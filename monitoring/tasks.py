"""Celery tasks of monitoring: the schedules' tick, nightly runs and canary probes.

Tasks take ids and call services; all are idempotent (acks_late). The tick, sent by beat
every MONITORING_TICK_SECONDS (or by the web process's own thread on the embedded
default), makes every slot that fell due (monitoring.schedules) and sends its task, and
sends again a night that a lost message or a dead worker left undone.
"""

import logging
from datetime import timedelta

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.db.models import Q
from django.utils import timezone

from evaluation.retention import series_entries_thin
from evaluation.tasks import workers_answering
from monitoring.models import NightlyRun, ProbeRound
from monitoring.nightly.services import nightly_run_execute
from monitoring.probes.services import probe_round_execute
from monitoring.schedules import schedules_due

logger = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError)
# A pending night whose task was sent this long ago and never started was lost with a
# broker; a night running this long is stuck (its worker answers pings but never finishes).
NIGHT_LOST_AFTER = timedelta(minutes=10)
NIGHT_STUCK_AFTER = timedelta(hours=6)
ROUND_LOST_AFTER = timedelta(minutes=5)


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def nightly_run_task(self, night_id: int) -> str:
    worker = "" if self.request.is_eager else (self.request.hostname or "")
    night = nightly_run_execute(night_id=night_id, worker=worker)
    return night.status


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def probe_round_task(round_id: int) -> int:
    """Probe a round's canaries; returns how many were missed."""
    return sum(not outcome.found for outcome in probe_round_execute(round_id=round_id))


def night_send(night: NightlyRun) -> None:
    NightlyRun.objects.filter(pk=night.pk).update(enqueued_at=timezone.now())
    nightly_run_task.delay_on_commit(night.pk)


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def monitoring_tick_task(self) -> str:
    """Start what the schedules ask for now, and send again what was lost."""
    now = timezone.now()
    nights, rounds = schedules_due(now=now)
    for night in nights:
        night_send(night)
    for probe_round in rounds:
        probe_round_task.delay_on_commit(probe_round.pk)
    resent = _nights_resend(self, now)
    resent_rounds = 0
    for probe_round in ProbeRound.objects.filter(finished_at=None, created_at__lt=now - ROUND_LOST_AFTER):
        probe_round_task.delay_on_commit(probe_round.pk)
        resent_rounds += 1
    if nights or rounds or resent or resent_rounds:
        logger.info("monitoring tick: %d night(s) and %d probe round(s) due, %d night(s) and %d round(s) sent again",
                    len(nights), len(rounds), resent, resent_rounds)
    return f"{len(nights)} nights, {len(rounds)} probe rounds, {resent + resent_rounds} resent"


def _nights_resend(task, now) -> int:
    """Send again the pending nights whose message was lost and the running ones whose
    worker is gone (it no longer answers a ping) or stuck; back to pending first, if
    nothing changed them since they were read, so two ticks never both send one."""
    lost = Q(status=NightlyRun.Status.PENDING) & (Q(enqueued_at=None) | Q(enqueued_at__lt=now - NIGHT_LOST_AFTER))
    stuck = Q(status=NightlyRun.Status.RUNNING, started_at__lt=now - NIGHT_STUCK_AFTER)
    orphaned = Q(pk__in=[])
    held = set(NightlyRun.objects.filter(status=NightlyRun.Status.RUNNING).exclude(worker="").values_list("worker", flat=True))
    if held and not task.request.is_eager:
        alive = workers_answering(task.app, own=task.request.hostname)
        if alive is not None:
            orphaned = Q(status=NightlyRun.Status.RUNNING, worker__in=held - alive)
    sent = 0
    due = NightlyRun.objects.filter(lost | stuck | orphaned).values_list("pk", "status", "started_at", "enqueued_at")
    for pk, status, started_at, enqueued_at in due:
        marked = NightlyRun.objects.filter(pk=pk, status=status, started_at=started_at, enqueued_at=enqueued_at).update(
            status=NightlyRun.Status.PENDING, worker="", enqueued_at=now,
        )
        if marked:
            nightly_run_task.delay_on_commit(pk)
            sent += 1
    return sent


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def series_retention_task() -> int:
    """Drop the entries of old nights that retention does not keep; returns how many."""
    return series_entries_thin(now=timezone.now())
