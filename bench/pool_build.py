"""Speed of pool_build against a plain numpy union of the same runs, PostgreSQL, same run.

    .venv/bin/python bench/pool_build.py [--queries 10000 --runs 20 --depth 100 --pages 100000
        --candidates 400 --judgments 50000] [--rounds 3] [--profile]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_pool]

Creates the database named by --database-url (it must not exist beforehand), migrates
it, and generates a golden set (bench.data.golden_set_with_runs): `pages` id-only pages,
`queries` queries, `judgments` imported judgments (half of them on pairs the runs
retrieve, so the pool has labelled pairs to leave out) and `runs` runs that each rank
`depth` pages per query. A run is written the way run_import stores it (a
lib.runs.RankedRun in RunData), without parsing a 1M-line file. Each query's runs draw
from the same `candidates` pages, by one shared latent relevance plus each run's own
noise, so that they agree at the top and part deeper down, as retrieval systems do; 0.1%
of the entries name doc ids outside the corpus. The database is dropped at the end, even
when a step fails.

Then, in each round, it times, one right after the other on the same server:

- pool_build (what `manage.py build_pool` runs): depth `depth` over all the runs,
  strategy depth; it reads the runs from the database, takes the union, leaves out
  labelled pairs and pages outside the corpus, orders the tasks and writes them. The
  pool is deleted (TRUNCATE) after each round.
- the numpy reference: the same runs read from the database (RunData bytes, decoded
  as pool_build decodes them) and the distinct (query, doc) pairs of their top `depth`,
  by sort and adjacent difference, np.unique's own algorithm. (np.unique itself takes
  a hash path in numpy 2.3 that needs minutes on 20 million keys, so it would make the
  reference slow and the ratio flattering.) Its pair count must equal the pool's
  candidate pairs.
- for information, the floor of the write: the rows pool_build wrote (the pool's pairs,
  one row a query, and its windows' tasks) COPYed in the same binary format into tables
  with the same columns and no index, constraint or default.

Target (from the issue): pool_build within 3x of the numpy reference. Figures are
medians over the rounds.

Where the time goes (2 cores, PostgreSQL 15 with its default configuration, 3.76
million pairs pooled; about 7 s against a reference of about 6 s): reading and decoding
the runs 1.4 s (as the reference), the union, the labelled-pair lookups and the order
about 3.6 s (the sort of 20 million packed entries 1.9 s), and the writes 1.2 s: 10,000
PoolQuery rows of 18 kB (lz4; PostgreSQL's default pglz took 13.7 s for them) and the
windows' 20,000 tasks. Until pools kept their pairs per query, every pair was a task
row: 3.76 million rows took 10 s of server time for the keys, indexes and checks of
labeling_judgingtask alone, and the build 4.9x the reference.
"""

import argparse
import cProfile
import importlib
import io
import os
import platform
import pstats
import statistics
import sys
import time

import numpy as np
import psycopg

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.data import golden_set_with_runs  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402

TARGET = 3.0
SLUG = "bench-pool"
# What pool_build writes, as bare tables: (the table it writes, its columns, the bare table's).
FLOOR_TABLES = [
    (
        "labeling_poolquery",
        "pool_id, query_id, page_ids, run_ranks, runs",
        "CREATE TABLE bench_pool_query_floor (pool_id bigint, query_id bigint, page_ids bytea, run_ranks bytea, runs smallint)",
    ),
    (
        "labeling_judgingtask",
        "golden_set_id, pool_id, query_id, page_id, kind, position, best_rank, run_ranks, status, judgments_required",
        "CREATE TABLE bench_task_floor (golden_set_id bigint, pool_id bigint, query_id bigint, page_id bigint, "
        "kind varchar(10), position bigint, best_rank integer, run_ranks bytea, status varchar(10), judgments_required smallint)",
    ),
]


# --- measuring -------------------------------------------------------------------------


