from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Alert
from lib.errors import GoldsetError
from monitoring.endpoints.services import endpoint_spec
from monitoring.index_probes.services import index_probe_execute, index_probe_now, shard_sort_key
from monitoring.management.commands._lookup import endpoint_named, golden_set_named
from monitoring.models import Endpoint


class Command(BaseCommand):
    help = (
        "Run the index probe now on each endpoint with an exact request (or the one named): ask the latest "
        "version's queries (at most 200) approximately and exactly, print ANN recall@k overall and per shard, "
        "and the endpoint's open index alert. Under the endpoint's floor it opens one; back over it, resolves it."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--endpoint", help="only this endpoint (default: every endpoint with an exact request)")

    def handle(self, *args, slug, endpoint, **options):
        golden_set = golden_set_named(slug)
        if endpoint:
            endpoints = [endpoint_named(golden_set, endpoint)]
        else:
            endpoints = [e for e in Endpoint.objects.filter(golden_set=golden_set).order_by("name") if endpoint_spec(e).has_exact_mode]
        if not endpoints:
            raise CommandError(f"golden set {slug!r} has no endpoint with an exact request (endpoint_add --exact-body or --exact-params)")
        for one in endpoints:
            try:
                probe = index_probe_execute(probe_id=index_probe_now(endpoint=one).pk)
            except GoldsetError as exc:
                raise CommandError(f"{one.name}: {exc.message}") from exc
            if probe.ann_recall is None:
                self.stdout.write(f"{one.name}: nothing compared ({probe.error})")
                continue
            self.stdout.write(
                f"{one.name}: ANN recall@{probe.k} {probe.ann_recall:.3f} over {probe.queries_compared} of {probe.queries_asked} "
                f"queries (v{probe.version.number}, floor {one.index_recall_floor:g})"
                + (f", {probe.errors} failed" if probe.errors else "")
            )
            for shard, figures in sorted(probe.per_shard.items(), key=lambda item: shard_sort_key(item[0])):
                self.stdout.write(
                    f"  shard {shard}: {figures['returned']} of {figures['exact']} exact neighbours returned ({figures['share']:.3f})"
                )
            alert = Alert.objects.filter(golden_set=golden_set, kind=Alert.Kind.INDEX_RECALL, subject=one.name, resolved_at=None).first()
            self.stdout.write(f"  open index alert: {alert.message}" if alert else "  no open index alert")
