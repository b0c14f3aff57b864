from django.core.management.base import BaseCommand, CommandError

from answers.endpoint_depth import endpoint_depth_run, endpoint_depth_submit
from answers.sweep import run_sweep_report
from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from monitoring.models import Endpoint


class Command(BaseCommand):
    help = (
        "Ask a live endpoint every query of the latest version once, at a depth K of your choosing, and store the "
        "answers as a one-off run (not a night of its series) named '<endpoint> depth K <date>'; then print its "
        "depth-and-cost sweep to K: recall@k, input tokens a query and dollars a month, the knee and the cheapest k "
        "meeting the target. The endpoint's in-flight and rate bounds hold; it is refused while a night is asking it."
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument("--endpoint", required=True, metavar="NAME", help="the endpoint (see endpoint_add)")
        parser.add_argument("--depth", required=True, type=int, metavar="K", help="pages to ask for, up to the version's k_first")
        parser.add_argument("--user", help="username recorded as the ask's creator")

    def handle(self, *args, golden_set, endpoint, depth, user, **options):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        chosen = Endpoint.objects.filter(golden_set=found, name=endpoint).first()
        if chosen is None:
            raise CommandError(f"--endpoint: golden set {found.slug!r} has no endpoint {endpoint!r}")
        try:
            job = endpoint_depth_submit(golden_set=found, endpoint=chosen, depth=depth, user=user_by_name(user), send=None)
        except GoldsetError as exc:
            raise CommandError("\n".join([exc.message, *exc.problems])) from exc
        job = endpoint_depth_run(job.pk)
        if job.status != job.Status.DONE:
            raise CommandError(job.error or f"the ask is {job.status}")
        self.stdout.write(f"{job.run.name}: {job.queries_done} queries asked at depth {job.depth}, {job.failed_count} failed")
        sweep = run_sweep_report(found, job.run, job.version).sweep
        if sweep.note:
            self.stdout.write(sweep.note)
        cheapest, knee = sweep.cheapest_meeting_target, sweep.knee
        self.stdout.write(f"{'k':>4} {'recall@k':>9} {'tokens':>7} {'$ a month':>12}")
        for point in sweep.points:
            marks = [
                m
                for m, p in (("k_final", sweep.at(sweep.k_final)), ("knee", knee), (f"cheapest ≥ {sweep.target:.2f}", cheapest))
                if p and p.k == point.k
            ]
            self.stdout.write(
                f"{point.k:>4} {point.recall:>9.3f} {point.tokens:>7} {point.monthly_dollars:>12,.0f}  {', '.join(marks)}".rstrip()
            )