def reference_union(golden_set_id: int, depth: int) -> int:
    """Distinct (query, doc) pairs of the runs' top `depth`, from the stored runs: numpy only."""
    from evaluation.models import RunData
    from lib.runs import RankedRun

    keys = []
    query_index: dict[str, int] = {}
    for blob in RunData.objects.filter(run__golden_set_id=golden_set_id).values_list("ranked", flat=True).iterator():
        ranked = RankedRun.from_bytes(bytes(blob))
        top = ranked.ranks <= depth
        queries = np.array([query_index.setdefault(q, len(query_index)) for q in ranked.query_ids], dtype=np.int64)
        docs = ranked.doc_keys[top]
        # One int64 a pair: the doc key in bits 0-31, the query in bits 32-51 (up to 2**20
        # queries), and, for a negative key (a page outside the corpus, which is the run's
        # own), the run's number from bit 52, so that two runs' "-1" stay apart (the
        # generated runs never share such a doc id). The fields must not overlap: with the
        # tag at bit 48, queries from 65,536 on merged pairs of different runs.
        if len(query_index) > 1 << 20 or len(keys) + 1 >= 1 << 11:
            raise ValueError("the reference union packs at most 2**20 queries and 2**11 runs into a key")
        keys.append((queries[ranked.query_index[top]] << 32) | (docs & 0xFFFFFFFF) | ((docs < 0) * (len(keys) + 1) << 52))
    pairs = np.sort(np.concatenate(keys))
    return int(len(pairs) and np.count_nonzero(pairs[1:] != pairs[:-1]) + 1)


def floor_copy(database_url: str, pool_id: int) -> float:
    """Seconds to COPY the rows pool_build wrote (the pool's pairs and its windows'
    tasks), in the binary format it writes them, into tables with no index, constraint
    or default (the rows are read out first, untimed)."""
    seconds = 0.0
    with psycopg.connect(database_url) as conn:
        for table, columns, create in FLOOR_TABLES:
            floor = create.split()[2]
            conn.execute(f"TRUNCATE {floor}")
            buffer = io.BytesIO()
            with conn.cursor().copy(
                f"COPY (SELECT {columns} FROM {table} WHERE pool_id = {int(pool_id)}) TO STDOUT (FORMAT BINARY)"
            ) as copy:
                for data in copy:
                    buffer.write(data)
            conn.commit()
            data = buffer.getvalue()
            start = time.perf_counter()
            with conn.cursor().copy(f"COPY {floor} FROM STDIN (FORMAT BINARY)") as copy:
                for offset in range(0, len(data), 1 << 22):
                    copy.write(data[offset : offset + (1 << 22)])
            conn.commit()
            seconds += time.perf_counter() - start
    return seconds


def measure_round(args: argparse.Namespace, profile: bool) -> dict:
    from django.db import connection

    from evaluation.models import Run
    from goldenset.models import GoldenSet
    from labeling.models import JudgingTask
    from labeling.pools.services import pool_build

    golden_set = GoldenSet.objects.get(slug=SLUG)
    runs = list(Run.objects.filter(golden_set=golden_set).order_by("name"))
    out: dict = {}

    print("  numpy reference ...", file=sys.stderr)
    start = time.perf_counter()
    out["reference_pairs"] = reference_union(golden_set.pk, args.depth)
    out["reference"] = time.perf_counter() - start
    connection.close()

    print("  pool_build ...", file=sys.stderr)
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    result = pool_build(golden_set=golden_set, runs=runs, depth=args.depth, strategy="depth")
    if profiler:
        profiler.disable()
        out["profile"] = pstats.Stats(profiler, stream=io.StringIO())
    out["pool_build"] = time.perf_counter() - start
    out["result"] = result
    out["tasks"] = JudgingTask.objects.filter(pool=result.pool).count()
    connection.close()

    print("  COPY floor ...", file=sys.stderr)
    out["floor"] = floor_copy(args.database_url, result.pool.pk)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE labeling_judgingtask, labeling_poolquery, labeling_poolrun, labeling_pool CASCADE")
    out["server"] = server_version()
    connection.close()
    return out


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url)
    from django.core.management import call_command
    from django.db import connection

    with scratch_database(args.database_url):
        call_command("migrate", verbosity=0)
        with connection.cursor() as cursor:
            for _, _, create in FLOOR_TABLES:
                cursor.execute(create)
            # The pairs' bytea columns compressed as labeling_poolquery's are (lz4, not pglz).
            fast_toast = importlib.import_module("labeling.migrations.0004_pool_query").FAST_TOAST
            cursor.execute(fast_toast.replace("labeling_poolquery", "bench_pool_query_floor"))
        print(
            f"generating {args.pages} pages, {args.queries} queries, {args.judgments} judgments, "
            f"{args.runs} runs x {args.depth} pages per query ...",
            file=sys.stderr,
        )
        started = time.perf_counter()
        data = golden_set_with_runs(
            slug=SLUG,
            queries=args.queries,
            runs=args.runs,
            depth=args.depth,
            pages=args.pages,
            candidates=args.candidates,
            noise=args.noise,
            judgments=args.judgments,
            seed=args.seed,
        )
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        data["setup"] = time.perf_counter() - started
        rounds = []
        for number in range(1, args.rounds + 1):
            print(f"round {number} of {args.rounds}", file=sys.stderr)
            # cProfile slows what it watches, so only the first round carries it.
            rounds.append(measure_round(args, args.profile and number == 1))
    report(args, data, rounds)


