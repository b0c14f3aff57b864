import sys

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from goldenset.chunk_labels import chunking_named, version_chunk_label_rows
from goldenset.evidence_export import version_answers_chunks, version_export_chunks
from goldenset.management.files import STDIO, output_text
from goldenset.model_fill import model_fill_get, model_fill_rows
from goldenset.models import GoldenSet
from goldenset.selectors import VersionIntegrityError, version_check_intact, version_get
from lib.errors import GoldsetError
from lib.formats import QREL_FORMATS, qrels_chunks


class Command(BaseCommand):
    help = (
        "Write the labels of a published version (the latest unless --version) as TREC qrels, "
        "JSON ({query_id: {doc_id: grade}}, loadable with ranx.Qrels.from_dict), BEIR TSV, CSV or JSON lines "
        '({"query_id", "doc_id", "grade"} a line). JSON and JSON lines carry the labels\' hops and evidence spans and the '
        'duplicate groups when the version has any (JSON then wraps the qrels: {"qrels": ..., "hops": ..., "spans": ...}). '
        'With --model-fill ID, write instead that variant of the version "with model labels" (human labels with a '
        "model's labels filling the pairs no person labelled; its id is on the version page): never the default. "
        'With --answers, write instead the version\'s reference answers as JSON lines ({"query_id", "answer", "aliases", '
        '"key_facts"}, what import_answers reads).'
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version (print Django's version) gives way to ours: the golden set version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--version", type=int, dest="number", help="version number (default: the latest)")
        parser.add_argument("--format", choices=QREL_FORMATS, default="trec", dest="fmt")
        parser.add_argument("--output", help="file to write (default, or -: standard output)")
        parser.add_argument(
            "--chunking",
            default="",
            help="project the labels onto this chunking of the corpus (chunk ids, the rule of SEMANTICS.md's chunk level): "
            "the qrels that score a run of it as Goldset's chunk level does",
        )
        parser.add_argument("--model-fill", type=int, metavar="ID", help="the version's variant with model labels to write instead")
        parser.add_argument("--answers", action="store_true", help="write the version's reference answers (JSON lines) instead")

    def handle(self, *args, slug, number, fmt, output, model_fill, chunking, answers, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            version = version_get(golden_set, number)
        except Http404 as exc:
            raise CommandError(f"{exc} (publish one with publish_version)") from exc
        fill = None
        try:
            of_chunking = chunking_named(golden_set.corpus_id, chunking)
            if sum((of_chunking is not None, model_fill is not None, answers)) > 1:
                raise CommandError("--chunking, --model-fill and --answers cannot be combined")
            if answers:
                chunks = version_answers_chunks(version)
            elif of_chunking is not None:
                version_check_intact(version)
                rows = version_chunk_label_rows(version, of_chunking)
                chunks = qrels_chunks(rows, fmt)
            elif model_fill is not None:
                fill = model_fill_get(version, model_fill)
                chunks = qrels_chunks(model_fill_rows(fill), fmt)
            else:
                chunks = version_export_chunks(version, fmt)
        except VersionIntegrityError as exc:
            raise CommandError(exc.message) from exc
        except GoldsetError as exc:
            raise CommandError(exc.message) from exc
        with output_text(output, sys.stdout) as handle:
            for chunk in chunks:
                handle.write(chunk)
        if output not in (None, "", STDIO):
            if answers:
                self.stderr.write(f"wrote {version.answer_count} reference answers of {slug} v{version.number} to {output}")
            elif of_chunking is not None:
                self.stderr.write(f"wrote {len(rows)} chunk labels of {slug} v{version.number} on chunking {of_chunking.name} to {output}")
            elif fill is not None:
                self.stderr.write(
                    f"wrote {fill.human_label_count + fill.model_label_count} labels of {slug} v{version.number} with model labels "
                    f"({fill.model_label_count} of them {fill.model}'s, {fill.model_share:.1%}; variant {fill.short_hash}) to {output}"
                )
            else:
                self.stderr.write(f"wrote {version.label_count} labels of {slug} v{version.number} ({version.short_hash}) to {output}")
