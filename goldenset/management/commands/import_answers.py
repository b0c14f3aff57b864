from django.core.management.base import BaseCommand, CommandError

from goldenset.answers import answers_import
from goldenset.models import GoldenSet
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Import the reference answers of a golden set's queries from JSON lines "
        '{"query_id", "answer", "aliases"?: [...], "key_facts"?: [...]} (gzipped or not): what the oracle '
        "experiment grades generated answers against. A query's answer is replaced by its line's; the next "
        "published version holds them. Every bad line is listed (line and field); all or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the answers file, one JSON object a line (gzip too)")
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")

    def handle(self, *args, file, golden_set, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        try:
            summary = answers_import(golden_set=found, path_or_lines=file, user=None)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"golden set {found.slug}")
        for line in summary.lines():
            self.stdout.write(line)
        self.stdout.write("the next published version holds them")
