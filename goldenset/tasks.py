"""Every Celery task of the golden-set floor: they take ids and call goldenset.publishing.
The services never import this module; a caller that wants a publish run hands
version_publish_request publish_job_task."""

from celery import shared_task

from goldenset.publishing import publish_job_run, publish_jobs_sweep
from lib.background_jobs import TRANSIENT, task_holder


# acks_late: a worker lost mid-publish leaves the message for another; the job's claim
# (queued -> running) keeps a second delivery from publishing twice. A transient database
# error puts the job back in the queue (lib.background_jobs.job_run) and is retried here.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def publish_job_task(self, job_id: int) -> str:
    job = publish_job_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def sweep_publish_jobs_task(self) -> list[int]:
    return list(publish_jobs_sweep(job_task=publish_job_task, sweeper=self))
