from django.core.management.base import BaseCommand, CommandError

from evaluation.canaries import canary_add
from goldenset.models import GoldenSet, Page, Query
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Mark a page as a canary of a query: a page the query must find in every run's top k_first and in "
        "every canary probe of the set's first-stage endpoints (the newest runbook, say). A miss raises an alert."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--query", required=True, help="the query id")
        parser.add_argument("--page", required=True, help="the doc id of the page it must find")
        parser.add_argument("--note", default="", help="why this page must be found, e.g. 'runbook published 2026-11-20'")

    def handle(self, *args, slug, query, page, note, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        found_query = Query.objects.filter(golden_set=golden_set, query_id=query).first()
        if found_query is None:
            raise CommandError(f"golden set {slug!r} has no query {query!r}")
        found_page = Page.objects.filter(corpus_id=golden_set.corpus_id, doc_id=page).first()
        if found_page is None:
            raise CommandError(f"the corpus of {slug!r} has no page {page!r}")
        try:
            canary = canary_add(golden_set=golden_set, query=found_query, page=found_page, note=note)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"canary {canary.pk}: page {page} for query {query} in {slug}")
