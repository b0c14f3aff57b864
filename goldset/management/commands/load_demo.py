import os

from django.core.management.base import BaseCommand, CommandError

from evaluation.reports.unreliable import golden_set_unreliable_summary
from goldenset.management.progress import tqdm_progress
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.monitoring import DEMO_SEARCH_PORT, demo_search_url
from goldset.demo.oracle import demo_oracle_lines
from goldset.demo.services import DEMO_SLUG, DemoLoadResult, demo_load
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        f"Load the demo golden set '{DEMO_SLUG}' so there is something to look at: the internal wiki of a made-up "
        "company (about 3,000 generated pages in five languages, a burst of new runbooks in the last 30 days), about "
        "300 questions with graded labels, three published versions (imported spreadsheet, then two annotation "
        "rounds), four runs of two retrieval systems scored against every version, the demo search service's two "
        "endpoints with canaries and two weeks of nightly runs (the last nights with two stale shards), and demo users with fixed, printed passwords, for a laptop or a test instance only. "
        f"Safe to run again: when '{DEMO_SLUG}' exists it writes nothing and prints the logins."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--search-port",
            type=int,
            default=int(os.environ.get("DEMO_SEARCH_PORT") or DEMO_SEARCH_PORT),
            help=f"port of the demo search service its endpoints point at (default {DEMO_SEARCH_PORT}, or DEMO_SEARCH_PORT)",
        )
        parser.add_argument(
            "--seed",
            type=int,
            default=DEFAULT_SEED,
            help=f"seed of the generator (default {DEFAULT_SEED}); the same seed gives the same pages, labels and "
            "version hashes on every machine",
        )

        parser.add_argument(
            "--serving",
            action="store_true",
            help="the caller (make run) is starting the web app and the demo search service itself: say where "
            "to go and who to log in as instead of how to start them",
        )

    def handle(self, *args, seed, search_port, serving, verbosity, **options):
        try:
            result = demo_load(seed=seed, progress=tqdm_progress(verbosity), search_url=demo_search_url(search_port))
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
        for run in result.runs:
            self.stdout.write(
                f"  run {run.name!r} ({run.system}, {run.stage}): {run.query_count} queries" + (" (new)" if run in result.new_runs else "")
            )
        if result.monitoring is not None and result.monitoring.created:
            watched = result.monitoring
            self.stdout.write(
                f"  monitoring: endpoints {', '.join(e.name for e in watched.endpoints)} at {watched.endpoints[0].url.rsplit('/', 2)[0]}"
                + ("" if serving else " (serve it with `python manage.py serve_demo_search --stale-shards 2`)")
                + f", {len(watched.canaries)} canaries, "
                f"{watched.nights} nights of history, {watched.alerts} alerts (the last nights had two stale shards)"
            )
        self._oracle(result, serving=serving)
        if result.pool is not None:
            built = result.pool
            self.stdout.write(
                f"  pool {built.pool.pk}: {built.new_tasks} pairs to judge from the top {built.pool.depth} of "
                f"{len(built.runs)} first-stage runs (annotators judge them at /label/{result.golden_set.slug}/)"
            )
        self._completeness(result)
        self._logins(result, serving=serving)

    def _completeness(self, result: DemoLoadResult) -> None:
        # The demo labels a few pages a query, so no run of it passes the Judged@k floor:
        # said here once, as each page says it once, rather than discovered run by run.
        summary = golden_set_unreliable_summary(result.golden_set)
        if summary.every_run:
            self.stdout.write(
                f"  completeness: {summary.line}; the demo labels only a sample of each query's pages, "
                "so its pages say so once, above the runs (judging its pool lifts it)"
            )
        elif summary:
            self.stdout.write(f"  completeness: {summary.line} (the completeness page lists them)")

    def _oracle(self, result: DemoLoadResult, *, serving: bool) -> None:
        if result.oracle is not None and result.oracle.created:
            for line in demo_oracle_lines(result.oracle, serving=serving):
                self.stdout.write(f"  {line}")

    def _versions(self, result: DemoLoadResult) -> None:
        for version in result.versions:
            self.stdout.write(
                f"  v{version.number} {version.short_hash}: {version.query_count} queries, {version.label_count} labels, "
                f"{version.relevant_count} relevant, {version.queries_without_relevant} queries without a relevant page"
            )

    def _logins(self, result: DemoLoadResult, *, serving: bool) -> None:
        # `make run` serves on $PORT; the hint names the address it will really be on.
        base = f"http://127.0.0.1:{os.environ.get('PORT') or 8000}"
        self.stdout.write("")
        if serving:
            self.stdout.write(
                f"The app is starting: open {base}/ and log in as `manager` to see the results, runs and monitoring "
                f"of {DEMO_SLUG}, or as `annotator` to judge (Django admin: {base}/admin/, as `admin`)."
            )
        else:
            self.stdout.write(
                f"Start the web app with `python manage.py runserver`, then open {base}/sets/{DEMO_SLUG}/ (Django admin: {base}/admin/)."
            )
        self.stdout.write("Demo logins (fixed demo passwords: never load the demo on a shared or public server):")
        rows = [("username", "password", "role")]
        for login in result.logins:
            rows.append((login.username, login.password or f"({login.note})", login.description))
        widths = [max(len(row[column]) for row in rows) for column in range(2)]
        for username, password, role in rows:
            self.stdout.write(f"  {username.ljust(widths[0])}  {password.ljust(widths[1])}  {role}")
