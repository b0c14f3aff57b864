from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from goldenset.teams import golden_set_move, team_get
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Move a golden set into a team, with its corpus and every other set on that corpus (a corpus and its sets are "
        "one team's). Set-level roles stay; the team's roles apply from the next page."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--team", required=True, help="ORGANISATION/TEAM it moves to")
        parser.add_argument("--user", help="username recorded as the one who moved it")

    def handle(self, *args, slug, team, user, **options):
        golden_set = GoldenSet.objects.select_related("corpus").filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            moved = golden_set_move(golden_set=golden_set, team=team_get(team), by=user_by_name(user))
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"moved to {team}: {', '.join(one.slug for one in moved)}")
