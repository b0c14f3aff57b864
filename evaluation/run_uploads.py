"""Run uploads read off the request path: a file over settings.RUN_INLINE_UPLOAD_MB is
written to settings.RUN_UPLOAD_SPOOL and read by a worker, so that a 100 MB run never holds
a web worker (hardening #31 item 6) while it is decompressed, parsed and stored.

A caller (the runs page, the API) asks `run_upload_inline(size)`: at or under the limit it
calls run_import in the request as before. Over it, it calls run_upload_request: what can
be refused without reading the file is refused at once, with run_import's own messages (a
run name taken, an unknown stage or chunking), and nothing is written then. Otherwise the
file is spooled, a RunUploadJob recorded, and the task the caller hands in
(evaluation.tasks.run_upload_job_task: this module never imports the tasks, which import it)
is sent once the caller's transaction commits. The worker claims the job and calls the same
run_import, in one transaction that also marks the job done with its run: all or nothing,
as in the request. A refusal (GoldsetError) is stored with its problems, each naming its
line, for the job's page and the API to show.

The spooled file is deleted when the job ends, whatever its outcome: at once by the runner,
and by the sweeper for a job it failed or a runner that died between the two. A database
that went away for a moment hands the job back to the queue with its file, for the retry.
The job's life (claim, transient errors, finish, the sweeper) is lib.background_jobs's.
"""

import logging
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from celery import Task
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evaluation import chunk_inputs
from evaluation.models import RunUploadJob
from evaluation.services import run_fields_check, run_import
from goldenset.models import GoldenSet
from lib.background_jobs import NO_HOLDER, Holder, JobKind, job_finish, job_run, job_send_on_commit, jobs_sweep
from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

SEND_AGAIN_AFTER = timedelta(minutes=10)
# Far above reading the largest upload the request cap lets in (MAX_REQUEST_MB, expanding
# to at most RUN_MAX_EXPANDED_MB), yet short enough that a dead worker's upload is said to
# have failed the same hour.
GIVE_UP_AFTER = timedelta(minutes=30)
FINISHED = (RunUploadJob.Status.DONE, RunUploadJob.Status.FAILED)

RUN_UPLOAD_JOBS = JobKind(
    RunUploadJob,
    send_again_after=SEND_AGAIN_AFTER,
    give_up_after=GIVE_UP_AFTER,
    stopped="no run was stored, as an upload is all or nothing: upload the file again",
)


def run_upload_inline(size: int) -> bool:
    """True when an upload of `size` bytes is read in the request (at most
    settings.RUN_INLINE_UPLOAD_MB); False when it goes to a worker through a RunUploadJob."""
    return size <= settings.RUN_INLINE_UPLOAD_MB << 20


def spool_path(name: str) -> Path:
    """Where the spooled file `name` lives (RunUploadJob.spool_name)."""
    return Path(settings.RUN_UPLOAD_SPOOL) / name


