from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Run
from evaluation.services import run_archive, run_unarchive
from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Archive a run of a golden set: it keeps its entries and every score, but leaves the results leaderboard, "
        "the alerts, the coverage page's flags, the pool forms and the default run lists (the runs page's "
        "'show archived' link and the API's ?archived=true show it). --undo brings it back everywhere."
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument("name", metavar="NAME", help="the run's name in the set")
        parser.add_argument("--undo", action="store_true", help="unarchive the run instead")
        parser.add_argument("--user", help="username recorded as the one who archived it")

    def handle(self, *args, golden_set, name, undo, user, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        run = Run.objects.filter(golden_set=found, name=name).first()
        if run is None:
            raise CommandError(f"golden set {golden_set!r} has no run named {name!r}")
        try:
            (run_unarchive if undo else run_archive)(run=run, user=user_by_name(user))
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"run {name!r} of {golden_set} {'unarchived' if undo else 'archived'}")
