"""How cost grows with the size of a golden set: the same work at 10,000, 30,000 and 100,000
queries, per item, beside its reference, in one run.

    .venv/bin/python bench/growth.py [--sizes 10000 30000 100000] [--runs 20 --depth 100]
        [--pages-per-query 10] [--pool-depth 20] [--nights 8 --night-depth 10] [--repeat 3]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_growth]
        [--broker-url redis://127.0.0.1:6379/0] [--seed 20240601] [--profile] [--keep]
    .venv/bin/python bench/growth.py --pages-only DATABASE_URL [--repeat 3] [--profile]

Each size runs in a process of its own (so that one size's caches and peak memory do not
carry into the next), on a database of its own (--database-url with `_<size>` appended,
created for it and dropped at its end, even when a step fails), and does, in order:

1. bench/recompute.py's data and measure, unchanged: a corpus of --pages-per-query pages
   a query (slice doc_type x3), the queries (slice lang x3) with 5 relevant labels each
   and 0-2 of grade 0, --runs runs of --depth pages a query imported through run_import;
   a real Celery worker (prefork, one pool process a core) on Redis; the time of
   version_publish, the time from publish to the last score the worker stores, the
   worker's peak memory (VmHWM summed over its processes), and ranx.evaluate on prebuilt
   typed lists of the same runs, slices and metrics, its means checked against the stored
   scores.
2. bench/pool_build.py's comparison: pool_build of every run at --pool-depth (strategy
   depth) against the numpy union of the same runs read from the database, whose pair
   count must equal the pool's candidate pairs. A pool of --pool-depth, not --depth: the
   generator's runs rank unrelated random pages, so at depth 100 a pool would hold nearly
   every run entry (190 million pairs at 100,000 queries), which no judging pool does.
3. bench/completeness_page.py's pool part-way through judging (10% of its pairs judged,
   a completeness sample of 1,000 pairs between the pool's depth and --depth, half of it
   judged), and the monitoring page's nights: two series (first stage and reranked of one
   system) of --nights nights of --night-depth pages a query, one day apart, each scored
   on the version in this process through evaluate_run_task (alerts included). The 20
   runs stay out of any series, so the results and coverage pages show all of them.
4. The results, coverage, completeness and monitoring pages, as staff, through Django's
   test client, once the pool's judging summary is made (what a worker does when the
   completeness page first asks: timed and printed): one render to load templates, then
   --repeat renders each with the process's cached scoring inputs emptied first (a cold
   process reads the version's stored arrays: the worst case), the worst time and the SQL
   query count (CaptureQueriesContext).
5. bench/export.py's comparison: the version's TREC qrels through the API (gunicorn, one
   sync worker, DEBUG off) against a PostgreSQL COPY of the same rows, median of --repeat,
   the API's body checked byte for byte against COPY's TREC lines.

Then it prints each per-item cost at each size and the targets of issue #15 with PASS or
MISS: every page under 1 s at the largest size; publish seconds per thousand labels,
recompute seconds per million run entries, pool_build per pair and the export per label
each within 1.3x at the largest size of its cost at the smallest; the worker's peak memory
under 3 GiB at the largest size. The wall seconds of each step of each size (setup
included) and the database's size at its end are printed too: what a larger run will need.

--keep leaves each size's database in place; --pages-only then renders step 4 alone on a
kept database (migrated to the code's schema first), so that work on a page can be measured
at 100,000 queries without building the data again.
"""

import argparse
import cProfile
import dataclasses
import json
import logging
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import recompute  # noqa: E402  (needs the repository on sys.path)
from bench.completeness_page import pool_partly_judged  # noqa: E402
from bench.export import TREC_LINE, api_download, copy_download  # noqa: E402
from bench.pool_build import reference_union  # noqa: E402
from bench.scratch import (  # noqa: E402
    django_setup,
    gunicorn_started,
    purge_queue,
    scratch_database,
    server_version,
    version_labels_copy,
)

