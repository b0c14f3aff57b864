import argparse
import json
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from answers.experiments import oracle_experiment_run, oracle_experiment_submit
from answers.models import AnswerJudge, Generator
from answers.report import experiment_report, report_json, report_lines
from answers.sweep import experiment_sweep, sweep_lines
from evaluation.models import Run
from evaluation.reports.targets import FINAL_TARGET
from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from monitoring.models import Endpoint


def _depths(text: str) -> list[int]:
    """--k-sweep's "1,2,4,8": whole numbers, comma-separated (their range is the service's check)."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not whole numbers separated by commas, like 1,2,4,8") from None


class Command(BaseCommand):
    help = (
        "Run the oracle experiment of a golden set: each query (or a seeded sample) answered by a generator "
        "with the version's relevant pages (oracle context), with the run's top k_final (retrieved context) "
        "and, with --closed-book, with none; graded against the version's reference answers by exact match "
        "and token F1 (and by an answer judge with --judge). Prints the table: accuracy per context, "
        "retrieval loss (oracle - retrieved), generation loss (1 - oracle) and the seed's decision table. "
        "Runs here, in this process, on the same runner a worker uses; a budget that runs out stops it, "
        "kept and resumable."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version (print Django's version) gives way to ours: the golden set version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    @staticmethod
    def _latest_night(golden_set: GoldenSet, name: str) -> str:
        """The name of `name`'s latest night: the run of its series measured last."""
        found = Endpoint.objects.filter(golden_set=golden_set, name=name).select_related("series").first()
        if found is None:
            raise CommandError(f"--endpoint: golden set {golden_set.slug!r} has no endpoint {name!r}")
        night = Run.objects.filter(series=found.series, measured_at__isnull=False).order_by("-measured_at", "-pk").first()
        if night is None:
            raise CommandError(f"--endpoint: endpoint {name!r} has no night yet: run one (nightly_run) or name a --run")
        return night.name

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--run", metavar="NAME", help="the run whose top k_final is the retrieved context")
        which.add_argument("--endpoint", metavar="NAME", help="or a live endpoint: its latest night is the run")
        parser.add_argument("--generator", required=True, metavar="NAME", help="the generator (see generator_add)")
        parser.add_argument("--judge", metavar="NAME", help="an answer judge to grade the answers too")
        parser.add_argument("--sample", type=int, metavar="N", help="answer N queries drawn at random (default: all)")
        parser.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed (default 0: the same draw each time)")
        parser.add_argument("--closed-book", action="store_true", help="answer also with no context")
        parser.add_argument("--version", type=int, dest="number", metavar="N", help="the version's number (default: the latest)")
        parser.add_argument(
            "--k-final", type=int, dest="k_final", metavar="K", help="pages in each context (default: the version's k_final)"
        )
        parser.add_argument(
            "--k-sweep",
            type=_depths,
            dest="k_sweep",
            metavar="K,K,...",
            help="a sweep job: answer the retrieved context also at each of these k (the oracle and closed-book contexts once)",
        )
        parser.add_argument(
            "--context-budget",
            type=int,
            dest="context_token_budget",
            metavar="TOKENS",
            help="tokens a context may hold (default: the set's)",
        )
        parser.add_argument("--budget", metavar="DOLLARS", help="stop before spending more than this at the generator's prices")
        parser.add_argument("--max-requests", type=int, metavar="N", help="stop before sending more than N requests")
        parser.add_argument("--format", choices=["table", "json"], default="table", help="table (default) or json")
        parser.add_argument("--user", help="username recorded as the experiment's creator")

    def handle(
        self,
        *args,
        golden_set,
        run,
        endpoint,
        generator,
        judge,
        sample,
        seed,
        closed_book,
        number,
        budget,
        max_requests,
        format,
        user,
        k_final,
        context_token_budget,
        k_sweep,
        **options,
    ):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        versions = found.versions.all()
        chosen = versions.filter(number=number).first() if number is not None else found.latest_version()
        if chosen is None:
            raise CommandError(
                f"golden set {found.slug!r} has no version {number}"
                if number is not None
                else f"golden set {found.slug!r} has no version: publish one first"
            )
        if endpoint is not None:
            run = self._latest_night(found, endpoint)
        names = {
            "run": (Run.objects.filter(golden_set=found, name=run).first(), run),
            "generator": (Generator.objects.filter(golden_set=found, name=generator).first(), generator),
        }
        if judge is not None:
            names["judge"] = (AnswerJudge.objects.filter(golden_set=found, name=judge).first(), judge)
        missing = [f"--{what}: golden set {found.slug!r} has no {what} {name!r}" for what, (row, name) in names.items() if row is None]
        if missing:
            raise CommandError("\n".join(missing))
        try:
            dollars = Decimal(budget) if budget is not None else None
        except InvalidOperation:
            raise CommandError(f"--budget: {budget!r} is not a number of dollars") from None
        try:
            experiment = oracle_experiment_submit(
                golden_set=found,
                version=chosen,
                run=names["run"][0],
                generator=names["generator"][0],
                judge=names["judge"][0] if judge is not None else None,
                closed_book=closed_book,
                sample_size=sample,
                seed=seed,
                budget_dollars=dollars,
                k_final=k_final,
                context_token_budget=context_token_budget,
                k_sweep=k_sweep,
                max_requests=max_requests,
                user=user_by_name(user),
                send=None,
            )
        except GoldsetError as exc:
            raise CommandError("\n".join([exc.message, *exc.problems])) from exc

        def progress(current):
            if options["verbosity"] >= 1:
                self.stderr.write(f"  {current.answers_done} of {current.answers_total} answered, {current.grades_done} graded")

        experiment = oracle_experiment_run(experiment.pk, on_block=progress)
        report = experiment_report(experiment)
        swept = experiment_sweep(experiment) if experiment.k_sweep else None
        if format == "json":
            data = report_json(experiment, report)
            if swept is not None:
                data["sweep"] = swept
            self.stdout.write(json.dumps(data, indent=2))
        else:
            for line in report_lines(experiment, report):
                self.stdout.write(line)
            if swept is not None:
                self.stdout.write("")
                self.stdout.write("the retrieved context at each k (the depth-and-cost sweep):")
                for line in sweep_lines(swept, FINAL_TARGET):
                    self.stdout.write(line)
        if experiment.status == experiment.Status.FAILED:
            raise CommandError(experiment.error)
