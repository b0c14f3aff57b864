import sys
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, transaction

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet, PublishJob
from goldenset.publishing import publish_job_progress, version_publish_request
from goldenset.tasks import publish_job_task
from lib.errors import GoldsetError

POLL_SECONDS = 1.0


class Command(BaseCommand):
    help = (
        "Publish the golden set's resolved labels and slice metadata as its next immutable version, "
        "and print the version's number and content hash. The publish runs as a background job (as from the "
        "pages and the API): this command starts it and waits for it, printing its progress. "
        "Refuses when nothing changed since the last version or a publish of the set is under way."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--note", default="", help="what changed, shown beside the version")
        parser.add_argument("--user", help="username recorded as the version's author")

    def handle(self, *args, slug, note, user, verbosity=1, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        author = user_by_name(user)
        try:
            job = version_publish_request(golden_set=golden_set, user=author, note=note, job_task=publish_job_task)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        except Exception:
            # Tasks run in-process (no broker): the job ran and failed inside the call.
            job = PublishJob.objects.filter(golden_set=golden_set).first()
            if job is None or job.status != PublishJob.Status.FAILED:
                raise
        if transaction.get_connection().in_atomic_block:
            # Called inside a transaction (call_command from code that holds one): the job is
            # sent when that commits, so waiting here would wait for ever.
            raise CommandError(f"publish job {job.pk} is sent when the caller's transaction commits; call this outside one")
        if verbosity >= 1:
            self.stderr.write(f"publish job {job.pk} started")
        job = self._wait(job, verbosity)
        if job.status == PublishJob.Status.FAILED:
            raise CommandError(f"not published: {job.error}")
        version = job.version
        self.stdout.write(f"published {slug} version {version.number}")
        self.stdout.write(f"content hash {version.content_hash}")
        self.stdout.write(
            f"{version.query_count} queries, {version.label_count} labels, {version.relevant_count} relevant "
            f"(grade >= {version.relevance_threshold}), {version.queries_without_relevant} queries without a relevant page"
        )

    def _wait(self, job: PublishJob, verbosity: int) -> PublishJob:
        """Poll the job until it is done or failed, printing each new step (stderr)."""
        shown = None
        while True:
            try:
                job = PublishJob.objects.select_related("version").get(pk=job.pk)
            except OperationalError:
                # A moment's refusal (SQLite's table lock while the in-process publish writes
                # the version, a connection lost): the job goes on, so ask again.
                time.sleep(POLL_SECONDS)
                continue
            if not job.active:
                return job
            progress = publish_job_progress(job)
            line = _progress_line(job, progress)
            if verbosity >= 1 and line != shown:
                self.stderr.write(line)
                shown = line
            sys.stderr.flush()
            time.sleep(POLL_SECONDS)


def _progress_line(job: PublishJob, progress: dict) -> str:
    if job.status == PublishJob.Status.QUEUED:
        return "waiting for a worker"
    if not progress:
        return "running"
    counted = f", {progress['done']} of {progress['total']}" if progress.get("total") else ""
    return f"step {progress['number']} of {progress['steps']}: {progress['step']}{counted}"
