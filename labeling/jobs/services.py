"""Pool builds, extensions and sample draws asked for from a page, run by a Celery worker.

A page calls pool_job_submit: what the service would refuse before reading any run
(a bad depth, a run pooled already, a sample deeper than allowed...) is refused at once,
with the same GoldsetError, so the form shows it beside its field; otherwise a PoolJob
is recorded and the task the caller hands in (labeling.tasks.pool_job_task: this module
never imports the tasks, which import it) is sent once the request's transaction
commits. The worker claims the job (queued -> running, once: a message delivered twice
runs nothing the second time), calls the service (all or nothing) and records the lines
it reports, or the refusal. The completeness page lists the set's recent jobs and
follows the ones still going.

With tasks run in-process (the embedded default) the job is done when the page comes back.
The job's life (claim, transient errors, finish, the sweeper) is lib.background_jobs's.
A message lost with the broker leaves its job queued: the beat sweeper sends it again
after SEND_AGAIN_AFTER. A worker that died with a job leaves it running; nothing was
written (the service is one transaction), so the sweeper sends it again at its next pass
once the process that held it no longer answers. One whose holder answers but runs past
GIVE_UP_AFTER is marked failed.
"""

import logging
from datetime import timedelta

from celery import Task
from django.contrib.auth.models import AbstractBaseUser

from evaluation.models import Run
from goldenset.models import GoldenSet, Version
from labeling.completeness.services import (
    completeness_sample_check,
    completeness_sample_draw,
)
from labeling.coverage.services import flagged_slices_check, flagged_slices_pool_build
from labeling.models import Pool, PoolJob
from labeling.pools.model_first import pool_model_source_check
from labeling.pools.services import (
    pool_build,
    pool_build_check,
    pool_extend,
    pool_extend_check,
)
from lib.background_jobs import (
    NO_HOLDER,
    Holder,
    JobKind,
    job_run,
    job_send_on_commit,
    jobs_sweep,
)
from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

SEND_AGAIN_AFTER = timedelta(minutes=10)
# Far above the longest build measured (bench/pool_build.py), so a slow job is not cut short.
GIVE_UP_AFTER = timedelta(hours=2)


def _runs_of(golden_set: GoldenSet, run_ids: list[int]) -> list[Run]:
    found = {run.pk: run for run in Run.objects.filter(golden_set=golden_set, pk__in=run_ids)}
    missing = [pk for pk in run_ids if pk not in found]
    if missing:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no run with id {', '.join(map(str, missing))}", field="runs")
    return [found[pk] for pk in run_ids]


def _pool_of(golden_set: GoldenSet, pool_id: int) -> Pool:
    pool = Pool.objects.select_related("golden_set").filter(golden_set=golden_set, pk=pool_id).first()
    if pool is None:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no pool {pool_id}", field="pool")
    return pool


def _version_of(golden_set: GoldenSet, number: int) -> Version:
    version = Version.objects.filter(golden_set=golden_set, number=number).first()
    if version is None:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no version {number}", field="version")
    return version


def _check(golden_set: GoldenSet, kind: str, arguments: dict) -> None:
    """The service's own refusals that need no run read (GoldsetError)."""
    if kind == PoolJob.Kind.BUILD:
        pool_build_check(
            golden_set=golden_set,
            runs=_runs_of(golden_set, arguments["runs"]),
            depth=arguments["depth"],
            strategy=arguments["strategy"],
            budget=arguments.get("budget"),
        )
        pool_model_source_check(
            golden_set=golden_set,
            strategy=arguments["strategy"],
            model=arguments.get("model"),
            prompt_hash=arguments.get("prompt_hash"),
        )
    elif kind == PoolJob.Kind.EXTEND:
        pool = _pool_of(golden_set, arguments["pool"])
        pool_extend_check(pool=pool, runs=_runs_of(golden_set, arguments["runs"]), depth=arguments.get("depth"))
    elif kind == PoolJob.Kind.SAMPLE:
        completeness_sample_check(
            pool=_pool_of(golden_set, arguments["pool"]),
            size=arguments["size"],
            depth_to=arguments.get("depth_to"),
            seed=arguments.get("seed"),
        )
    elif kind == PoolJob.Kind.FLAGGED:
        # The runs are the flagged slices' systems' latest; the worker finds them again.
        flagged_slices_check(
            golden_set=golden_set,
            version=_version_of(golden_set, arguments["version"]),
            depth=arguments["depth"],
            strategy=arguments["strategy"],
            budget=arguments.get("budget"),
            pool=None if arguments.get("pool") is None else _pool_of(golden_set, arguments["pool"]),
        )
    else:
        raise GoldsetError(f"unknown job kind {kind!r}", field="kind")


