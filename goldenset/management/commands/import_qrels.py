from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.services import QREL_READERS, qrels_import
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Import TREC qrels ('query_id iteration doc_id grade'; lines starting with # are comments), or with "
        "--format csv the CSV that export_qrels writes ('query_id,doc_id,relevance'), into a golden "
        "set as imported judgments. Unknown query or doc ids are refused and listed, unless --create-missing "
        "makes id-only queries and pages (and the golden set, if it does not exist). All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="the qrels file")
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")
        parser.add_argument("--create-missing", action="store_true", help="create id-only queries, pages and golden set")
        parser.add_argument("--user", help="username recorded as creator of a new golden set")
        parser.add_argument("--format", choices=list(QREL_READERS), default="trec", dest="fmt", help="the file's form (default: trec)")

    def handle(self, *args, file, golden_set, create_missing, user, fmt, verbosity, **options):
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            with file.open(encoding="utf-8", newline="") as handle:  # newline="": as the csv module asks
                summary = qrels_import(
                    golden_set_slug=golden_set, lines=handle, source_name=file.name,
                    create_missing=create_missing, user=user_by_name(user), progress=tqdm_progress(verbosity), fmt=fmt,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        for line in summary.lines():
            self.stdout.write(line)
