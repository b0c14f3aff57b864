from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.models import GoldenSet
from labeling.completeness.services import completeness_sample_draw
from labeling.models import Pool
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Draw a completeness sample for a pool: N (query, page) pairs taken uniformly at random from the pairs the pool's "
        "runs rank just below the pool depth (from depth + 1 down to --depth-to, by default the set's k_first) that nobody "
        "has judged and that are neither judging tasks nor pairs of a pool yet. They become judging tasks in the annotators' queue, spread "
        "among the pool's; once judged, the completeness page estimates from them how many relevant pages nobody "
        "judged, with a 95% confidence interval. --seed draws the same pairs again. All or nothing. "
        "Example: manage.py draw_sample wiki-demo --pool 3 --size 200"
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument(
            "--pool", type=int, required=True, metavar="POOL_ID", help="the pool to sample below (see the completeness page)"
        )
        parser.add_argument("--size", type=int, required=True, metavar="N", help="pairs to draw")
        parser.add_argument("--depth-to", type=int, metavar="K", help="deepest rank sampled (default: the set's k_first)")
        parser.add_argument("--seed", type=int, help="seed of the random draw (default: a random one, printed)")
        parser.add_argument("--user", help="username recorded as the sample's creator")

    def handle(self, *args, golden_set, pool, size, depth_to, seed, user, verbosity, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        chosen = Pool.objects.filter(pk=pool, golden_set=found).select_related("golden_set").first()
        if chosen is None:
            raise CommandError(f"golden set {golden_set!r} has no pool {pool}")
        try:
            result = completeness_sample_draw(
                pool=chosen,
                size=size,
                depth_to=depth_to,
                seed=seed,
                user=user_by_name(user),
                progress=tqdm_progress(verbosity),
            )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in result.lines():
            self.stdout.write(line)
