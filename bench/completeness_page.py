"""Speed of the completeness page and of a completeness sample draw on a pool of millions
of pairs, PostgreSQL.

    .venv/bin/python bench/completeness_page.py [--queries 20000 --runs 10 --run-depth 100
        --pool-depth 50 --candidates 300 --done-share 0.1 --sample 1000] [--rounds 5]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_completeness] [--profile]

Creates the database named by --database-url (it must not exist beforehand; it is
dropped at the end, even when a step fails), generates a golden set and its runs with
bench.data.golden_set_with_runs, as bench/pool_build.py does (runs ranking `run-depth`
pages a query), builds a pool of all the runs at `pool-depth`, marks `done-share` of its
pairs judged (done tasks with a grade and a done_at spread over the last three days,
written by bench.data.pool_judged_earlier: the page reads only those columns), then
times, untimed setup apart:

- completeness_sample_draw: `sample` pairs from the ranks pool-depth + 1 .. run-depth of
  every run (reads all the runs, the set's pairs, tasks and judgments, writes the sample);
- the page, GET /sets/<slug>/completeness/ as a staff user, rendered: median of
  `rounds`, with its SQL query count; and its three reads that touch tasks, alone:
  pools_judging (counts and pace), pools_found_curves (the chart) and
  completeness_estimates (half the sample judged).
"""

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.data import golden_set_with_runs, pool_judged_earlier  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402

