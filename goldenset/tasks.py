"""Every Celery task of the golden-set floor: they take ids and call goldenset.publishing.
The services never import this module; a caller that wants a publish run hands
version_publish_request publish_job_task."""

from celery import shared_task

from goldenset.publishing import publish_job_run, publish_jobs_sweep
from lib.background_jobs import SWEEP_LIMITS, TRANSIENT, task_holder

# In seconds (soft: the job is interrupted and fails saying why, its transaction rolled
# back; hard: its process is killed). Far above the longest publish measured, and before
# GIVE_UP_AFTER, when the sweeper would fail it.
PUBLISH_LIMITS = {"soft_time_limit": 45 * 60, "time_limit": 50 * 60}


# acks_late: a worker lost mid-publish leaves the message for another; the job's claim
# (queued -> running) keeps a second delivery from publishing twice. A transient database
# error puts the job back in the queue (lib.background_jobs.job_run) and is retried here.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5, **PUBLISH_LIMITS)
def publish_job_task(self, job_id: int) -> str:
    job = publish_job_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SWEEP_LIMITS)
def sweep_publish_jobs_task(self) -> list[int]:
    return list(publish_jobs_sweep(job_task=publish_job_task, sweeper=self))