def pool_job_submit(
    *,
    golden_set: GoldenSet,
    kind: str,
    arguments: dict,
    job_task: Task,
    user: AbstractBaseUser | None = None,
) -> PoolJob:
    """Record a job and send it to a worker once the caller's transaction commits.

    `arguments` by kind: build {runs: [run ids], depth, strategy, budget, model?,
    prompt_hash? (the model labels a model-first pool orders by)}; extend {pool,
    runs, depth}; sample {pool, size, depth_to, seed}; flagged {version: number, pool (to
    extend; none for a new pool), depth, strategy, budget} (None for a default). Refuses
    at once, with the service's own GoldsetError, what the service would refuse before
    reading a run; nothing is recorded then. `job_task` is the Celery task that runs a
    job by id (labeling.tasks.pool_job_task).
    """
    _check(golden_set, kind, arguments)
    job = PoolJob.objects.create(golden_set=golden_set, kind=kind, arguments=arguments, created_by=user)
    job_send_on_commit(PoolJob, job.pk, job_task)
    return job


def _work(job: PoolJob) -> list[str]:
    """Run the job's service; the lines of its report."""
    golden_set, arguments, user = job.golden_set, job.arguments, job.created_by
    if job.kind == PoolJob.Kind.BUILD:
        result = pool_build(
            golden_set=golden_set,
            runs=_runs_of(golden_set, arguments["runs"]),
            depth=arguments["depth"],
            strategy=arguments["strategy"],
            budget=arguments.get("budget"),
            user=user,
            model=arguments.get("model"),
            prompt_hash=arguments.get("prompt_hash"),
        )
    elif job.kind == PoolJob.Kind.EXTEND:
        result = pool_extend(
            pool=_pool_of(golden_set, arguments["pool"]),
            runs=_runs_of(golden_set, arguments["runs"]),
            depth=arguments.get("depth"),
        )
    elif job.kind == PoolJob.Kind.SAMPLE:
        result = completeness_sample_draw(
            pool=_pool_of(golden_set, arguments["pool"]),
            size=arguments["size"],
            depth_to=arguments.get("depth_to"),
            seed=arguments.get("seed"),
            user=user,
        )
    elif job.kind == PoolJob.Kind.FLAGGED:
        options = {name: arguments[name] for name in ("depth", "strategy", "budget") if arguments.get(name) is not None}
        if arguments.get("pool") is not None:
            options["pool"] = _pool_of(golden_set, arguments["pool"])
        result = flagged_slices_pool_build(
            golden_set=golden_set,
            version=_version_of(golden_set, arguments["version"]),
            user=user,
            **options,
        )
    else:
        raise GoldsetError(f"unknown job kind {job.kind!r}", field="kind")
    return result.lines()


POOL_JOBS = JobKind(
    PoolJob,
    send_again_after=SEND_AGAIN_AFTER,
    give_up_after=GIVE_UP_AFTER,
    stopped="nothing was written, as the job is all or nothing: submit it again",
)


def pool_job_run(job_id: int, *, holder: Holder = NO_HOLDER) -> PoolJob | None:
    """Claim the job for `holder` (the worker start running it, lib.background_jobs) and run
    it; None when there is no such job or it was claimed already.

    A refusal (GoldsetError) fails the job with its message and problems. A database
    that went away for a moment (TRANSIENT) puts the job back in the queue and is raised
    again, for the task to retry it. Any other error fails the job, naming the exception,
    and is raised again for the worker's log.
    """
    return job_run(
        POOL_JOBS,
        job_id,
        holder=holder,
        work=lambda job: {"lines": _work(job)},
        load=lambda pk: PoolJob.objects.select_related("golden_set", "created_by").get(pk=pk),
        refused=lambda exc: {"error": exc.message, "problems": list(exc.problems)},
        broke=lambda exc: {"error": f"the job stopped on an internal error ({type(exc).__name__}: {exc}); nothing was written"},
    )


def pool_jobs_sweep(*, job_task: Task, now=None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again, through `job_task` (as pool_job_submit), the jobs whose message was lost
    or whose holder is gone, and fail those running past GIVE_UP_AFTER
    (lib.background_jobs). Returns (sent again, failed)."""
    return jobs_sweep(POOL_JOBS, job_task=job_task, now=now, sweeper=sweeper)
