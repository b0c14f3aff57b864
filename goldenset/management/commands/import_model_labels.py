from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldenset.management.files import input_bytes, source_name
from goldenset.management.progress import tqdm_progress
from goldenset.model_labels import model_labels_import
from goldenset.models import GoldenSet
from lib.errors import GoldsetError, ProblemCollector
from lib.formats import MODEL_LABEL_READERS
from lib.uploads import ungzipped_lines


class Command(BaseCommand):
    help = (
        "Import grades a model gave (query, page) pairs, made elsewhere, as model labels of a golden set: "
        'TREC qrels (\'query_id 0 doc_id grade\') or JSON lines ({"query_id", "doc_id", "grade", "score"?, "raw"?}), '
        "gzipped or not ('-' reads standard input). Name the prompt (or configuration) that made them by its text "
        "(--prompt-file, stored once and hashed) or its sha256 (--prompt-hash). Model labels are kept apart: they "
        "never enter versions, exports, scores or agreement. Every bad line is listed; all or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the labels file (gzip too), or - for standard input")
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")
        parser.add_argument("--model", required=True, help="the model's name, e.g. gpt-4o-2024-08-06")
        prompt = parser.add_mutually_exclusive_group(required=True)
        prompt.add_argument("--prompt-file", dest="prompt_file", help="file holding the exact prompt or configuration text")
        prompt.add_argument("--prompt-hash", dest="prompt_hash", help="sha256 hex of the prompt, when its text is kept elsewhere")
        parser.add_argument(
            "--format", choices=list(MODEL_LABEL_READERS), default="trec", dest="fmt", help="the file's form (default: trec)"
        )

    def handle(self, *args, file, golden_set, model, prompt_file, prompt_hash, fmt, verbosity, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        prompt_text = None
        if prompt_file is not None:
            if not Path(prompt_file).is_file():
                raise CommandError(f"{prompt_file}: no such file")
            # newline="" keeps the text byte for byte: its hash names the prompt.
            with open(prompt_file, encoding="utf-8", newline="") as handle:
                prompt_text = handle.read()
        name = source_name(file)
        problems = ProblemCollector()
        try:
            with input_bytes(file) as handle:
                # The lines that read well are checked for meaning too, and the faults of
                # both kinds refused together: one attempt names every bad line.
                records = MODEL_LABEL_READERS[fmt](ungzipped_lines(handle, name, "model labels"), name, problems)
                summary = model_labels_import(
                    golden_set=found,
                    model=model,
                    records=records,
                    prompt_text=prompt_text,
                    prompt_hash=prompt_hash,
                    source_name=name,
                    progress=tqdm_progress(verbosity),
                    problems=problems,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in summary.lines():
            self.stdout.write(line)
