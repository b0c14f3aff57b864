from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from goldenset.selectors import version_get
from goldenset.tags import TAG_RULE, tag_move
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Point a tag of the golden set (prod, candidate) at one of its versions, creating the tag if it is new, and "
        "record the move in the tag's history. The API and the client resolve the tag to that version's number and "
        f"hash at each request. Tag names: {TAG_RULE}."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # The contract is `--version N`; Django's own --version (its release) gives way.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("tag", help="the tag's name, e.g. prod")
        parser.add_argument("--version", dest="number", type=int, required=True, help="the version number the tag will name")
        parser.add_argument("--note", default="", help="why the tag moves, kept in its history")
        parser.add_argument("--user", help="username recorded as the one who moved it (a manager of the set)")

    def handle(self, *args, slug, tag, number, note, user, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        if not golden_set.versions.filter(number=number).exists():
            raise CommandError(f"golden set {slug!r} has no version {number}")
        mover = user_by_name(user)
        try:
            moved = tag_move(golden_set=golden_set, name=tag, version=version_get(golden_set, number), user=mover, note=note)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{slug} tag {moved.name} -> version {moved.version.number} ({moved.version.content_hash})")
