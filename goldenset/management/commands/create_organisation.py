from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from goldenset.management.progress import user_by_name
from goldenset.teams import organisation_create, organisation_member_set
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Make an organisation, and make --admin (an existing user) its admin: they manage its teams and members on "
        "/orgs/SLUG/ and are a manager of every set of its teams, without being a Django superuser."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the organisation's slug, e.g. acme")
        parser.add_argument("--name", default="", help="its display name (default: the slug)")
        parser.add_argument("--admin", action="append", default=[], help="username of an admin (repeat for several)")

    def handle(self, *args, slug, name, admin, **options):
        try:
            with transaction.atomic():
                organisation = organisation_create(slug=slug, name=name or slug)
                for username in admin:
                    organisation_member_set(organisation=organisation, user=user_by_name(username), role="admin")
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        admins = f", admins {', '.join(admin)}" if admin else ""
        self.stdout.write(f"organisation {organisation.slug} made{admins}")
