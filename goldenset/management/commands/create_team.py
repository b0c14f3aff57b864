from django.core.management.base import BaseCommand, CommandError

from goldenset.models import Organisation
from goldenset.teams import team_create
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = "Make a team in an organisation: ORGANISATION/TEAM (an organisation's admin does the same on its page)."

    def add_arguments(self, parser):
        parser.add_argument("team", help="ORGANISATION/TEAM, e.g. acme/search")
        parser.add_argument("--name", default="", help="its display name (default: the slug)")

    def handle(self, *args, team, name, **options):
        organisation_slug, _, team_slug = team.rpartition("/")
        organisation = Organisation.objects.filter(slug=organisation_slug).first()
        if organisation is None:
            raise CommandError(f"no organisation {organisation_slug!r}: name the team ORGANISATION/TEAM")
        try:
            made = team_create(organisation=organisation, slug=team_slug, name=name or team_slug)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"team {organisation.slug}/{made.slug} made")
