from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from traffic import designs
from traffic.models import QueryDraw
from traffic.sampling import TRAFFIC, draw_queries, draw_top_up


class Command(BaseCommand):
    help = (
        "Draw golden-set queries from one of the set's query logs with known weights: each drawn query keeps "
        "the probability the design gave it to be drawn (its inclusion probability) and its stratum, so scores "
        "can be weighted back to the traffic. A drawn query whose text the set already holds is marked drawn, "
        "not added twice. The same arguments on the same log draw the same queries. "
        "With --top-up STRATUM, draw more queries of that stratum of the latest draw (--to N queries, or "
        "--to-detect POINTS: as many as a drop of that many points needs to be detected)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--from-log", required=True, dest="log", help="name of the set's query log to draw from")
        parser.add_argument("--size", type=int, help="distinct queries to draw")
        parser.add_argument(
            "--design",
            choices=QueryDraw.Design.values,
            help="srs: simple random; stratified: a simple random sample in each stratum; pps: probability proportional to traffic",
        )
        parser.add_argument("--strata", default="", help=f"stratified only: a slice field of the log, or {TRAFFIC!r} for head/torso/tail")
        parser.add_argument(
            "--allocation",
            choices=designs.ALLOCATIONS,
            default=designs.BY_QUERIES,
            help="stratified only: split the size in proportion to each stratum's queries (default) or its events",
        )
        parser.add_argument("--seed", type=int, required=True, help="seed of the random draw (a non-negative integer)")
        parser.add_argument("--top-up", dest="top_up", help="a stratum of the latest draw to draw more queries of")
        parser.add_argument("--to", type=int, help="with --top-up: the drawn queries the stratum should hold")
        parser.add_argument("--to-detect", type=float, dest="to_detect", help="with --top-up: a drop in points the stratum should detect")
        parser.add_argument("--user", help="username recorded as the draw's author")

    def handle(self, *args, slug, log, size, design, strata, allocation, seed, top_up, to, to_detect, user, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        author = user_by_name(user)
        try:
            if top_up is not None:
                draw = draw_top_up(golden_set=golden_set, log_name=log, stratum=top_up, seed=seed, to=to, to_detect=to_detect, user=author)
            else:
                if size is None or design is None:
                    raise CommandError("--size and --design are needed (or --top-up STRATUM with --to or --to-detect)")
                draw = draw_queries(
                    golden_set=golden_set,
                    log_name=log,
                    size=size,
                    design=design,
                    seed=seed,
                    strata_field=strata,
                    allocation=allocation,
                    user=author,
                )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"drew {draw.size} queries from log {log!r} ({draw.get_design_display()}, seed {seed}): "
            f"{draw.added_count} added, {draw.marked_count} already in the set marked drawn"
        )
        for stratum, row in draw.strata.items():
            name = stratum or "all"
            self.stdout.write(f"  {name}: {row['drawn']} of {row['population']} queries ({row['events']} events)")