def run_upload_request(
    *,
    golden_set: GoldenSet,
    upload: UploadedFile,
    system: str,
    stage: str,
    fmt: str = "auto",
    name: str = "",
    series: str = "",
    measured_at: datetime | None = None,
    chunking: str = "",
    user: AbstractBaseUser | None,
    job_task: Task,
) -> RunUploadJob:
    """Spool `upload` and record the job that stores it as a run, sent to a worker once the
    caller's transaction commits; the job, queued. The fields are run_import's.

    Refuses at once, writing nothing, what run_import would refuse before reading the file:
    no system, an unknown stage, a run name the set has (ConflictError, 409), an unknown
    chunking (GoldsetError naming it and the corpus's chunkings), a moment without a series.
    """
    run_fields_check(golden_set=golden_set, system=system, stage=stage, name=name)
    chunk_inputs.chunking_named(golden_set.corpus_id, chunking)
    if measured_at is not None and not (series or "").strip():
        raise GoldsetError("measured_at is the night of a series run: give series too, or leave measured_at out", field="measured_at")
    spool_name = f"{uuid.uuid4().hex}.run"
    path = spool_path(spool_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("wb") as spooled:
            for chunk in upload.chunks():
                spooled.write(chunk)
        with transaction.atomic():
            job = RunUploadJob.objects.create(
                golden_set=golden_set,
                source_name=upload.name or "run",
                format=fmt or "auto",
                system=system,
                stage=stage,
                name=name or "",
                series=series or "",
                measured_at=measured_at,
                chunking=(chunking or "").strip(),
                size=upload.size or 0,
                spool_name=spool_name,
                created_by=user if user is not None and user.is_authenticated else None,
            )
    except BaseException:
        path.unlink(missing_ok=True)  # no job names it: nothing would ever delete it
        raise
    job_send_on_commit(RunUploadJob, job.pk, job_task)
    return job


def _refusal(exc: GoldsetError) -> dict:
    # Problems with lines are problems of the file, as the API says of an upload it reads.
    field = exc.field or ("file" if exc.problems else "")
    return {
        "error": exc.message,
        "error_code": exc.code,
        "error_status": exc.http_status,
        "error_field": field,
        "problems": exc.problems,
    }


def _broken(exc: Exception) -> dict:
    return {
        "error": f"the upload stopped on an internal error ({type(exc).__name__}: {exc}); no run was stored: upload the file again",
        "error_code": "internal",
        "error_status": 500,
    }


def run_upload_job_run(job_id: int, *, holder: Holder = NO_HOLDER) -> RunUploadJob | None:
    """Claim the job for `holder` (the worker start running it, lib.background_jobs) and
    store its run; None when there is no such job or it was claimed already.

    A refusal (GoldsetError: a bad line, a file too large once expanded, a name taken
    meanwhile) fails the job with its message and problems. A database that went away for a
    moment (TRANSIENT) puts the job back in the queue, its file kept, and is raised again for
    the task to retry it. Any other error fails the job, naming the exception, and is raised
    again for the worker's log. The file is deleted once the job is done or failed.
    """

    def work(job: RunUploadJob) -> None:
        with spool_path(job.spool_name).open("rb") as data, transaction.atomic():
            run = run_import(
                golden_set=job.golden_set,
                data=data,
                fmt=job.format,
                source_name=job.source_name,
                system=job.system,
                stage=job.stage,
                name=job.name,
                user=job.created_by,
                series=job.series,
                measured_at=job.measured_at,
                chunking=job.chunking,
            )
            # In the import's own transaction: the job says done exactly when the run exists.
            job_finish(RUN_UPLOAD_JOBS, job, status=RunUploadJob.Status.DONE, run=run)

    def broke(exc: Exception) -> dict:
        if isinstance(exc, FileNotFoundError):  # the spool is not shared, or the file was removed by hand
            return {
                "error": f"the uploaded file is not in the spool folder ({settings.RUN_UPLOAD_SPOOL}) of the worker that "
                "ran the job: web and workers must share RUN_UPLOAD_SPOOL; upload the file again",
                "error_code": "internal",
                "error_status": 500,
            }
        return _broken(exc)

    try:
        return job_run(
            RUN_UPLOAD_JOBS,
            job_id,
            holder=holder,
            work=work,
            load=lambda pk: RunUploadJob.objects.select_related("golden_set", "created_by").get(pk=pk),
            refused=_refusal,
            broke=broke,
        )
    finally:
        spools_release(RunUploadJob.objects.filter(pk=job_id))


def spools_release(jobs) -> int:
    """Delete the spooled files of those of `jobs` (a RunUploadJob queryset) that are done or
    failed and still name one; returns how many were released."""
    released = 0
    for pk, name in jobs.filter(status__in=FINISHED).exclude(spool_name="").values_list("pk", "spool_name"):
        try:
            spool_path(name).unlink(missing_ok=True)
        except OSError as exc:  # kept named: the next sweep tries again
            logger.warning("run upload job %s: its spooled file %s was not deleted (%s)", pk, name, exc)
            continue
        released += RunUploadJob.objects.filter(pk=pk, spool_name=name).update(spool_name="")
    return released


def run_upload_jobs_sweep(*, job_task: Task, now: datetime | None = None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again, through `job_task`, the jobs whose message was lost or whose holder is
    gone, fail those running past GIVE_UP_AFTER (lib.background_jobs), and delete the files
    of every job that ended and still names one. Returns (sent again, failed)."""
    sent, failed = jobs_sweep(RUN_UPLOAD_JOBS, job_task=job_task, now=now, sweeper=sweeper)
    spools_release(RunUploadJob.objects.all())
    return sent, failed