PAGE_TARGET_SECONDS = 1.0
GROWTH_TARGET = 1.3  # a per-item cost at the largest size / at the smallest
MEMORY_TARGET_BYTES = 3 * 1024**3
DONE_SHARE = 0.1
SAMPLE = 1000
PAGES = ("results", "coverage", "completeness", "monitoring")
# The steps of a size, as the report names their wall seconds.
PHASES = {
    "data": "generating the data",
    "recompute": "migrate, set, runs' imports, recompute, ranx",
    "pool": "pool_build and the numpy union",
    "sample, nights": "pool judged, sample, nights scored",
    "pages": "pages (warm-up and cold renders)",
    "export": "export (gunicorn start, API, COPY)",
}


# --- one size, in a process of its own -------------------------------------------------------


def nights_scored(data: recompute.Dataset, golden_set, version, *, nights: int, depth: int) -> int:
    """Two series, "nightly first_stage" and "nightly reranked", of `nights` nights each (one
    day apart, the last today) of `depth` pages a query, from the recompute generator (run
    numbers from 1000, so unlike the main runs); each night scored on `version` here, through
    the task the worker runs (evaluation and alerts). Returns the run entries imported."""
    from django.utils import timezone

    from evaluation.services import run_import
    from evaluation.tasks import evaluate_run_task

    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)  # a line a task run here: noise in the bench's output
    shallow = dataclasses.replace(data, depth=depth)
    now = timezone.now()
    entries = 0
    for night in range(nights):
        for offset, stage in enumerate(("first_stage", "reranked")):
            run = run_import(
                golden_set=golden_set,
                lines=shallow.run_lines(1000 + 2 * night + offset, "nightly"),
                source_name=f"nightly-{stage}-{night + 1}.trec",
                system="nightly",
                stage=stage,
                name=f"nightly {stage} night {night + 1}",
                series=f"nightly {stage}",
                measured_at=now - timedelta(days=nights - 1 - night),
            )
            outcome = evaluate_run_task.apply(args=(run.pk, version.pk), throw=True).get()
            if outcome != "done":
                raise SystemExit(f"the evaluation of {run.name} on version {version.number} ended {outcome!r}")
            entries += run.entry_count
    return entries


def pages_timed(slug: str, repeat: int, profile: bool = False) -> dict[str, dict]:
    """{page: {"worst": s, "median": s, "sql": queries of one render}}, as staff, cold. With
    `profile`, one more cold render of each page runs under cProfile (printed to stderr)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from evaluation import scoring_inputs
    from labeling.completeness.selectors import summarised
    from labeling.completeness.summaries import pool_summary_refresh
    from labeling.models import Pool

    staff, _ = get_user_model().objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    # A large pool's judging figures are a summary a worker refreshes when the completeness
    # page asks (no worker runs here): made here first, timed, as the worker would.
    for pool in Pool.objects.filter(golden_set__slug=slug).select_related("golden_set"):
        if summarised(pool):
            started = time.perf_counter()
            pool_summary_refresh(pool.pk)
            print(
                f"  pool {pool.pk} ({pool.pair_count:,} pairs): its judging summary took the worker {time.perf_counter() - started:.3f}s",
                file=sys.stderr,
            )
    client = Client()
    client.force_login(staff)
    figures = {}
    for page in PAGES:
        url = reverse(page, kwargs={"slug": slug})
        client.get(url)  # templates compiled, modules imported: not counted
        times, queries = [], 0
        for _ in range(repeat):
            scoring_inputs.forget()  # the version's labels and slices read again
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
            queries = len(captured.captured_queries)
        figures[page] = {"worst": max(times), "median": statistics.median(times), "sql": queries}
        print(f"  {page} page: worst {max(times):.3f}s, {queries} SQL queries", file=sys.stderr)
        if profile:
            scoring_inputs.forget()
            profiler = cProfile.Profile()
            profiler.runcall(client.get, url)
            print(f"--- cProfile of a cold render of the {page} page (slower under it), top 25 by cumulative time", file=sys.stderr)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    return figures


def pages_on_kept(args: argparse.Namespace) -> None:
    """Step 4 alone, on a database a --keep run left (migrated first: the code may have moved on)."""
    django_setup(args.pages_only, CELERY_BROKER_URL=args.broker_url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(f"pages of {args.pages_only.rpartition('/')[2]}, worst of {args.repeat} cold renders:")
    for page, figures in pages_timed(recompute.SLUG, args.repeat, args.profile).items():
        print(f"  {page:<14} {figures['worst']:.3f}s  ({figures['sql']} SQL queries)")


def export_timed(database_url: str, version, owner, repeat: int, work: Path) -> dict:
    """The version's qrels through the API against COPY, median of `repeat`, body checked."""
    from api.services import api_token_create

    _, secret = api_token_create(owner=owner, scope="read")
    api, copy = [], []
    with gunicorn_started(database_url, work / "gunicorn.log") as (base, _worker):
        api_download(base, recompute.SLUG, secret)  # the app loaded, the first request answered
        for _ in range(repeat):
            api.append(api_download(base, recompute.SLUG, secret))
            copy.append(copy_download(database_url, version_labels_copy(version.id)))
    reference = copy_download(database_url, version_labels_copy(version.id, TREC_LINE), hashed=True)
    if any(download.sha256 != reference.sha256 for download in api):
        raise SystemExit("the API's qrels differ from COPY's TREC lines of the same version")
    return {"api": statistics.median(d.seconds for d in api), "copy": statistics.median(d.seconds for d in copy)}