SLUG = "bench-completeness"


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def pool_partly_judged(pool, *, done_share: float, sample: int, depth_to: int, user, profiler=None) -> dict:
    """A pool part-way through judging, as the completeness page sees one: `done_share` of its
    pairs marked judged (done_at spread over the last three days), a completeness sample of
    `sample` pairs drawn from the ranks below the pool's depth down to `depth_to` (timed),
    half of it judged. Planner statistics gathered. Returns {"done": pairs marked judged,
    "draw": SampleDrawResult, "draw_seconds": seconds of the draw, "judged": sample pairs
    judged}. `profiler` (a cProfile.Profile) watches the draw alone. bench/growth.py builds
    the same for its page figures."""
    from django.db import connection

    from goldenset.models import Judgment
    from labeling.completeness.services import completeness_sample_draw
    from labeling.models import JudgingTask

    # Grades 0-3, done_at spread over the last 72 hours.
    done = pool_judged_earlier(pool, done_share, spread_seconds=259200)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE labeling_judgingtask")
    print("drawing a sample ...", file=sys.stderr)
    if profiler:
        profiler.enable()
    draw, draw_seconds = timed(completeness_sample_draw, pool=pool, size=sample, depth_to=depth_to, seed=1, user=user)
    if profiler:
        profiler.disable()
    judged = list(JudgingTask.objects.filter(sample=draw.sample).order_by("id").values_list("query_id", "page_id")[: sample // 2])
    rng = np.random.default_rng(2)
    Judgment.objects.bulk_create(
        [Judgment(query_id=q, page_id=p, grade=int(rng.integers(0, 2)), annotator=user, source=Judgment.Source.HUMAN) for q, p in judged]
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return {"done": done, "draw": draw, "draw_seconds": draw_seconds, "judged": len(judged)}


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse
    from django.utils import timezone

    from evaluation.models import Run
    from goldenset.models import GoldenSet
    from labeling.completeness.selectors import completeness_estimates, pools_found_curves, pools_judging
    from labeling.pools.selectors import pools_of
    from labeling.pools.services import pool_build

    with scratch_database(args.database_url):
        call_command("migrate", verbosity=0)
        print("generating ...", file=sys.stderr)
        data = golden_set_with_runs(
            slug=SLUG,
            queries=args.queries,
            runs=args.runs,
            depth=args.run_depth,
            pages=args.pages,
            candidates=args.candidates,
            noise=args.noise,
            judgments=args.judgments,
            seed=args.seed,
        )
        golden_set = GoldenSet.objects.get(slug=SLUG)
        staff = get_user_model().objects.create_user("bench", password="bench", is_staff=True)
        runs = list(Run.objects.filter(golden_set=golden_set).order_by("name"))
        print("building the pool ...", file=sys.stderr)
        result, build_seconds = timed(pool_build, golden_set=golden_set, runs=runs, depth=args.pool_depth, strategy="depth")
        pool = result.pool
        print("judging a share of it ...", file=sys.stderr)
        profiler = cProfile.Profile() if args.profile else None
        judging = pool_partly_judged(
            pool,
            done_share=args.done_share,
            sample=args.sample,
            depth_to=args.run_depth,
            user=staff,
            profiler=profiler,
        )
        done, draw_seconds, judged = judging["done"], judging["draw_seconds"], judging["judged"]
        sample = judging["draw"].sample
        server = server_version()

        client = Client()
        client.force_login(staff)
        url = reverse("completeness", kwargs={"slug": SLUG})
        client.get(url)  # warm: imports, template compilation
        page_times, queries = [], 0
        for _ in range(args.rounds):
            with CaptureQueriesContext(connection) as captured:
                response, seconds = timed(client.get, url)
            assert response.status_code == 200, response.status_code
            page_times.append(seconds)
            queries = len(captured)
        pools = list(pools_of(golden_set))
        now = timezone.now()
        parts = {
            "pools_judging (counts and pace)": statistics.median(timed(pools_judging, pools, now=now)[1] for _ in range(args.rounds)),
            "pools_found_curves (the chart)": statistics.median(timed(pools_found_curves, pools)[1] for _ in range(args.rounds)),
            "completeness_estimates (the sample)": statistics.median(
                timed(completeness_estimates, [sample])[1] for _ in range(args.rounds)
            ),
        }
        curves = pools_found_curves(pools)

    print()
    print("completeness page and sample draw, PostgreSQL, same run")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, PostgreSQL {server}")
    print(
        f"data: {args.runs} runs x {args.queries:,} queries x depth {args.run_depth} "
        f"({args.candidates} candidate pages a query, corpus {args.pages:,} pages, {data['judgments']:,} imported judgments)"
    )
    print(
        f"pool: depth {args.pool_depth}, {pool.pair_count:,} pairs (built in {build_seconds:.1f}s, untimed), "
        f"{done:,} marked judged ({args.done_share:.0%})"
    )
    print(
        f"sample: {args.sample:,} of a population of {sample.population:,} pairs at ranks {args.pool_depth + 1}..{args.run_depth}, "
        f"{judged:,} of them judged"
    )
    print()
    print(f"{'step':<44}{'seconds':>9}")
    print("-" * 53)
    print(f"{'completeness_sample_draw':<44}{draw_seconds:>8.2f}s")
    print(
        f"{'GET the completeness page (median of ' + str(args.rounds) + ')':<44}{statistics.median(page_times):>8.2f}s   {queries} SQL queries"
    )
    for name, seconds in parts.items():
        print(f"{'  ' + name:<44}{seconds:>8.2f}s")
    print()
    print(f"chart points sent for the pool: {len(curves.get(pool.pk, []))} (of {done:,} judgments)")
    if profiler:
        print("\ncProfile of completeness_sample_draw (it ran slower under it), top 20 by cumulative time:")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--run-depth", type=int, default=100, help="pages each run ranks per query")
    parser.add_argument("--pool-depth", type=int, default=50)
    parser.add_argument("--pages", type=int, default=200_000, help="corpus size")
    parser.add_argument("--candidates", type=int, default=300, help="pages a query's runs draw their top from")
    parser.add_argument("--noise", type=float, default=1.0, help="how much the runs disagree (Gumbel scale)")
    parser.add_argument("--judgments", type=int, default=50_000, help="imported judgments")
    parser.add_argument("--done-share", type=float, default=0.1, help="share of the pool's tasks marked judged")
    parser.add_argument("--sample", type=int, default=1000, help="completeness sample size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20240601)
    database_url_argument(parser, "goldset_bench_completeness")
    parser.add_argument("--profile", action="store_true", help="also print cProfile statistics of the sample draw")
    args = parser.parse_args()
    if args.run_depth <= args.pool_depth:
        parser.error("--run-depth must be deeper than --pool-depth: the sample is drawn between them")
    if not 0 < args.done_share <= 1:
        parser.error("--done-share must be in (0, 1]")
    run(args)


if __name__ == "__main__":
    main()
