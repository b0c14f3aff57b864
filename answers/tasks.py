"""Every Celery task of the answers floor: they take ids and call answers.experiments. The
services never import this module; a caller that wants an experiment run hands them
oracle_experiment_task."""

from celery import shared_task

from answers.endpoint_depth import endpoint_depth_run, endpoint_depth_runs_sweep
from answers.experiments import oracle_experiment_run, oracle_experiments_sweep
from lib.background_jobs import SWEEP_LIMITS, TRANSIENT, task_holder

# In seconds (soft: the job is interrupted and fails saying why; hard: its process is
# killed), both before GIVE_UP_AFTER (6 hours), when the sweeper would fail it. What it
# answered is kept either way.
EXPERIMENT_LIMITS = {"soft_time_limit": 5 * 3600, "time_limit": 5 * 3600 + 30 * 60}


# acks_late: a worker lost mid-job leaves the message for another; the claim (queued ->
# running) keeps a second delivery from running it twice, and a run again answers only what
# is missing. A transient database error puts the job back in the queue and is retried here.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **EXPERIMENT_LIMITS)
def oracle_experiment_task(self, experiment_id: int) -> str:
    experiment = oracle_experiment_run(experiment_id, holder=task_holder(self))
    return "claimed already" if experiment is None else experiment.status


# An endpoint asked at a depth: acks_late and the claim as above; a run again asks over.
@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **EXPERIMENT_LIMITS)
def endpoint_depth_task(self, job_id: int) -> str:
    job = endpoint_depth_run(job_id, holder=task_holder(self))
    return "claimed already" if job is None else job.status


@shared_task(bind=True, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3, **SWEEP_LIMITS)
def sweep_oracle_experiments_task(self) -> list[int]:
    """The beat's sweep of the answers floor's jobs: experiments, then endpoint depth asks."""
    experiments = oracle_experiments_sweep(job_task=oracle_experiment_task, sweeper=self)
    asks = endpoint_depth_runs_sweep(job_task=endpoint_depth_task, sweeper=self)
    return [experiments[0] + asks[0], experiments[1] + asks[1]]