def report(args: argparse.Namespace, data: dict, rounds: list[dict]) -> None:
    median = {step: statistics.median(r[step] for r in rounds) for step in ("pool_build", "reference", "floor")}
    result = rounds[-1]["result"]
    entries = args.runs * args.queries * args.depth
    print()
    print("pool_build against a plain numpy union of the same runs, PostgreSQL, same run")
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
        f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__}), PostgreSQL {rounds[-1]['server']}"
    )
    print(
        f"data: {args.runs} runs x {args.queries} queries x depth {args.depth} = {entries:,} run entries "
        f"({args.candidates} candidate pages a query, corpus {args.pages:,} pages, {data['judgments']:,} judgments); "
        f"setup {data['setup']:.0f}s, untimed"
    )
    print(
        f"pool: {result.candidate_pairs:,} distinct pairs ({result.candidate_pairs / entries:.0%} of the entries); "
        f"{result.already_labelled:,} already labelled, {result.outside_corpus:,} outside the corpus, "
        f"{result.new_tasks:,} pairs pooled, of which {rounds[-1]['tasks']:,} queued as tasks "
        f"(the window: {result.pool.window} a query)"
    )
    pairs = {r["reference_pairs"] for r in rounds}
    agree = pairs == {result.candidate_pairs}
    print(
        f"numpy reference: {sorted(pairs)[0]:,} distinct pairs: {'the same as' if agree else 'DIFFERENT FROM'} the pool's candidate pairs"
    )
    print(f"figures: median of {len(rounds)} round(s)")
    if args.profile:
        print("NOTE: --profile was on: round 1 ran under cProfile, which slows it; use --rounds 3 or more for the figures.")
    print()
    header = f"{'step':<46}{'seconds':>9}{'ratio':>8}{'target':>8}  result"
    print(header)
    print("-" * len(header))
    ratio = median["pool_build"] / median["reference"]
    verdict = "PASS" if ratio <= TARGET and agree else "MISS"
    print(
        f"{'pool_build (depth ' + str(args.depth) + ', ' + str(args.runs) + ' runs)':<46}{median['pool_build']:>8.2f}s{ratio:>7.2f}x{TARGET:>7.1f}x  {verdict}"
    )
    print(f"{'numpy union of the same runs (reference)':<46}{median['reference']:>8.2f}s{1:>7.2f}x")
    print(
        f"{'COPY of the same rows into bare tables (floor)':<46}{median['floor']:>8.2f}s{median['floor'] / median['reference']:>7.2f}x  (informational)"
    )
    print()
    print("pool_build reads the runs from the database, takes the union, leaves out labelled pairs and pages")
    print("outside the corpus, orders each query's pairs, COPYs them into labeling_poolquery (one row a query)")
    print("and the windows' tasks into labeling_judgingtask (unique pair index, queue index, reference")
    print("triggers). The floor is the COPY alone of the same rows into tables without any of those.")
    if len(rounds) > 1:
        print()
        print("seconds per round: pool_build, numpy reference, COPY floor")
        for number, r in enumerate(rounds, start=1):
            print(f"  round {number}: {r['pool_build']:.2f}  {r['reference']:.2f}  {r['floor']:.2f}")
    if "profile" in rounds[0]:
        print("\ncProfile of pool_build (round 1), top 25 by cumulative time:")
        stats = rounds[0]["profile"]
        stats.stream = sys.stdout
        stats.sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pages", type=int, default=100_000, help="corpus size")
    parser.add_argument("--candidates", type=int, default=400, help="pages a query's runs draw their top from")
    parser.add_argument("--noise", type=float, default=1.0, help="how much the runs disagree (Gumbel scale)")
    parser.add_argument("--judgments", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds to take the median of (default 3)")
    parser.add_argument("--seed", type=int, default=20240601)
    database_url_argument(parser, "goldset_bench_pool")
    parser.add_argument("--profile", action="store_true", help="also print cProfile statistics of pool_build (round 1)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.candidates < args.depth:
        parser.error("--candidates must be at least --depth")
    run(args)


if __name__ == "__main__":
    main()
