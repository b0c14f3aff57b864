"""Celery tasks of monitoring: the schedules' tick, nightly runs and canary probes.

Tasks take ids and call services; all are idempotent (acks_late). The tick, sent by beat
every MONITORING_TICK_SECONDS (or by the web process's own thread on the embedded
default), makes every slot that fell due (monitoring.schedules) and sends its task, and
sends again a night that a lost message or a dead worker left undone.
"""

import logging
from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from evaluation.retention import series_entries_thin
from lib.background_jobs import TRANSIENT, jobs_sweep, task_holder
from monitoring.endpoints.trying import try_execute
from monitoring.index_probes.services import index_probe_execute
from monitoring.models import IndexProbe, NightlyRun, ProbeRound
from monitoring.nightly.services import NIGHTS, nightly_run_execute
from monitoring.probes.services import probe_round_execute
from monitoring.schedules import index_probes_due, schedules_due

logger = logging.getLogger(__name__)

# Time limits, in seconds (soft: the task is interrupted and the night records why; hard:
# its process is killed). A night stops before NIGHTS.give_up_after, after which the tick
# would send it again; a probe round, the tick and retention within minutes. A probe round
# (a few queries) stops well within the shortest probe schedule people use (5 minutes), so
# a slow endpoint cannot hold a worker from one round to the next.
NIGHT_LIMITS = {"soft_time_limit": 5 * 3600, "time_limit": 5 * 3600 + 30 * 60}
ROUND_LIMITS = {"soft_time_limit": 2 * 60, "time_limit": 3 * 60}
# A round unfinished this long is sent again: past its hard limit, so never while it runs.
ROUND_LOST_AFTER = timedelta(seconds=ROUND_LIMITS["time_limit"] + 60)
# An index probe asks up to INDEX_PROBE_MAX_QUERIES queries twice, the exact ones a scan of
# the index each: minutes, well within the hourly schedule.
INDEX_PROBE_LIMITS = {"soft_time_limit": 20 * 60, "time_limit": 22 * 60}
INDEX_PROBE_LOST_AFTER = timedelta(seconds=INDEX_PROBE_LIMITS["time_limit"] + 60)
TICK_LIMITS = {"soft_time_limit": 5 * 60, "time_limit": 6 * 60}
# A try waits TRY_IT_SECONDS for its one answer: these only bound a worker that hangs
# elsewhere (name resolution, a slow cache), within the page's TRY_GIVE_UP_SECONDS.
TRY_LIMITS = {"soft_time_limit": 30, "time_limit": 45}
RETENTION_LIMITS = {"soft_time_limit": 30 * 60, "time_limit": 35 * 60}


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5, **NIGHT_LIMITS)
def nightly_run_task(self, night_id: int) -> str:
    night = nightly_run_execute(night_id=night_id, holder=task_holder(self))
    return night.status


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **ROUND_LIMITS)
def probe_round_task(round_id: int) -> int:
    """Probe a round's canaries; returns how many were missed."""
    return sum(not outcome.found for outcome in probe_round_execute(round_id=round_id))


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **INDEX_PROBE_LIMITS)
def index_probe_task(probe_id: int) -> float | None:
    """Compare an endpoint's approximate and exact answers; returns ANN recall@k."""
    return index_probe_execute(probe_id=probe_id).ann_recall


@shared_task(acks_late=False, **TRY_LIMITS)
def endpoint_try_task(token: str) -> bool:
    """Ask an endpoint a manager's "try it" query (monitoring.endpoints.trying). Never retried
    and acknowledged on receipt: a try is asked once, a lost one is asked again by the manager."""
    return try_execute(token) is not None


def night_send(night: NightlyRun) -> None:
    NightlyRun.objects.filter(pk=night.pk).update(enqueued_at=timezone.now())
    nightly_run_task.delay_on_commit(night.pk)


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **TICK_LIMITS)
def monitoring_tick_task(self) -> str:
    """Start what the schedules ask for now, and send again what was lost."""
    now = timezone.now()
    nights, rounds = schedules_due(now=now)
    for night in nights:
        night_send(night)
    for probe_round in rounds:
        probe_round_task.delay_on_commit(probe_round.pk)
    # Nights a lost message or a dead worker left undone (lib.background_jobs.jobs_sweep).
    resent, _ = jobs_sweep(NIGHTS, job_task=nightly_run_task, now=now, sweeper=self)
    resent_rounds = 0
    for probe_round in ProbeRound.objects.filter(finished_at=None, created_at__lt=now - ROUND_LOST_AFTER):
        probe_round_task.delay_on_commit(probe_round.pk)
        resent_rounds += 1
    index_probes = index_probes_due(now=now)
    lost = IndexProbe.objects.filter(finished_at=None, created_at__lt=now - INDEX_PROBE_LOST_AFTER)
    for probe in [*index_probes, *lost]:
        index_probe_task.delay_on_commit(probe.pk)
    if nights or rounds or resent or resent_rounds or index_probes:
        logger.info(
            "monitoring tick: %d night(s), %d probe round(s) and %d index probe(s) due, %d night(s) and %d round(s) sent again",
            len(nights),
            len(rounds),
            len(index_probes),
            resent,
            resent_rounds,
        )
    return f"{len(nights)} nights, {len(rounds)} probe rounds, {resent + resent_rounds} resent"


@shared_task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **RETENTION_LIMITS)
def series_retention_task() -> int:
    """Drop the entries of old nights that retention does not keep; returns how many."""
    return series_entries_thin(now=timezone.now())
