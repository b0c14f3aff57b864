import sys

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from goldenset.management.files import output_text
from goldenset.models import GoldenSet
from goldenset.query_export import QUERY_FORMATS, version_queries_chunks
from goldenset.selectors import VersionIntegrityError, version_get


class Command(BaseCommand):
    help = (
        "Write the queries of a published version (the latest unless --version) as JSON lines (default), JSON or CSV: "
        "query_id, text, the slice metadata the version froze, and each query's sampling weight as frozen at publish: "
        "inclusion_probability (null for a query not drawn from a query log), stratum and traffic_count, so an eval "
        "job can weight its scores to the traffic."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version gives way to ours: the golden set version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--version", type=int, dest="number", help="version number (default: the latest)")
        parser.add_argument("--format", choices=QUERY_FORMATS, default="jsonl", dest="fmt")
        parser.add_argument("--output", help="file to write (default, or -: standard output)")

    def handle(self, *args, slug, number, fmt, output, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            version = version_get(golden_set, number)
        except Http404 as exc:
            raise CommandError(f"{exc} (publish one with publish_version)") from exc
        try:
            chunks = list(version_queries_chunks(version, fmt))
        except VersionIntegrityError as exc:
            raise CommandError(exc.message) from exc
        with output_text(output, sys.stdout) as handle:
            for chunk in chunks:
                handle.write(chunk)
