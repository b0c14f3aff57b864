from django.core.management.base import BaseCommand, CommandError

from goldenset.duplicates import corpus_duplicates_group
from goldenset.management.progress import tqdm_progress
from goldenset.models import Corpus
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Group a corpus's duplicate documents again: exact duplicates (the same text, casefolded, whitespace "
        "collapsed) and near duplicates (MinHash over word shingles at or above the corpus's threshold). Each "
        "group's first document in natural doc_id order stands for it in judging, publish and scoring. Imports "
        "group on their own; run this after changing the threshold or the pages' texts."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, metavar="SLUG", help="slug of the corpus")
        parser.add_argument(
            "--threshold",
            type=float,
            help="near-duplicate threshold (0-1], saved as the corpus's (default: the corpus's own; 1.0 = exact only)",
        )

    def handle(self, *args, corpus, threshold, verbosity=1, **options):
        found = Corpus.objects.filter(slug=corpus).first()
        if found is None:
            raise CommandError(f"no corpus {corpus!r}")
        try:
            members = corpus_duplicates_group(corpus=found, threshold=threshold, progress=tqdm_progress(verbosity))
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{found.slug}: {members} document(s) are duplicates of another document "
            f"(threshold {found.duplicate_threshold:g}; groups' first members stand for them)"
        )
