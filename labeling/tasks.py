"""Every Celery task of the labeling floor: they take ids and call labeling.jobs.services.
The services never import this module; a caller that wants a job run hands them
pool_job_task."""

from celery import shared_task

from labeling.completeness.summaries import pool_summary_refresh
from labeling.jobs.services import pool_job_run, pool_jobs_sweep
from labeling.model_labels.jobs import judge_job_run, judge_jobs_sweep
from lib.background_jobs import SWEEP_LIMITS, TRANSIENT, task_holder

# In seconds (soft: the job is interrupted and fails saying why; hard: its process is
# killed), each before its kind's GIVE_UP_AFTER, when the sweeper would fail it. A pool job
# is one transaction (nothing is written); a judge job keeps what it graded.
POOL_LIMITS = {"soft_time_limit": 100 * 60, "time_limit": 110 * 60}
JUDGE_LIMITS = {"soft_time_limit": 5 * 3600, "time_limit": 5 * 3600 + 30 * 60}
SUMMARY_LIMITS = {"soft_time_limit": 10 * 60, "time_limit": 11 * 60}


# acks_late: a worker lost mid-job leaves the message for another; the job's claim
# (queued -> running) keeps a second delivery from running it twice. A transient database
# error puts the job back in the queue (lib.background_jobs.job_run) and is retried here.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5, **POOL_LIMITS)
def pool_job_task(self, job_id: int) -> str:
    job = pool_job_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SWEEP_LIMITS)
def sweep_pool_jobs_task(self) -> list[int]:
    return list(pool_jobs_sweep(job_task=pool_job_task, sweeper=self))


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **JUDGE_LIMITS)
def judge_job_task(self, job_id: int) -> str:
    job = judge_job_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SWEEP_LIMITS)
def sweep_judge_jobs_task(self) -> list[int]:
    return list(judge_jobs_sweep(job_task=judge_job_task, sweeper=self))


# The completeness page asks for it when a large pool's summary is missing or old; a lost
# one costs nothing but a later refresh, so no acks_late.
@shared_task(autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SUMMARY_LIMITS)
def pool_summary_task(pool_id: int) -> str:
    summary = pool_summary_refresh(pool_id)
    return "pool gone" if summary is None else f"{summary.done} done, {summary.relevant} relevant"
