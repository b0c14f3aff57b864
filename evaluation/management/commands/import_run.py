import argparse
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from evaluation.models import Run
from evaluation.services import run_import
from goldenset.management.files import input_bytes, source_name
from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from lib.run_formats import FORMAT_HELP, RUN_FORMATS


def _moment(text: str) -> datetime:
    moment = parse_datetime(text.strip().replace("Z", "+00:00"))
    if moment is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time such as 2026-11-30T02:00:00Z")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Upload a run of a retrieval system to a golden set: TREC ('query_id Q0 doc_id rank score tag', a header "
        "line allowed), MS MARCO TSV, ranx or BEIR JSON, JSONL, parquet or ranx LZ4, gzipped or not, found from the "
        "content unless --format names it; '-' reads standard input. "
        "All or nothing: a bad line (wrong column count, non-numeric score, a doc twice for one query, a query id "
        "the set does not have) refuses the whole file, naming the line. Entries are ranked as trec_eval ranks "
        "them (score descending, ties by doc id descending) and capped at the set's depth. The run is then "
        "evaluated against the latest version."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the run file, or - for standard input")
        parser.add_argument("--format", choices=RUN_FORMATS, default="auto", dest="fmt", help=FORMAT_HELP)
        parser.add_argument("--golden-set", required=True, dest="golden_set", help="slug of the golden set")
        parser.add_argument("--system", required=True, help="the retrieval system, e.g. 'hybrid-v3'")
        parser.add_argument("--stage", required=True, choices=Run.Stage.values, help="first_stage, reranked or other")
        parser.add_argument("--name", help="name of the run (default: '<system> <stage>')")
        parser.add_argument(
            "--chunking",
            default="",
            help="the corpus's chunking whose chunk ids the run returns (default: documents, doc ids); "
            "it is then scored at document and at chunk level",
        )
        parser.add_argument("--user", help="username recorded as uploader")
        parser.add_argument("--series", default="", help="put the run in this series (made on first use), e.g. 'prod-hybrid nightly'")
        parser.add_argument(
            "--measured-at",
            dest="measured_at",
            type=_moment,
            default=None,
            help="with --series: when the system was queried, ISO 8601 (default: now), e.g. 2026-11-30T02:00:00Z",
        )

    def handle(self, *args, file, fmt, golden_set, system, stage, name, chunking, user, series, measured_at, verbosity, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        try:
            with input_bytes(file) as handle:
                run = run_import(
                    golden_set=found,
                    data=handle,
                    fmt=fmt,
                    source_name=source_name(file),
                    system=system,
                    stage=stage,
                    name=name,
                    user=user_by_name(user),
                    progress=tqdm_progress(verbosity),
                    series=series,
                    measured_at=measured_at,
                    chunking=chunking,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        of = f" (chunking {run.chunking.name})" if run.chunking else ""
        self.stdout.write(f"run {run.name!r} of {golden_set}{of}: {run.query_count} queries, {run.entry_count} entries kept")
        if run.dropped_by_depth:
            self.stdout.write(f"depth cap {run.depth_cap}: {run.dropped_by_depth} entries past it were not kept")
        if run.external_doc_count:
            self.stdout.write(f"{run.external_doc_count} doc id(s) are not in the corpus: they count as unjudged")
        if run.partial:
            # Said plainly, as the upload page and the API do, so that a test run is not mistaken for a system.
            self.stdout.write(self.style.WARNING(f"{run.partial_note}; see archive_run for retiring it"))
