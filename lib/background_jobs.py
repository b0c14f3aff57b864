"""The life of a background job row (a publish job, a pool job, a judge job, a night): its
message is sent once the row is committed, one runner claims, runs and finishes it, and one
sweeper on the beat sends again what was lost and what a dead worker held.

Each job model has a `status` and an `error` of its own and the runner's fields of
lib.job_fields.JobRunnerFields: `enqueued_at` (when its message last left, which the
sweeper goes by), `started_at`, `finished_at`, and `worker` and `worker_start` (who holds
it while it runs: a Holder). A JobKind says how one model lives: the status of a job not
yet claimed, how long before a message is taken for lost, and what is done with a job
running past its give-up time. The task takes the job's id and job_run claims the row
(waiting -> running) before it works, so a message sent twice runs the job once.

Who holds a job is the PROCESS that claimed it, not its node name: a worker that restarts
under its own name (as compose, systemd or Kubernetes restart it) answers a ping, yet what
its killed predecessor held is lost. So a worker records its node name and INSTANCE, drawn
once per worker start and shared with its forked pool children (a Holder), and the
sweeper asks the workers for their instance (`holders_answering`, a remote-control command
each worker answers from its main process): a held job whose holder is not among the
answers is sent again at once. Every job runner here is safe to run again: a publish and
a pool job are one transaction (a dead holder wrote nothing), a judge job continues where it
stopped, a night starts over and stores its run once.
"""

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import reduce
from operator import or_
from typing import NamedTuple

from celery import Celery, Task
from celery.worker.control import control_command
from django.db import DatabaseError, InterfaceError, OperationalError, models, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

# Errors of a database that went away for a moment: worth running the job again.
TRANSIENT = (OperationalError, InterfaceError)
# How long the sweeper waits for the workers to answer. A worker's main process answers
# while its pool child works, so a busy worker answers too.
PING_SECONDS = 2.0
# This process's start. Drawn at import, which a worker does in its main process before it
# forks its pool, so the children that run the tasks record the id their parent answers with.
INSTANCE = uuid.uuid4().hex[:12]
CONTROL_COMMAND = "goldset_instance"
# A sweeper's time limits, in seconds (Celery's soft_time_limit and time_limit): a pass
# reads the job rows and sends messages, which takes seconds.
SWEEP_LIMITS = {"soft_time_limit": 2 * 60, "time_limit": 3 * 60}
HELD = ("pk", "worker", "worker_start", "started_at")


@control_command(name=CONTROL_COMMAND)
def goldset_instance(state) -> dict:
    """A worker's answer to holders_answering: the instance id of this start."""
    return {"instance": INSTANCE}


class Holder(NamedTuple):
    """Who holds a running job: the worker's node name ("name@host") and the instance id of
    its start; both "" in-process, where no worker could die on its own."""

    worker: str
    worker_start: str

    def fields(self) -> dict:
        return {"worker": self.worker, "worker_start": self.worker_start}


NO_HOLDER = Holder("", "")


def task_holder(task: Task) -> Holder:
    """The Holder a job run by `task` records: its worker and this start (NO_HOLDER in-process)."""
    if task.request.is_eager or not task.request.hostname:
        return NO_HOLDER
    return Holder(task.request.hostname, INSTANCE)


def holders_answering(app: Celery, *, own: str | None) -> set[Holder] | None:
    """The Holders of the worker starts that answer within PING_SECONDS (and each node with
    an empty start, as rows written before starts were recorded hold), or None when the
    answer cannot be trusted: the worker asking (`own`, a node name) did not hear itself,
    so a silence may be the broker's, not the workers', and nothing is taken for dead."""
    replies = app.control.broadcast(CONTROL_COMMAND, reply=True, timeout=PING_SECONDS)
    alive: set[Holder] = set()
    nodes: set[str] = set()
    for reply in replies:
        for node, answer in reply.items():
            nodes.add(node)
            alive.add(Holder(node, ""))
            if isinstance(answer, dict) and answer.get("instance"):
                alive.add(Holder(node, answer["instance"]))
    if own and own not in nodes:
        logger.warning("sweeper: the ping did not come back to %s itself; no worker is taken for dead this time", own)
        return None
    return alive


def held_by(holders: set[Holder]) -> Q:
    """True for a row held by one of `holders`."""
    return reduce(or_, (Q(worker=h.worker, worker_start=h.worker_start) for h in holders), Q(pk__in=[]))


def dead_holders(model: type[models.Model], running: Q, sweeper: Task | None) -> set[Holder]:
    """The Holders of `model`'s `running` rows that no longer answer, asked when `sweeper`
    (the task sweeping) runs on a worker; empty in-process or when the answer cannot be trusted."""
    held = {Holder(*pair) for pair in model.objects.filter(running).exclude(worker="").values_list("worker", "worker_start")}
    if not held or sweeper is None or sweeper.request.is_eager:
        return set()
    alive = holders_answering(sweeper.app, own=sweeper.request.hostname)
    return set() if alive is None else held - alive


