"""The fields every background job model shares (a publish, pool, judge or upload job, an
evaluation, a night, an oracle experiment, a depth run): what lib.background_jobs writes
as it sends, claims and finishes a job, and what its sweeper reads.

Apart from lib.background_jobs because a model, even an abstract one, can be defined only
once Django's app registry is loading, and that module is imported before it (by the
Celery app). Each model keeps its own `status` and `error`, and names in ACTIVE the
statuses of a job that is waiting for a worker or held by one: its waiting status first
(they differ: queued, pending), which lib.background_jobs.JobKind reads, then "running".
"""

from django.db import models


class JobRunnerFields(models.Model):
    # When its message last left for the broker: the sweeper sends a waiting job again only
    # once this is its JobKind's send_again_after old (an evaluation's STALE_AFTER, in
    # evaluation.tasks), not on every pass while it waits its turn; empty: the broker refused it.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who holds it while it runs: the worker's node name ("name@host") and the instance id of
    # its start (lib.background_jobs.Holder; both "" in-process). The sweeper sends it again
    # when that worker start no longer answers, a new start under the same name included.
    worker = models.CharField(max_length=255, blank=True)
    worker_start = models.CharField(max_length=32, blank=True)

    ACTIVE: tuple[str, str]  # each model's own: (its waiting status, "running")

    class Meta:
        abstract = True

    @property
    def active(self) -> bool:
        """Waiting for a worker or held by one: not finished."""
        return self.status in self.ACTIVE
