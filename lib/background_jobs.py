"""The life of a background job row (a pool job, a publish job, a judge job): its message is
sent once the row is committed, and a sweeper on the beat sends again the messages that were
lost and fails the jobs whose worker vanished.

Each job model has `status` (queued, running, done, failed), `enqueued_at` (when its message
last left, which the sweeper goes by), `started_at`, `finished_at` and `error`. The task takes
the job's id and claims the row (queued -> running) before it works, so a message sent twice
runs the job once.
"""

import logging
from datetime import datetime, timedelta

from celery import Task
from django.db import models, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

logger = logging.getLogger(__name__)


def job_send_on_commit(model: type[models.Model], job_id: int, job_task: Task) -> None:
    """Send the job's message when the transaction that made the row commits. enqueued_at is
    written only once the message left: a send the broker refused leaves it empty, and the
    sweeper's next pass (a minute at most) sends it, instead of waiting out send_again_after
    as it must for a message that left and was lost."""
    transaction.on_commit(lambda: _send(model, job_id, job_task))


def _send(model: type[models.Model], job_id: int, job_task: Task) -> bool:
    try:
        job_task.delay(job_id)
    except KombuOperationalError as exc:  # kombu's word for a broker that does not answer
        logger.error("broker unreachable: %s(%d) was not sent (%s); the sweeper sends it later", job_task.name, job_id, exc)
        return False
    model.objects.filter(pk=job_id, enqueued_at__isnull=True).update(enqueued_at=timezone.now())
    return True


def jobs_sweep(
    model: type[models.Model], *, job_task: Task, send_again_after: timedelta, give_up_after: timedelta, stopped: str,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Send again, through `job_task`, the jobs of `model` whose message was lost (queued, sent
    `send_again_after` ago or never), and fail with the error "the worker running it stopped
    (...); `stopped`" those running for `give_up_after`. Returns (sent again, failed)."""
    now = now or timezone.now()
    lost = list(
        model.objects.filter(status="queued").exclude(enqueued_at__gt=now - send_again_after).values_list("pk", flat=True)
    )
    # Rows the sweeper reads are committed already: their messages go at once.
    sent = 0
    for job_id in lost:
        model.objects.filter(pk=job_id).update(enqueued_at=None)
        if not _send(model, job_id, job_task):
            break  # the broker is away: the next pass sends these
        sent += 1
    failed = model.objects.filter(status="running", started_at__lt=now - give_up_after).update(
        status="failed", finished_at=now, error=f"the worker running it stopped (no result after {give_up_after}); {stopped}",
    )
    if sent or failed:
        logger.info("%s sweeper: %d sent again, %d failed", model._meta.verbose_name, sent, failed)
    return sent, failed
