from django.core.management.base import BaseCommand, CommandError

from lib.errors import ConflictError
from monitoring.management.commands._lookup import endpoint_named, golden_set_named
from monitoring.models import Endpoint, NightlyRun
from monitoring.nightly.services import nightly_run_execute, nightly_run_start


class Command(BaseCommand):
    help = (
        "Run a nightly run now: ask every query of the set's latest version of each endpoint (or the one named) at "
        "k_first (k_final for a reranked stage), and store the answers as a run of its series, scored like any "
        "upload. Prints each night's outcome; failed queries are recorded with their errors."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--endpoint", help="only this endpoint (default: every endpoint of the set)")

    def handle(self, *args, slug, endpoint, **options):
        golden_set = golden_set_named(slug)
        endpoints = (
            [endpoint_named(golden_set, endpoint)]
            if endpoint
            else list(Endpoint.objects.filter(golden_set=golden_set).select_related("series").order_by("stage", "name"))
        )
        if not endpoints:
            raise CommandError(f"golden set {slug!r} has no endpoint; add one with endpoint_add")
        failed = 0
        for one in endpoints:
            try:
                started = nightly_run_start(endpoint=one)
            except ConflictError as exc:  # a scheduled night of it runs on a worker: not asked twice
                failed += 1
                self.stdout.write(f"{one.name}: not started: {exc.message}")
                continue
            night = nightly_run_execute(night_id=started.pk)
            if night.status == NightlyRun.Status.DONE:
                self.stdout.write(
                    f"{one.name}: run {night.run.name!r}, {night.queries_done} queries asked, {night.failed_count} failed, "
                    f"{night.seconds:.1f} s (p50 {night.latency_p50_ms or 0:.0f} ms, p95 {night.latency_p95_ms or 0:.0f} ms)"
                )
            else:
                failed += 1
                self.stdout.write(f"{one.name}: {night.status}: {night.error}")
        if failed:
            raise CommandError(f"{failed} of {len(endpoints)} nightly run(s) did not make a run")
