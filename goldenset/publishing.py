"""Publishing a version as a background job: asked for by a page, the admin, the API or the
command, run by a Celery worker, followed by its progress.

A caller calls version_publish_request: what can be refused without resolving the labels
is refused at once, with version_publish's own message (no active query; nothing changed
since the latest version, see `publish_unchanged`; a publish of the set under way), and
nothing is recorded then. Otherwise a PublishJob is recorded and the task the caller hands
in (goldenset.tasks.publish_job_task: this module never imports the tasks, which import
it) is sent once the caller's transaction commits. The worker claims the job (queued ->
running, once: a message delivered twice runs nothing the second time) and calls
version_publish inside one transaction that also marks the job done with its version, so
a crash half way leaves neither a version nor a job that says it made one.

While it runs, the job's own row cannot show its steps (the transaction is not committed
yet): they go to the cache (`publish_job_progress`), shared by the web servers and the
workers when CACHE_URL is set, and by the one process of the embedded default.

The job's life (claim, transient errors, finish, the sweeper) is lib.background_jobs's.
A message lost with the broker leaves its job queued: the beat sweeper sends it again after
SEND_AGAIN_AFTER. A worker that died with a job leaves it running, which blocks the next
publish of the set: its transaction was rolled back, so no version was made, and the
sweeper sends the job again at its next pass once the process that held it no longer
answers (a worker restarted under the same name included). One whose holder answers but
runs past GIVE_UP_AFTER is marked failed.
"""

import logging
from collections.abc import Iterable, Iterator
from datetime import timedelta

from celery import Task
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q

from goldenset.answers import live_reference_answers, version_reference_answers
from goldenset.models import (
    GoldenSet,
    Judgment,
    Page,
    PublishJob,
    Query,
    Version,
    VersionPage,
    VersionQuery,
)
from goldenset.selectors import version_settings
from goldenset.services import (
    PUBLISH_STEPS,
    no_queries,
    nothing_changed,
    version_publish,
)
from lib.background_jobs import (
    NO_HOLDER,
    Holder,
    JobKind,
    job_finish,
    job_run,
    job_send_on_commit,
    jobs_sweep,
)
from lib.errors import ConflictError

logger = logging.getLogger(__name__)

SEND_AGAIN_AFTER = timedelta(minutes=10)
# Far above the longest publish measured (bench/publish.py, a million labels), so
# a slow publish is not cut short, yet short enough that a dead worker does not keep a set
# from publishing for long.
GIVE_UP_AFTER = timedelta(hours=1)
# How often, in rows, a running step reports how far it got.
REPORT_EVERY = 10_000
PROGRESS_KEY = "goldset:publish-job:{}:progress"


def query_weights(rows) -> dict[int, tuple]:
    """{query pk: (inclusion_probability, stratum, traffic_count)} of the Query or
    VersionQuery `rows` that carry a sampling weight (traffic.sampling)."""
    weighted = rows.filter(Q(inclusion_probability__isnull=False) | Q(traffic_count__isnull=False) | ~Q(stratum=""))
    pk = "pk" if rows.model is Query else "query_id"
    return {key: tuple(weight) for key, *weight in weighted.values_list(pk, "inclusion_probability", "stratum", "traffic_count")}


def publish_unchanged(golden_set: GoldenSet) -> Version | None:
    """The latest version when publishing now would snapshot exactly what it holds, else None.

    Cheap where it can decide (no label is resolved): the settings the hash covers, the
    count of the set's judgments (append-only, so the same count is the same judgments,
    hence the same labels), the active queries with their slice values, their reference
    answers (edited in place, so compared whole), and the labelled pages' snapshotted values. None when it cannot tell (a version from before judgment
    counts were recorded): the job decides then, with the same refusal.
    """
    latest = golden_set.versions.order_by("-number").first()
    if latest is None or latest.judgment_count is None:
        return None
    if version_settings(golden_set) != version_settings(latest):
        return None
    if Judgment.objects.filter(query__golden_set=golden_set).count() != latest.judgment_count:
        return None
    query_fields, page_fields = list(golden_set.query_slice_fields), list(golden_set.page_slice_fields)
    queries_now = {
        pk: {name: metadata[name] for name in query_fields if name in metadata}
        for pk, metadata in Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("id", "metadata")
    }
    if queries_now != dict(VersionQuery.objects.filter(version=latest).values_list("query_id", "metadata")):
        return None
    # A draw from a query log sets weights alone: they must still publish.
    if query_weights(Query.objects.filter(golden_set=golden_set, retired_at__isnull=True)) != query_weights(
        VersionQuery.objects.filter(version=latest)
    ):
        return None
    # An answer edited alone leaves the judgments' count as it was: it must still publish.
    if live_reference_answers(golden_set) != version_reference_answers(latest):
        return None
    # Same judgments and queries: the same labelled pages as the version's. Did any change?
    snapshot = {
        page: (metadata, published_at, content_hash)
        for page, metadata, published_at, content_hash in VersionPage.objects.filter(version=latest)
        .values_list("page_id", "metadata", "published_at", "content_hash")
        .iterator(chunk_size=20_000)
    }
    pages = Page.objects.filter(corpus_id=golden_set.corpus_id).values_list("id", "metadata", "published_at", "content_hash")
    seen = 0
    for pk, metadata, published_at, content_hash in pages.iterator(chunk_size=20_000):
        if pk in snapshot:
            seen += 1
            values = {name: metadata[name] for name in page_fields if name in metadata}
            if snapshot[pk] != (values, published_at, content_hash):
                return None
    return latest if seen == len(snapshot) else None


