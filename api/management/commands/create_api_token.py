"""manage.py create_api_token USER --scope read|write [--golden-set SLUG] [--expires-in-days N]"""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api.models import ApiToken
from api.services import api_token_create
from goldenset.models import GoldenSet
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Make an API token for USER and print it. The token is shown this once and only its hash is kept: "
        "store it where the job that uses it reads its secrets. It never grants more than USER's roles: "
        "'read' exports labels and reads scores (manager or adjudicator of the set), 'write' also uploads "
        "runs, imports judgments and publishes versions (manager)."
    )

    def add_arguments(self, parser):
        parser.add_argument("user", help="username of the token's owner; the token acts with this person's roles")
        parser.add_argument("--scope", required=True, choices=ApiToken.Scope.values, help="read or write")
        parser.add_argument("--golden-set", metavar="SLUG", help="restrict the token to this golden set (default: every set USER may read)")
        parser.add_argument("--expires-in-days", type=int, metavar="N", help="the token stops working after N days (default: never)")
        parser.add_argument("--name", default="", help="what the token is for, shown in the token list")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user {options['user']!r}")
        golden_set = None
        if options["golden_set"]:
            golden_set = GoldenSet.objects.filter(slug=options["golden_set"]).first()
            if golden_set is None:
                raise CommandError(f"no golden set {options['golden_set']!r}")
        days = options["expires_in_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-in-days must be at least 1")
        try:
            token, secret = api_token_create(
                owner=user,
                scope=options["scope"],
                golden_set=golden_set,
                name=options["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        reach = f"golden set {golden_set.slug}" if golden_set else "every golden set the owner may read"
        expiry = f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "never expires"
        self.stderr.write(f"{token.scope} token {token.prefix}… for {user.get_username()}, {reach}, {expiry}. Shown once:")
        self.stdout.write(secret)
