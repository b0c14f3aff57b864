import os

from django.core.management.base import BaseCommand, CommandError

from evaluation.demo import demo_runs_load
from evaluation.models import Run
from goldenset.demo import DEFAULT_SEED, DEMO_SLUG, DemoLoadResult, demo_load
from goldenset.models import GoldenSet
from goldenset.management.progress import tqdm_progress
from labeling.models import Pool
from labeling.pools.services import pool_build
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        f"Load the demo golden set '{DEMO_SLUG}' so there is something to look at: the internal wiki of a made-up "
        "company (about 3,000 generated pages in five languages, a burst of new runbooks in the last 30 days), about "
        "300 questions with graded labels, three published versions (imported spreadsheet, then two annotation "
        "rounds), four runs of two retrieval systems scored against every version, and demo users with fixed, printed passwords, for a laptop or a test instance only. "
        f"Safe to run again: when '{DEMO_SLUG}' exists it writes nothing and prints the logins."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--seed", type=int, default=DEFAULT_SEED,
            help=f"seed of the generator (default {DEFAULT_SEED}); the same seed gives the same pages, labels and "
                 "version hashes on every machine",
        )

    def handle(self, *args, seed, verbosity, **options):
        try:
            result = demo_load(seed=seed, progress=tqdm_progress(verbosity))
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        if result.created:
            self.stdout.write(
                f"loaded {DEMO_SLUG}: {result.pages} pages, {result.queries} queries, "
                f"{result.human_judgments} human judgments, {len(result.versions)} versions (seed {seed})"
            )
        else:
            ignored = f" (--seed {seed} applies to a first load only)" if seed != DEFAULT_SEED else ""
            self.stdout.write(f"{DEMO_SLUG} is already loaded; nothing written{ignored}.")
        self._versions(result)
        golden_set = GoldenSet.objects.get(slug=DEMO_SLUG)
        created = demo_runs_load(golden_set=golden_set, seed=seed, progress=tqdm_progress(verbosity))
        for run in Run.objects.filter(golden_set=golden_set).order_by("id"):
            self.stdout.write(f"  run {run.name!r} ({run.system}, {run.stage}): {run.query_count} queries"
                              + (" (new)" if run in created else ""))
        self._pool(golden_set, verbosity)
        self._logins(result)

    # Shallow, so the demo's annotators find a few hundred pairs to judge at /label/, not thousands.
    DEMO_POOL_DEPTH = 3

    def _pool(self, golden_set: GoldenSet, verbosity: int) -> None:
        """A pool of the first-stage runs, once, so that the demo annotators have pairs to judge."""
        if Pool.objects.filter(golden_set=golden_set).exists():
            return
        runs = list(Run.objects.filter(golden_set=golden_set, stage=Run.Stage.FIRST_STAGE).order_by("id"))
        if not runs:
            return
        built = pool_build(
            golden_set=golden_set, runs=runs, depth=self.DEMO_POOL_DEPTH, strategy="depth", progress=tqdm_progress(verbosity),
        )
        self.stdout.write(
            f"  pool {built.pool.pk}: {built.new_tasks} pairs to judge from the top {self.DEMO_POOL_DEPTH} of "
            f"{len(runs)} first-stage runs (annotators judge them at /label/{golden_set.slug}/)"
        )

    def _versions(self, result: DemoLoadResult) -> None:
        for version in result.versions:
            self.stdout.write(
                f"  v{version.number} {version.short_hash}: {version.query_count} queries, {version.label_count} labels, "
                f"{version.relevant_count} relevant, {version.queries_without_relevant} queries without a relevant page"
            )

    def _logins(self, result: DemoLoadResult) -> None:
        # `make run` serves on $PORT; the hint names the address it will really be on.
        base = f"http://127.0.0.1:{os.environ.get('PORT') or 8000}"
        self.stdout.write("")
        self.stdout.write(
            f"Start the web app with `python manage.py runserver`, then open {base}/sets/{DEMO_SLUG}/ "
            f"(Django admin: {base}/admin/)."
        )
        self.stdout.write("Demo logins (fixed demo passwords: never load the demo on a shared or public server):")
        rows = [("username", "password", "role")]
        for login in result.logins:
            rows.append((login.username, login.password or f"({login.note})", login.description))
        widths = [max(len(row[column]) for row in rows) for column in range(2)]
        for username, password, role in rows:
            self.stdout.write(f"  {username.ljust(widths[0])}  {password.ljust(widths[1])}  {role}")