@dataclass(frozen=True)
class JobKind:
    """How the rows of `model` live as background jobs.

    `send_again_after`: a waiting job whose message left this long ago was lost with the
    broker. `give_up_after`: a job running this long (its holder answers, but never
    finishes) is failed with "the worker running it stopped (...); `stopped`", or sent again
    when `stuck_sent_again`. `claimed`: fields a claim writes beside status, worker and
    started_at (a night counts attempts).
    """

    model: type[models.Model]
    send_again_after: timedelta
    give_up_after: timedelta
    stopped: str
    stuck_sent_again: bool = False
    claimed: Callable[[], dict] = field(default=dict)

    @property
    def waiting(self) -> str:
        """The status of a job not claimed yet: the first of the model's ACTIVE
        (lib.job_fields), where each job model names it once."""
        return self.model.ACTIVE[0]


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
    try:
        model.objects.filter(pk=job_id, enqueued_at__isnull=True).update(enqueued_at=timezone.now())
    except DatabaseError as exc:
        # SQLite refuses the write while the in-process task thread holds its table (the
        # embedded default). The message left: at worst the sweeper sends it again, and the
        # claim runs the job once.
        logger.warning("%s(%d) was sent, but its enqueued_at was not written (%s)", job_task.name, job_id, exc)
    return True


def job_claim(kind: JobKind, job_id: int, *, holder: Holder) -> bool:
    """Take a waiting job for `holder` in one conditional UPDATE: of two workers handed the
    same message, one gets it. True when this one did."""
    return bool(
        kind.model.objects.filter(pk=job_id, status=kind.waiting).update(
            status="running",
            started_at=timezone.now(),
            **holder.fields(),
            **kind.claimed(),
        )
    )


def job_release(kind: JobKind, job_id: int, *, holder: Holder) -> None:
    """Hand a job `holder` runs back to waiting, for its task's retry to claim again. When
    the database will not take even that, the sweeper brings it back (its holder gone, or
    running past give_up_after)."""
    try:
        kind.model.objects.filter(pk=job_id, status="running", **holder.fields()).update(
            status=kind.waiting,
            started_at=None,
            enqueued_at=timezone.now(),
            **NO_HOLDER.fields(),
        )
    except TRANSIENT:
        logger.warning("%s %s: not handed back after a database error; the sweeper sends it again", kind.model.__name__, job_id)


def job_finish(kind: JobKind, job: models.Model, **fields) -> None:
    """Write `fields` (status and what the job made or why it failed) and finished_at, on
    the row and on `job`."""
    fields["finished_at"] = timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    kind.model.objects.filter(pk=job.pk).update(**fields)


def job_run(
    kind: JobKind,
    job_id: int,
    *,
    holder: Holder,
    load: Callable[[int], models.Model],
    work: Callable[[models.Model], dict | None],
    refused: Callable[[GoldsetError], dict],
    broke: Callable[[Exception], dict],
) -> models.Model | None:
    """Claim job `job_id` for `holder` and run it; the job as loaded (`load`) and finished,
    or None when it was claimed already (or is gone).

    `work(job)` returns the fields to finish it with as done, or None when it finished the
    job itself (a publish marks it done in its own transaction). A refusal (GoldsetError)
    fails it with the fields `refused(exc)` returns. A database that went away for a moment
    (TRANSIENT) hands the job back to waiting and is raised again, for the task to retry.
    Any other error fails it with the fields `broke(exc)` returns and is raised again for the log.
    """
    if not job_claim(kind, job_id, holder=holder):
        return None
    job = load(job_id)
    try:
        done = work(job)
    except GoldsetError as exc:
        job_finish(kind, job, status="failed", **refused(exc))
    except TRANSIENT:
        job_release(kind, job_id, holder=holder)
        raise
    except Exception as exc:
        job_finish(kind, job, status="failed", **broke(exc))
        raise
    else:
        if done is not None:
            job_finish(kind, job, status="done", **done)
    return job


def jobs_sweep(kind: JobKind, *, job_task: Task, now: datetime | None = None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again, through `job_task`, the jobs of `kind` whose message was lost (waiting,
    sent `send_again_after` ago or never) and those whose holder is gone (running, held by
    a worker start that no longer answers: asked when `sweeper`, the task sweeping, runs on
    a worker); and fail those running for `give_up_after` (or send them again, for a kind
    that says so). Returns (sent again, failed)."""
    now = now or timezone.now()
    model = kind.model
    lost = list(model.objects.filter(status=kind.waiting).exclude(enqueued_at__gt=now - kind.send_again_after).values_list("pk", flat=True))
    running = Q(status="running")
    # (pk, worker, worker_start, started_at) of running jobs to hand back and send again
    back = list(model.objects.filter(running & held_by(dead_holders(model, running, sweeper))).values_list(*HELD))
    stuck = model.objects.filter(running, started_at__lt=now - kind.give_up_after)
    failed = 0
    if kind.stuck_sent_again:
        back += stuck.values_list(*HELD)
    else:
        failed = stuck.update(
            status="failed",
            finished_at=now,
            error=f"the worker running it stopped (no result after {kind.give_up_after}); {kind.stopped}",
        )
    for pk, worker, worker_start, started_at in dict.fromkeys(back):
        # Only if nothing changed it since it was read: a holder that finished it meanwhile
        # keeps its result, and a sweeper beside this one does not send it too.
        if model.objects.filter(pk=pk, status="running", worker=worker, worker_start=worker_start, started_at=started_at).update(
            status=kind.waiting,
            started_at=None,
            enqueued_at=None,
            **NO_HOLDER.fields(),
        ):
            lost.append(pk)
    # Rows the sweeper reads are committed already: their messages go at once.
    sent = 0
    for job_id in lost:
        model.objects.filter(pk=job_id).update(enqueued_at=None)
        if not _send(model, job_id, job_task):
            break  # the broker is away: the next pass sends these
        sent += 1
    if sent or failed:
        logger.info("%s sweeper: %d sent again, %d failed", model._meta.verbose_name, sent, failed)
    return sent, failed
