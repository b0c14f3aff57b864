from django.core.management.base import BaseCommand, CommandError

from goldenset.chunkings import chunking_import
from goldenset.management.files import input_bytes, source_name
from goldenset.management.progress import tqdm_progress
from goldenset.models import Corpus
from lib.errors import GoldsetError, ProblemCollector
from lib.evidence_formats import read_chunk_lines
from lib.uploads import ungzipped_lines


class Command(BaseCommand):
    help = (
        'Import a chunking of a corpus: JSON lines {"chunk_id", "doc_id", "start", "end"} (and "text", which must '
        "then be the document's text at those offsets), offsets counting characters of the document's text as imported "
        "([start, end), from 0), gzipped or not ('-' reads standard input). All or nothing: every bad line is named "
        "with its chunk id, and nothing is written."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the chunks file (gzip too), or - for standard input")
        parser.add_argument("--corpus", required=True, help="slug of the corpus (a set made by import_beir --slug S has corpus S)")
        parser.add_argument("--chunking", required=True, help="name of the chunking, e.g. fixed-400")
        parser.add_argument("--replace", action="store_true", help="replace the chunking's chunks if it exists")
        parser.add_argument("--description", default="", help="what the chunking is (how it was cut)")

    def handle(self, *args, file, corpus, chunking, replace, description, verbosity, **options):
        found = Corpus.objects.filter(slug=corpus).first()
        if found is None:
            raise CommandError(f"no corpus {corpus!r}")
        name = source_name(file)
        problems = ProblemCollector()
        try:
            with input_bytes(file) as handle:
                summary = chunking_import(
                    corpus=found,
                    name=chunking,
                    records=read_chunk_lines(ungzipped_lines(handle, name, "chunks"), name, problems),
                    replace=replace,
                    description=description,
                    source_name=name,
                    problems=problems,
                    progress=tqdm_progress(verbosity),
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in summary.lines():
            self.stdout.write(line)