def measure_size(args: argparse.Namespace, queries: int, work: Path) -> dict:
    """Every figure of one size (see the module docstring), in seconds, bytes and counts."""
    database_url = f"{args.database_url}_{queries}"
    queue = f"goldset-bench-growth-{os.getpid()}"
    django_setup(database_url, CELERY_BROKER_URL=args.broker_url, CELERY_TASK_DEFAULT_QUEUE=queue)
    phases: dict[str, float] = {}  # wall seconds of each step, timed or not: what a larger run will take
    started = time.perf_counter()
    print(f"[{queries} queries] generating data (seed {args.seed}) ...", file=sys.stderr)
    data = recompute.generate_dataset(pages=queries * args.pages_per_query, queries=queries, depth=args.depth, seed=args.seed)
    phases["data"] = time.perf_counter() - started
    purge_queue(args.broker_url, queue)
    try:
        with scratch_database(database_url, keep=args.keep):
            out = measure_in_database(args, data, database_url, queue, work, phases)
    finally:
        purge_queue(args.broker_url, queue)
    out["phases"] = phases
    return out


def measure_in_database(args, data: recompute.Dataset, database_url: str, queue: str, work: Path, phases: dict) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from evaluation.models import Run
    from goldenset.models import GoldenSet, Membership
    from goldenset.services import membership_grant
    from labeling.pools.services import pool_build

    out: dict = {"queries": data.queries, "pages": data.pages}
    print(f"[{data.queries} queries] recompute (bench/recompute.py's measure) ...", file=sys.stderr)
    started = time.perf_counter()
    result = recompute.measure(
        argparse.Namespace(
            database_url=database_url, broker_url=args.broker_url, queue=queue, concurrency=args.concurrency, runs=args.runs, profile=False
        ),
        data,
        work,
    )
    out.update(
        server=result.server_version,
        labels=result.labels,
        entries=result.entries,
        publish=result.publish_seconds,
        recompute=result.seconds,
        reference=result.reference_seconds,
        difference=result.max_difference,
        memory=sum(result.peaks.values()),
        evaluations=result.evaluations,
    )
    # Migrating, the set, the runs' imports, the worker, the recompute and ranx's reference.
    phases["recompute"] = time.perf_counter() - started
    golden_set = GoldenSet.objects.get(slug=recompute.SLUG)
    version = golden_set.latest_version()
    runs = list(Run.objects.filter(golden_set=golden_set).order_by("id"))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    connection.close()

    print(f"[{data.queries} queries] pool_build against the numpy union ...", file=sys.stderr)
    pool_started = started = time.perf_counter()
    out["pool_reference_pairs"] = reference_union(golden_set.pk, args.pool_depth)
    out["pool_reference"] = time.perf_counter() - started
    connection.close()
    started = time.perf_counter()
    built = pool_build(golden_set=golden_set, runs=runs, depth=args.pool_depth, strategy="depth")
    out["pool_build"] = time.perf_counter() - started
    out["pool_pairs"] = built.candidate_pairs
    if out["pool_pairs"] != out["pool_reference_pairs"]:
        raise SystemExit(f"pool_build found {built.candidate_pairs} pairs, the numpy union {out['pool_reference_pairs']}")
    phases["pool"] = time.perf_counter() - pool_started

    started = time.perf_counter()
    owner = get_user_model().objects.create_user("bench-owner")
    membership_grant(user=owner, golden_set=golden_set, role=Membership.Role.MANAGER)
    print(f"[{data.queries} queries] a pool part-way through judging, a completeness sample ...", file=sys.stderr)
    pool_partly_judged(built.pool, done_share=DONE_SHARE, sample=SAMPLE, depth_to=args.depth, user=owner)
    print(f"[{data.queries} queries] {args.nights} nights of two series, scored here ...", file=sys.stderr)
    out["night_entries"] = nights_scored(data, golden_set, version, nights=args.nights, depth=args.night_depth)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    phases["sample, nights"] = time.perf_counter() - started

    print(f"[{data.queries} queries] pages ...", file=sys.stderr)
    started = time.perf_counter()
    out["pages_timed"] = pages_timed(recompute.SLUG, args.repeat, args.profile)
    phases["pages"] = time.perf_counter() - started
    print(f"[{data.queries} queries] qrels through the API against COPY ...", file=sys.stderr)
    connection.close()
    started = time.perf_counter()
    out["export"] = export_timed(database_url, version, owner, args.repeat, work)
    phases["export"] = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        out["database_bytes"] = cursor.fetchone()[0]
    out["server"] = server_version()
    return out


