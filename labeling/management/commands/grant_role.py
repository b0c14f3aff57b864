from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldenset.models import GoldenSet, Membership
from goldenset.services import membership_grant, membership_revoke
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Give a user a role in one golden set (or take it away with --revoke). Annotators judge pairs blind at "
        "/label/SLUG/; adjudicators settle disagreements and read results; managers do everything, including "
        "granting roles on the set's members page. Example: manage.py grant_role alice annotator --golden-set wiki-demo"
    )

    def add_arguments(self, parser):
        parser.add_argument("username", metavar="USER", help="username of an existing user")
        parser.add_argument("role", metavar="ROLE", help=f"one of {', '.join(Membership.Role.values)}")
        parser.add_argument("--golden-set", required=True, metavar="SLUG", dest="golden_set", help="slug of the golden set")
        parser.add_argument("--revoke", action="store_true", help="take the role away instead of granting it")

    def handle(self, *args, username, role, golden_set, revoke, **options):
        if role not in Membership.Role.values:
            raise CommandError(f"unknown role {role!r}; choose one of {', '.join(Membership.Role.values)}")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r} (create one with `manage.py createsuperuser` or in the admin)")
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            known = ", ".join(GoldenSet.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none yet"
            raise CommandError(f"no golden set {golden_set!r} (golden sets: {known})")
        try:
            if revoke:
                removed = membership_revoke(user=user, golden_set=found, role=role)
                if removed:
                    self.stdout.write(f"{username} is no longer {role} of {found.slug}")
                else:
                    self.stdout.write(f"{username} was not {role} of {found.slug}; nothing changed")
            else:
                membership_grant(user=user, golden_set=found, role=role)
                self.stdout.write(f"{username} is {role} of {found.slug}")
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
