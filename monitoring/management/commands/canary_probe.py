from django.core.management.base import BaseCommand, CommandError

from monitoring.management.commands._lookup import endpoint_named, golden_set_named
from monitoring.models import Endpoint
from monitoring.probes.services import probe_now


class Command(BaseCommand):
    help = (
        "Probe every canary of the set now on each first-stage endpoint (or the one named) and print, per canary "
        "and endpoint, the rank its page came back at or 'missed'. A miss opens an alert; a find resolves it."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--endpoint", help="only this endpoint (default: every first-stage endpoint)")

    def handle(self, *args, slug, endpoint, **options):
        golden_set = golden_set_named(slug)
        if endpoint:
            endpoints = [endpoint_named(golden_set, endpoint)]
        else:
            endpoints = list(Endpoint.objects.filter(golden_set=golden_set, stage=Endpoint.Stage.FIRST_STAGE).order_by("name"))
        if not endpoints:
            raise CommandError(f"golden set {slug!r} has no first-stage endpoint to probe")
        missed = 0
        for one in endpoints:
            _, outcomes = probe_now(endpoint=one)
            if not outcomes:
                self.stdout.write(f"{one.name}: no canary in the latest version (add one with canary_add)")
            for outcome in outcomes:
                canary = outcome.canary
                where = (
                    f"rank {outcome.rank}"
                    if outcome.found
                    else ("missed" + (f" ({outcome.error})" if outcome.error else f" (rank {outcome.rank})" if outcome.rank else ""))
                )
                latency = f", {outcome.latency_ms:.0f} ms" if outcome.latency_ms is not None else ""
                self.stdout.write(f"{one.name}: query {canary.query.query_id} page {canary.page.doc_id}: {where}{latency}")
                missed += not outcome.found
        if missed:
            self.stdout.write(f"{missed} canary probe(s) missed")