# --- the whole run: one process a size, then the table --------------------------------------


def size_in_child(args: argparse.Namespace, queries: int, work: Path) -> dict:
    """Run this script for one size in a fresh process; its figures (JSON) come back."""
    result_path = work / f"size-{queries}.json"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one-size",
        str(queries),
        "--result-file",
        str(result_path),
        "--runs",
        str(args.runs),
        "--depth",
        str(args.depth),
        "--pages-per-query",
        str(args.pages_per_query),
        "--pool-depth",
        str(args.pool_depth),
        "--nights",
        str(args.nights),
        "--night-depth",
        str(args.night_depth),
        "--repeat",
        str(args.repeat),
        "--concurrency",
        str(args.concurrency),
        "--seed",
        str(args.seed),
        "--database-url",
        args.database_url,
        "--broker-url",
        args.broker_url,
        *(["--profile"] if args.profile else []),
        *(["--keep"] if args.keep else []),
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    figures = json.loads(result_path.read_text())
    figures["wall"] = time.perf_counter() - started
    # Kept in the log as they come: a later size that fails must not take these with it.
    print(f"[{queries} queries] figures: {json.dumps(figures)}", file=sys.stderr)
    return figures


def growth(figures: list[dict], cost) -> float:
    return cost(figures[-1]) / cost(figures[0])


