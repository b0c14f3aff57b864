from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import tqdm_progress, user_by_name
from goldenset.models import GoldenSet
from labeling.models import Pool
from labeling.pools import strategies
from labeling.pools.services import pool_build, pool_extend, runs_by_name
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Build a judging pool for a golden set: for every query, the union of the top K pages of the runs you name, "
        "minus pairs that already have a judgment or are already in a pool of the set, becomes the annotators' work; "
        "each query's next pairs in the judging order are queued as judging tasks as judging goes on. "
        "Pages a run names that are not in the corpus cannot be judged and are skipped (and counted). "
        "--strategy sets the judging order: depth (rank 1 of every run, then rank 2, ...), mtf (move-to-front: "
        "keep judging down a run while it finds relevant pages), bandit (judge more from the runs whose pages "
        "keep being relevant) or model_first (uses model labels: the pairs the model named by --model grades highest "
        "first, then the pairs it did not label in depth order; --prompt-hash picks its prompt when it has several). Queries take turns whatever the strategy. --budget caps how many pairs are judged; "
        "what it leaves out is reported. With --extend POOL_ID the runs are added to an existing pool instead: "
        "only their new pairs join it. All or nothing. "
        "Example: manage.py build_pool wiki-demo --runs 'bm25 first stage' 'hybrid-2026-11 first stage' --depth 20 "
        "--strategy bandit --budget 2000"
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument("--runs", nargs="+", required=True, metavar="NAME", help="names of the runs to pool (see the set's runs page)")
        parser.add_argument(
            "--depth", type=int, metavar="K", help="pages taken from the top of each run, per query (required for a new pool)"
        )
        parser.add_argument("--strategy", choices=list(strategies.STRATEGIES), help="judging order of a new pool (default: depth)")
        parser.add_argument("--budget", type=int, metavar="N", help="most pairs to judge in this pool (default: no cap)")
        parser.add_argument("--model", metavar="NAME", help="model_first only: the model whose labels order the queue")
        parser.add_argument(
            "--prompt-hash", metavar="SHA256", help="model_first only: the model's prompt, when it labelled the set with several"
        )
        parser.add_argument("--extend", type=int, metavar="POOL_ID", help="add the runs to this pool instead of building a new one")
        parser.add_argument("--user", help="username recorded as the pool's creator")

    def handle(self, *args, golden_set, runs, depth, strategy, budget, extend, user, verbosity, model, prompt_hash, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        progress = tqdm_progress(verbosity)
        try:
            chosen = runs_by_name(golden_set=found, names=runs)
            if extend is not None:
                pool = Pool.objects.filter(pk=extend, golden_set=found).select_related("golden_set").first()
                if pool is None:
                    raise CommandError(f"golden set {golden_set!r} has no pool {extend}")
                if budget is not None or strategy is not None or model is not None or prompt_hash is not None:
                    raise CommandError(
                        f"--strategy, --budget, --model and --prompt-hash are set when a pool is built; pool {extend} keeps its own"
                    )
                result = pool_extend(pool=pool, runs=chosen, depth=depth, progress=progress)
            else:
                if depth is None:
                    raise CommandError("--depth is required for a new pool")
                result = pool_build(
                    golden_set=found,
                    runs=chosen,
                    depth=depth,
                    strategy=strategy or "depth",
                    budget=budget,
                    user=user_by_name(user),
                    progress=progress,
                    model=model,
                    prompt_hash=prompt_hash,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        for line in result.lines():
            self.stdout.write(line)