def version_publish_request(
    *,
    golden_set: GoldenSet,
    user: AbstractBaseUser | None,
    note: str,
    job_task: Task,
) -> PublishJob:
    """Record a publish of the set and send it to a worker once the caller's transaction
    commits; the job, queued.

    Refuses at once (ConflictError, 409) when nothing changed since the latest version
    (the same message as version_publish) or another publish of the set is queued or
    running, and (GoldsetError) a set without an active query; nothing is recorded then.
    `job_task` is the Celery task that runs a job by id (goldenset.tasks.publish_job_task).
    """
    active = PublishJob.objects.filter(golden_set=golden_set, status__in=PublishJob.ACTIVE).first()
    if active is not None:
        raise _under_way(golden_set, active.pk)
    if not Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).exists():
        raise no_queries(golden_set)
    unchanged = publish_unchanged(golden_set)
    if unchanged is not None:
        raise nothing_changed(golden_set, unchanged)
    try:
        with transaction.atomic():
            job = PublishJob.objects.create(golden_set=golden_set, note=note, created_by=user)
    except IntegrityError as exc:  # publish_job_one_active_per_set: another request got there first
        other = PublishJob.objects.filter(golden_set=golden_set, status__in=PublishJob.ACTIVE).values_list("pk", flat=True).first()
        raise _under_way(golden_set, other) from exc
    job_send_on_commit(PublishJob, job.pk, job_task)
    return job


def _under_way(golden_set: GoldenSet, job_id: int | None) -> ConflictError:
    which = f" (job {job_id})" if job_id is not None else ""
    return ConflictError(
        f"a publish of {golden_set.slug!r} is already under way{which}; wait for it to finish, then publish again if anything changed since"
    )


def publish_job_progress(job: PublishJob) -> dict:
    """How far the job got: {step, number, steps, done, total (None when unknown)}; {} before
    its first step. A running job's is read from the cache (its row is written on commit)."""
    if job.status == PublishJob.Status.RUNNING:
        return cache.get(PROGRESS_KEY.format(job.pk)) or job.progress
    return job.progress


class _Reporter:
    """A lib.progress.Progress that writes each step, and every REPORT_EVERY rows, to the cache."""

    def __init__(self, job_id: int):
        self.key = PROGRESS_KEY.format(job_id)
        self.last: dict = {}

    def _report(self, step: str, done: int, total: int | None) -> None:
        number = PUBLISH_STEPS.index(step) + 1 if step in PUBLISH_STEPS else None
        self.last = {"step": step, "number": number, "steps": len(PUBLISH_STEPS), "done": done, "total": total}
        cache.set(self.key, self.last, timeout=int(GIVE_UP_AFTER.total_seconds()))

    def __call__(self, iterable: Iterable, description: str) -> Iterator:
        total = len(iterable) if hasattr(iterable, "__len__") else None
        self._report(description, 0, total)
        done = 0
        for done, item in enumerate(iterable, start=1):
            if done % REPORT_EVERY == 0:
                self._report(description, done, total)
            yield item
        self._report(description, done, total)


PUBLISH_JOBS = JobKind(
    PublishJob,
    send_again_after=SEND_AGAIN_AFTER,
    give_up_after=GIVE_UP_AFTER,
    stopped="no version was made, as a publish is all or nothing: publish again",
)


def publish_job_run(job_id: int, *, holder: Holder = NO_HOLDER) -> PublishJob | None:
    """Claim the job for `holder` (the worker start running it, lib.background_jobs) and
    publish; None when there is no such job or it was claimed already.

    A refusal (GoldsetError: nothing changed, no query) fails the job with its message. A
    database that went away for a moment (TRANSIENT) puts the job back in the queue and is
    raised again, for the task to retry it. Any other error fails the job, naming the
    exception, and is raised again for the worker's log. No version is left behind by any.
    """
    reporter = _Reporter(job_id)

    def work(job: PublishJob) -> None:
        with transaction.atomic():
            version = version_publish(golden_set=job.golden_set, user=job.created_by, note=job.note, progress=reporter)
            # In the publish's own transaction: the job says done exactly when the version exists.
            job_finish(PUBLISH_JOBS, job, status=PublishJob.Status.DONE, version=version, progress=reporter.last)

    try:
        return job_run(
            PUBLISH_JOBS,
            job_id,
            holder=holder,
            work=work,
            load=lambda pk: PublishJob.objects.select_related("golden_set", "created_by").get(pk=pk),
            refused=lambda exc: {"error": exc.message, "progress": reporter.last},
            broke=lambda exc: {
                "error": f"the publish stopped on an internal error ({type(exc).__name__}: {exc}); no version was made",
                "progress": reporter.last,
            },
        )
    finally:
        cache.delete(reporter.key)


def publish_jobs_sweep(*, job_task: Task, now=None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again, through `job_task`, the jobs whose message was lost or whose holder is
    gone, and fail those running past GIVE_UP_AFTER (lib.background_jobs). Returns (sent
    again, failed)."""
    return jobs_sweep(PUBLISH_JOBS, job_task=job_task, now=now, sweeper=sweeper)