def report(args: argparse.Namespace, figures: list[dict], load_before: tuple, load_after: tuple) -> None:
    sizes = [f["queries"] for f in figures]
    width = 12
    mib, gib = 1024**2, 1024**3
    print()
    print("How cost grows with the golden set: the same work at each size, per item, beside its reference, one run")
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
        f"PostgreSQL {figures[-1]['server']} on the same cores; load average {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f} at the start, {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} at the end"
    )
    print(
        f"each size: {args.runs} runs x depth {args.depth}, {args.pages_per_query} pages a query, 5 relevant labels a query "
        f"(+0-2 of grade 0); slices lang x3, doc_type x3; pool depth {args.pool_depth}; 2 series x {args.nights} nights "
        f"of depth {args.night_depth}; worker: prefork pool of {args.concurrency}"
    )
    print()

    def row(name: str, values: list[str], tail: str = "") -> None:
        print(f"{name:<44}" + "".join(f"{v:>{width}}" for v in values) + (f"  {tail}" if tail else ""))

    row("queries", [f"{s:,}" for s in sizes])
    row("pages", [f"{f['pages']:,}" for f in figures])
    row("labels (published)", [f"{f['labels']:,}" for f in figures])
    row("run entries (the runs)", [f"{f['entries']:,}" for f in figures])
    row("pool candidate pairs", [f"{f['pool_pairs']:,}" for f in figures])
    row("monitoring nights' run entries", [f"{f['night_entries']:,}" for f in figures])
    row("database size (MiB)", [f"{f['database_bytes'] / mib:,.0f}" for f in figures])
    row("wall time of the size (s)", [f"{f['wall']:,.0f}" for f in figures])
    for phase in figures[0]["phases"]:
        row(f"  {PHASES[phase]}", [f"{f['phases'][phase]:,.0f}" for f in figures])
    print()

    verdicts = []
    header = f"{'per-item cost':<44}" + "".join(f"{s:>{width},}" for s in sizes) + "  growth   target  result"
    print(header)
    print("-" * len(header))
    per_item = [
        ("publish, s per 1,000 labels", lambda f: f["publish"] / f["labels"] * 1e3, "{:.4f}", True),
        ("recompute, s per 1M run entries", lambda f: f["recompute"] / f["entries"] * 1e6, "{:.3f}", True),
        ("  ranx reference, s per 1M run entries", lambda f: f["reference"] / f["entries"] * 1e6, "{:.3f}", False),
        ("  recompute / reference", lambda f: f["recompute"] / f["reference"], "{:.2f}x", False),
        ("pool_build, us per candidate pair", lambda f: f["pool_build"] / f["pool_pairs"] * 1e6, "{:.3f}", True),
        ("  numpy union reference, us per pair", lambda f: f["pool_reference"] / f["pool_pairs"] * 1e6, "{:.3f}", False),
        ("  pool_build / reference", lambda f: f["pool_build"] / f["pool_reference"], "{:.2f}x", False),
        ("qrels export (API), us per label", lambda f: f["export"]["api"] / f["labels"] * 1e6, "{:.3f}", True),
        ("  COPY reference, us per label", lambda f: f["export"]["copy"] / f["labels"] * 1e6, "{:.3f}", False),
        ("  API / COPY", lambda f: f["export"]["api"] / f["export"]["copy"], "{:.2f}x", False),
    ]
    for name, cost, shape, targeted in per_item:
        ratio = growth(figures, cost)
        tail = f"{ratio:>5.2f}x"
        if targeted:
            verdict = "PASS" if ratio <= GROWTH_TARGET else "MISS"
            verdicts.append((name, verdict))
            tail += f"  <={GROWTH_TARGET}x  {verdict}"
        row(name, [shape.format(cost(f)) for f in figures], tail)
    print()
    header = (
        f"{'page, worst of ' + str(args.repeat) + ' cold renders (SQL queries)':<44}"
        + "".join(f"{s:>{width},}" for s in sizes)
        + "  target at the largest"
    )
    print(header)
    print("-" * len(header))
    for page in PAGES:
        worst = figures[-1]["pages_timed"][page]["worst"]
        verdict = "PASS" if worst < PAGE_TARGET_SECONDS else "MISS"
        verdicts.append((f"{page} page", verdict))
        row(
            f"{page} page",
            [f"{f['pages_timed'][page]['worst']:.3f}s ({f['pages_timed'][page]['sql']})" for f in figures],
            f"<{PAGE_TARGET_SECONDS:.0f} s  {verdict}",
        )
    print()
    memory = figures[-1]["memory"]
    verdict = "PASS" if memory < MEMORY_TARGET_BYTES else "MISS"
    verdicts.append(("worker peak memory", verdict))
    row(
        "worker peak memory (VmHWM, summed, GiB)",
        [f"{f['memory'] / gib:.2f}" for f in figures],
        f"<{MEMORY_TARGET_BYTES / gib:.0f} GiB at the largest  {verdict}",
    )
    print()
    print(
        "checks: the stored scores match ranx's means within "
        f"{max(f['difference'] for f in figures):.1e}; the pool's candidate pairs equal the numpy union's; the API's "
        "qrels equal COPY's TREC lines byte for byte, at every size"
    )
    print(
        "recompute: version_publish to the last score a real Celery worker stores (bench/recompute.py); publish: the "
        "version_publish call alone; export: median of the API's and COPY's times"
    )
    missed = [name for name, verdict in verdicts if verdict == "MISS"]
    print(f"targets: {len(verdicts) - len(missed)} of {len(verdicts)} PASS" + (f"; MISS: {', '.join(missed)}" if missed else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000], help="queries of each set, smallest first")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--depth", type=int, default=100, help="pages each run ranks a query")
    parser.add_argument(
        "--pages-per-query", type=int, default=10, help="corpus pages a query (default 10: recompute.py's 100,000 pages for 10,000 queries)"
    )
    parser.add_argument("--pool-depth", type=int, default=20, help="depth of the pool built (default 20)")
    parser.add_argument("--nights", type=int, default=8, help="nights of each of the monitoring page's two series")
    parser.add_argument("--night-depth", type=int, default=10, help="pages a night ranks a query")
    parser.add_argument("--repeat", type=int, default=3, help="renders of each page, downloads of the export")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, help="the worker's pool processes (default: the cores)")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generated data")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/goldset_bench_growth",
        help="PostgreSQL database to create for each size with _<size> appended, and drop; none may exist beforehand",
    )
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/0", help="Redis for the worker (a queue of the run's own)")
    parser.add_argument("--profile", action="store_true", help="also print cProfile statistics of a cold render of each page")
    parser.add_argument("--keep", action="store_true", help="leave each size's database in place (for --pages-only)")
    parser.add_argument("--pages-only", metavar="DATABASE_URL", help="render the pages alone on a database a --keep run left")
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # a child process: one size
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pages_only:
        pages_on_kept(args)
        return
    if args.one_size:
        with tempfile.TemporaryDirectory(prefix="goldset-bench-growth-") as temp:
            figures = measure_size(args, args.one_size, Path(temp))
        args.result_file.write_text(json.dumps(figures))
        return
    if args.sizes != sorted(args.sizes) or len(set(args.sizes)) < 2:
        parser.error("--sizes needs two or more distinct sizes, smallest first")
    if args.runs < 1 or args.repeat < 1 or args.nights < 1:
        parser.error("--runs, --repeat and --nights must be at least 1")
    if not args.pool_depth < args.depth:
        parser.error("--pool-depth must be under --depth: the completeness sample is drawn between them")
    if args.pages_per_query * args.sizes[0] < 2 * args.depth:
        parser.error("--pages-per-query x the smallest size must be at least twice --depth (the generator's corpus)")
    load_before = os.getloadavg()
    figures = []
    with tempfile.TemporaryDirectory(prefix="goldset-bench-growth-") as temp:
        for queries in args.sizes:
            figures.append(size_in_child(args, queries, Path(temp)))
    report(args, figures, load_before, os.getloadavg())


if __name__ == "__main__":
    main()
