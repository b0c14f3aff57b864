import argparse
import time
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.search import K_FINAL, SHARD_COUNT, DemoSearch, default_reference_date
from goldset.demo.search_server import DemoSearchServer, demo_search_serve


class Command(BaseCommand):
    help = (
        "Serve a real search engine over the demo wiki (the pages of `load_demo`, generated in memory: no database "
        f"needed) on Goldset's live-endpoint JSON contract: BM25 over {SHARD_COUNT} shards for the first stage "
        f"(top 100) and a reranker (top {K_FINAL}). With --stale-shards 2 it replays the seed's incident: two shards "
        "were not refreshed after the last 30 days' pages were indexed, so most new runbooks cannot be found. "
        'POST /admin/shards {"stale": 0} refreshes them while it runs. It is also the demo\'s generator: an '
        "OpenAI-compatible chat API at /v1 that answers from the context it is given with an extractive rule (the "
        "sentence sharing most words with the question). Serves until interrupted (Ctrl-C)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0 picks a free one)")
        parser.add_argument(
            "--stale-shards",
            type=int,
            default=0,
            help=f"how many of the {SHARD_COUNT} shards answer from their snapshot without the new pages (default 0)",
        )
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the demo generator (default {DEFAULT_SEED})")
        parser.add_argument(
            "--reference-date",
            type=_date,
            help="the day the demo was loaded on, YYYY-MM-DD (default today, as load_demo does): the pages' dates are "
            "moved to it; which pages are new (the last 30 days) is the same whatever the day",
        )

    def handle(self, *args, host, port, stale_shards, seed, reference_date, verbosity, **options):
        if not 0 <= stale_shards <= SHARD_COUNT:
            raise CommandError(f"--stale-shards must be from 0 to {SHARD_COUNT}, not {stale_shards}")
        started = time.monotonic()
        search = DemoSearch(seed=seed, stale_shards=stale_shards, reference_date=reference_date or default_reference_date())
        try:
            server = DemoSearchServer((host, port), search, verbose=verbosity > 1)
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from exc
        base = server.base_url
        self.stdout.write(
            f"demo search: {search.index_size} pages searchable on {SHARD_COUNT} shards, {stale_shards} stale "
            f"(shards {search.stale_shard_numbers or 'none'}); new pages published after {search.new_since:%Y-%m-%d}; "
            f"built in {time.monotonic() - started:.1f}s"
        )
        for method, path in [
            ("POST", "/first-stage/search"),
            ("POST", "/reranked/search"),
            ("GET", "/count"),
            ("GET", "/healthz"),
            ("GET", "/admin/shards"),
            ("POST", "/admin/shards"),
            ("POST", "/v1/chat/completions"),
        ]:
            self.stdout.write(f"  {method:4} {base}{path}")
        self.stdout.write("Serving until interrupted (Ctrl-C).")
        self.stdout.flush()
        demo_search_serve(server, out=self.stdout)


def _date(value: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {value}") from None
