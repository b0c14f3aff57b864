from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.services import golden_set_import_beir
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Import a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as a new corpus and golden set. "
        "The qrels become imported judgments, grades kept as the file has them. All or nothing: "
        "any bad line stops the import, names the file and line, and writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, help="the BEIR folder")
        parser.add_argument("--slug", required=True, help="slug of the new golden set (and of its corpus)")
        parser.add_argument("--name", help="display name (default: the slug)")
        parser.add_argument("--split", default="test", help="which qrels/<split>.tsv to read (default: test)")
        parser.add_argument("--user", help="username recorded as creator, made manager of the set")

    def handle(self, *args, directory, slug, name, split, user, verbosity, **options):
        try:
            summary = golden_set_import_beir(
                directory=directory,
                slug=slug,
                name=name,
                split=split,
                user=user_by_name(user),
                progress=tqdm_progress(verbosity),
            )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in summary.lines():
            self.stdout.write(line)
