from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from goldenset.chunkings import check_cut, chunking_cut
from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.models import Corpus
from goldenset.services import golden_set_import_beir
from goldenset.teams import team_get
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Import a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as a new corpus and golden set. "
        "The qrels become imported judgments, grades kept as the file has them. All or nothing: "
        "any bad line stops the import, names the file and line, and writes nothing. With --chunking NAME "
        "--chunk-chars N [--overlap M], Goldset also cuts every document's text into a chunking NAME of chunks of about "
        "N characters (ending at a sentence or word where one is near, ids DOCID#0, DOCID#1, ...), in the same transaction."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, help="the BEIR folder")
        parser.add_argument("--slug", required=True, help="slug of the new golden set (and of its corpus)")
        parser.add_argument("--name", help="display name (default: the slug)")
        parser.add_argument("--split", default="test", help="which qrels/<split>.tsv to read (default: test)")
        parser.add_argument("--user", help="username recorded as creator, made manager of the set")
        parser.add_argument("--team", help="ORGANISATION/TEAM the set and its corpus belong to (default: the default team)")
        parser.add_argument("--chunking", help="also cut the documents into a chunking of this name (needs --chunk-chars)")
        parser.add_argument("--chunk-chars", type=int, dest="chunk_chars", help="characters a chunk holds, about")
        parser.add_argument("--overlap", type=int, default=0, help="characters a chunk shares with the one before it (default 0)")

    def handle(self, *args, directory, slug, name, split, user, team, chunking, chunk_chars, overlap, verbosity, **options):
        if bool(chunking) != (chunk_chars is not None):
            raise CommandError("--chunking and --chunk-chars go together: name the chunking and the size of its chunks")
        progress = tqdm_progress(verbosity)
        try:
            if chunking:
                check_cut(chunk_chars, overlap)  # refused before the corpus is read
            # One transaction: the set and its chunking are imported together or not at all.
            with transaction.atomic():
                summary = golden_set_import_beir(
                    directory=directory,
                    slug=slug,
                    name=name,
                    split=split,
                    user=user_by_name(user),
                    team=team_get(team) if team else None,
                    progress=progress,
                )
                lines = summary.lines()
                if chunking:
                    corpus = Corpus.objects.get(slug=slug)
                    cut = chunking_cut(corpus=corpus, name=chunking, chunk_chars=chunk_chars, overlap=overlap, progress=progress)
                    lines += cut.lines()
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in lines:
            self.stdout.write(line)
