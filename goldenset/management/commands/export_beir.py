from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from goldenset.beir_export import version_beir_write
from goldenset.models import GoldenSet
from goldenset.selectors import VersionIntegrityError, version_get


class Command(BaseCommand):
    help = (
        "Write a published version (the latest unless --version) as a BEIR folder: corpus.jsonl (every page of the "
        "set's corpus), queries.jsonl (the version's queries) and qrels/test.tsv (its labels), which BEIR's "
        "GenericDataLoader and import_beir read as they are."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version (print Django's version) gives way to ours: the golden set version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("folder", metavar="DIR", help="the folder to write (made if missing; its BEIR files are replaced)")
        parser.add_argument("--version", type=int, dest="number", help="version number (default: the latest)")
        parser.add_argument("--split", default="test", help="the qrels file's name under qrels/ (default: test)")

    def handle(self, *args, slug, folder, number, split, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            version = version_get(golden_set, number)
        except Http404 as exc:
            raise CommandError(f"{exc} (publish one with publish_version)") from exc
        try:
            written = version_beir_write(version=version, folder=folder, split=split)
        except VersionIntegrityError as exc:
            raise CommandError(exc.message) from exc
        except OSError as exc:
            raise CommandError(f"cannot write {folder}: {exc.strerror or exc}") from exc
        self.stdout.write(
            f"wrote {slug} v{version.number} to {folder}: {written.pages} pages, {written.queries} queries, "
            f"{written.labels} labels (qrels/{split}.tsv)"
            + (f", {written.answers} reference answers (answers.jsonl)" if written.answers else "")
        )
        if written.pages_changed_since:
            self.stderr.write(
                f"{written.pages_changed_since} labelled page(s) changed since v{version.number} was published: "
                f"their labels were given on the text the version snapshotted, not the text written"
            )
