from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models.teams import Role
from goldenset.teams import team_get, team_grant, team_revoke
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = "Grant (or, with --revoke, take back) a role in every golden set of a team: team_role ORG/TEAM USERNAME ROLE."

    def add_arguments(self, parser):
        parser.add_argument("team", help="ORGANISATION/TEAM")
        parser.add_argument("username")
        parser.add_argument("role", choices=Role.values)
        parser.add_argument("--revoke", action="store_true", help="take the role back instead")

    def handle(self, *args, team, username, role, revoke, **options):
        user = user_by_name(username)
        try:
            found = team_get(team)
            if revoke:
                held = team_revoke(team=found, user=user, role=role)
                self.stdout.write(f"{username} is no longer {role} of {team}" if held else f"{username} was not {role} of {team}")
            else:
                team_grant(team=found, user=user, role=role)
                self.stdout.write(f"{username} is {role} of every set of {team}")
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
