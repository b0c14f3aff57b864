from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from goldenset.services import version_publish
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Publish the golden set's resolved labels and slice metadata as its next immutable version, "
        "and print the version's number and content hash. Refuses when nothing changed since the last version."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--note", default="", help="what changed, shown beside the version")
        parser.add_argument("--user", help="username recorded as the version's author")

    def handle(self, *args, slug, note, user, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            version = version_publish(golden_set=golden_set, user=user_by_name(user), note=note)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"published {slug} version {version.number}")
        self.stdout.write(f"content hash {version.content_hash}")
        self.stdout.write(
            f"{version.query_count} queries, {version.label_count} labels, {version.relevant_count} relevant "
            f"(grade >= {version.relevance_threshold}), {version.queries_without_relevant} queries without a relevant page"
        )
