from django.core.management.base import BaseCommand, CommandError

from goldenset.management.files import input_bytes, source_name
from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from traffic.logs import LOG_FORMATS, query_log_import


class Command(BaseCommand):
    help = (
        "Import a query log into a golden set, as teams have them: JSON lines "
        '{"query": ..., "count": ..., "timestamp" (or "ts"): ..., any slice fields such as "lang"} (a line without '
        '"count" is one event), or CSV/TSV with a header row (a "query" column; "count" and "timestamp" optional; every '
        "other column a slice field); gzip of any ('-' reads standard input). The form is told from the first line "
        "unless --format says it. Queries are normalised (Unicode NFKC, case, whitespace, punctuation at either end) "
        "and merged with their counts. Every bad line is listed with its line number and field; nothing is stored "
        "unless the whole file reads cleanly."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the log file (gzip too), or - for standard input")
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")
        parser.add_argument("--name", required=True, help="the log's name in the set (e.g. 2026-11-search)")
        parser.add_argument(
            "--format", choices=LOG_FORMATS, default="auto", dest="fmt", help="the file's form (default: told from its first line)"
        )
        parser.add_argument(
            "--replace", action="store_true", help="replace the set's log of this name (refused if queries were drawn from it)"
        )
        parser.add_argument("--user", help="username recorded as the importer")

    def handle(self, *args, file, golden_set, name, fmt, replace, user, verbosity, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        try:
            with input_bytes(file) as handle:
                summary = query_log_import(
                    golden_set=found,
                    data=handle,
                    name=name,
                    source_name=source_name(file),
                    fmt=fmt,
                    replace=replace,
                    user=user_by_name(user),
                    progress=tqdm_progress(verbosity),
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in summary.lines():
            self.stdout.write(line)
