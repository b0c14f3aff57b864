from django.core.management.base import BaseCommand, CommandError

from goldenset.management.files import input_bytes, source_name
from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.services import QREL_READERS, qrels_import
from lib.errors import GoldsetError
from lib.uploads import ungzipped_lines


class Command(BaseCommand):
    help = (
        "Import TREC qrels ('query_id iteration doc_id grade'; lines starting with # are comments), or with "
        "--format beir|csv|json|jsonl any other form export_qrels writes, gzipped or not ('-' reads standard input), into a golden "
        'set as imported judgments. JSON lines {"query_id", "doc_id", "grade"} may add "start" and "end" (a span of the '
        'document\'s text, the lines of one pair making one judgment graded their highest) and "hop"; CSV may name start, end '
        "and hop columns in its header. Unknown query or doc ids are refused and listed, unless --create-missing "
        "makes id-only queries and pages (and the golden set, if it does not exist). All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the qrels file (gzip too), or - for standard input")
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")
        parser.add_argument("--create-missing", action="store_true", help="create id-only queries, pages and golden set")
        parser.add_argument("--user", help="username recorded as creator of a new golden set")
        parser.add_argument("--format", choices=list(QREL_READERS), default="trec", dest="fmt", help="the file's form (default: trec)")
        parser.add_argument(
            "--chunking",
            help="the file's doc ids are chunk ids of this chunking of the set's corpus: each line becomes a span of the chunk's document",
        )

    def handle(self, *args, file, golden_set, create_missing, user, fmt, chunking, verbosity, **options):
        try:
            with input_bytes(file) as handle:
                summary = qrels_import(
                    golden_set_slug=golden_set,
                    lines=ungzipped_lines(handle, source_name(file), "qrels"),
                    source_name=source_name(file),
                    create_missing=create_missing,
                    user=user_by_name(user),
                    progress=tqdm_progress(verbosity),
                    fmt=fmt,
                    chunking=chunking,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in summary.lines():
            self.stdout.write(line)
