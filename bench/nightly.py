"""A nightly run of 10,000 queries against a local endpoint, beside a plain async HTTP client.

    .venv/bin/python bench/nightly.py [--queries 10000] [--small 2500] [--depth 100] [--in-flight 16]
        [--canaries 50] [--rounds 3] [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_nightly]

The operating issue's targets (monitoring/nightly, monitoring/probes):

- data: a golden set of --queries queries over 40,000 pages (one relevant page each),
  published; a local endpoint speaking Goldset's JSON contract, in a process of its own
  (aiohttp), answering --depth hits a query;
- time: Goldset's nightly run (`nightly_run_execute`: every query at --in-flight requests in
  flight, the answers read and checked, the run stored, all in one call) against a plain
  aiohttp client making the same POSTs at the same concurrency and reading each answer's
  JSON, in the same run, alternating, median of --rounds. Target: within 1.3x (PASS).
- memory: a night in a fresh process for a set of --small queries and one of --queries:
  its resident memory above the process's start when every answer is in (before the run
  is stored), and its peak; target: while querying it grows with the queries by at most
  1.5x the compact entries it builds (24 bytes an entry), i.e. no Python object per answer
  or hit is kept: flat beyond the run itself.
- probes: --canaries canaries probed on the endpoint in one round (`probe_now`); target
  under 2 s.

The tasks the nights send on commit go to a Redis queue of the bench's own that nobody
consumes (scoring is bench/recompute.py's), purged at the end; the database is created for
the run and dropped at the end.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import database_url_argument, django_setup, free_port, purge_queue, scratch_database  # noqa: E402

PAGES = 40_000
TARGET_RATIO = 1.3
PROBE_TARGET_SECONDS = 2.0
BROKER = "redis://127.0.0.1:6379/14"


# --- the endpoint, in its own process ------------------------------------------------------


def serve(port: int, depth: int) -> None:
    """Goldset's JSON contract at POST /search: `k` hits of a pure function of the query id."""
    from aiohttp import web

    from bench.data import doc_id_of

    async def search(request: web.Request) -> web.Response:
        body = await request.json()
        start = sum(map(ord, body["query_id"])) * 7919
        k = min(int(body["k"]), depth)
        results = [{"doc_id": doc_id_of((start + i * 104_729) % PAGES), "score": float(k - i)} for i in range(k)]
        return web.json_response({"results": results, "index_size": PAGES})

    app = web.Application()
    app.router.add_post("/search", search)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def endpoint_started(depth: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--depth", str(depth)],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/search"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the endpoint did not start")


# --- the reference ----------------------------------------------------------------------


async def plain_client(url: str, questions: list[tuple[str, str]], k: int, in_flight: int) -> float:
    """The same POSTs at the same concurrency, each answer read as JSON; seconds."""
    import aiohttp

    pending = iter(questions)
    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight)) as session:

        async def worker():
            for query_id, text in pending:
                async with session.post(url, json={"query": text, "query_id": query_id, "k": k}) as answer:
                    json.loads(await answer.read())

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - started


# --- the data ---------------------------------------------------------------------------


def golden_set_made(slug: str, queries: int):
    from bench.data import doc_id_of, question_records
    from goldenset.models import GoldenSet
    from goldenset.services import GoldenSetSource, golden_set_create, version_publish
    from lib.formats import JsonRecord

    query_ids = [f"q{n}" for n in range(queries)]
    source = GoldenSetSource(
        pages=[JsonRecord(line=n, id=doc_id_of(n), title=doc_id_of(n)) for n in range(PAGES)],
        queries=question_records(query_ids),
        qrels={(q, doc_id_of(n * 13 % PAGES)): 1 for n, q in enumerate(query_ids)},
        k_first=100,
        k_final=10,
    )
    golden_set_create(slug=slug, name=slug, source=source)
    golden_set = GoldenSet.objects.get(slug=slug)
    version_publish(golden_set=golden_set, note="bench")
    return golden_set


def endpoint_made(golden_set, url: str, in_flight: int):
    from monitoring.endpoints.services import endpoint_add

    return endpoint_add(
        golden_set=golden_set,
        name="local",
        system="local",
        stage="first_stage",
        preset="goldset",
        url=url,
        max_in_flight=in_flight,
        max_per_second=10_000,
        timeout_seconds=30,
        enabled=False,
    )


# --- one night in a fresh process (for its memory) ------------------------------------------


def night_in_process(slug: str) -> None:
    """Run one night of `slug`'s endpoint; print {"seconds", "peak_above_start", "entries"}."""
    from bench.scratch import peak_memory

    start = peak_memory(os.getpid())
    from monitoring.models import Endpoint
    from monitoring.nightly import services
    from monitoring.nightly.services import nightly_run_execute, nightly_run_now

    # The peak when every answer is in and nothing is stored yet: what querying holds.
    queried = {}
    store = services._store

    def store_measured(*args, **kwargs):
        queried["peak"] = peak_memory(os.getpid())
        return store(*args, **kwargs)

    services._store = store_measured
    endpoint = Endpoint.objects.get(golden_set__slug=slug)
    started = time.perf_counter()
    night = nightly_run_execute(night_id=nightly_run_now(endpoint=endpoint).pk)
    seconds = time.perf_counter() - started
    assert night.status == "done", night.error
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_above_start": peak_memory(os.getpid()) - start,
                "querying_above_start": queried["peak"] - start,
                "entries": night.run.entry_count,
            }
        )
    )


def fresh_night(args, slug: str) -> dict:
    command = [sys.executable, __file__, "--night", slug, "--database-url", args.database_url]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "BENCH_QUEUE": args.queue})
    if done.returncode:
        raise SystemExit(f"the night of {slug} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def year_costs(golden_set, run) -> None:
    """What a year of such nights costs: the stored entries and scores of one night, and the
    time to score it, measured here; the year and a publish follow from the settings."""
    from django.db import connection

    from evaluation.models import Evaluation, EvaluationSettings, RunData, Score
    from evaluation.services import evaluation_compute

    version = golden_set.latest_version()
    started = time.perf_counter()
    evaluation = evaluation_compute(run=run, version=version)
    score_seconds = time.perf_counter() - started
    entries = len(bytes(RunData.objects.get(run=run).ranked))
    per_query = len(bytes(Evaluation.objects.get(pk=evaluation.pk).per_query or b""))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(s.*) FROM evaluation_score s WHERE evaluation_id = %s", [evaluation.pk])
        score_bytes = sum(size for (size,) in cursor.fetchall())
    score_rows = Score.objects.filter(evaluation=evaluation).count()
    defaults = EvaluationSettings()
    keep_days, rescore = defaults.series_keep_days, defaults.series_rescore_nights
    whole_nights = keep_days + (365 - keep_days) / 7
    mb = 1e6
    print(
        f"one night of {run.query_count:,} queries: entries {entries / mb:.2f} MB, per-query scores {per_query / mb:.2f} MB and "
        f"{score_rows} score rows ({score_bytes / 1e3:.0f} kB) per version it is scored on; scoring it {score_seconds:.2f} s"
    )
    print(
        f"a year of nightly runs, per endpoint: entries {365 * entries / 1e9:.2f} GB kept whole, "
        f"{whole_nights * entries / 1e9:.2f} GB with the default retention ({keep_days} days whole, then one night a week: "
        f"{whole_nights:.0f} nights), plus {365 * (per_query + score_bytes) / 1e9:.2f} GB of scores on one version each; "
        f"a publish re-scores {rescore} nights: {rescore * score_seconds:.1f} s of worker time per endpoint "
        f"(+{rescore * (per_query + score_bytes) / mb:.1f} MB of scores)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=2_500)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--canaries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--night", help=argparse.SUPPRESS)
    database_url_argument(parser, "goldset_bench_nightly")
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.depth)
    args.queue = os.environ.get("BENCH_QUEUE") or f"bench-nightly-{uuid.uuid4().hex[:8]}"
    environ = {"CELERY_BROKER_URL": BROKER, "CELERY_TASK_DEFAULT_QUEUE": args.queue, "DEBUG": "false"}
    if args.night:
        django_setup(args.database_url, **environ)
        return night_in_process(args.night)

    endpoint_process, url = endpoint_started(args.depth)
    try:
        with scratch_database(args.database_url):
            django_setup(args.database_url, **environ)
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            bench(args, url)
    finally:
        endpoint_process.kill()
        purge_queue(BROKER, args.queue)


def bench(args, url: str) -> None:
    from evaluation.canaries import canary_add
    from goldenset.models import Page, Query
    from monitoring.nightly.services import nightly_run_execute, nightly_run_now, version_questions
    from monitoring.probes.services import probe_now

    print(
        f"data: {args.queries:,} queries x depth {args.depth} ({args.queries * args.depth:,} entries a night), "
        f"{PAGES:,} pages; {args.in_flight} requests in flight; Python {sys.version.split()[0]}",
        flush=True,
    )
    made = time.perf_counter()
    big = golden_set_made("nightly-big", args.queries)
    small = golden_set_made("nightly-small", args.small)
    endpoint = endpoint_made(big, url, args.in_flight)
    endpoint_made(small, url, args.in_flight)
    print(f"  (sets made in {time.perf_counter() - made:.0f} s)", flush=True)
    questions = version_questions(big.latest_version())

    ours, theirs, fetching = [], [], []
    for round_number in range(1, args.rounds + 1):
        theirs.append(asyncio.run(plain_client(url, questions, args.depth, args.in_flight)))
        started = time.perf_counter()
        night = nightly_run_execute(night_id=nightly_run_now(endpoint=endpoint).pk)
        ours.append(time.perf_counter() - started)
        assert night.status == "done" and night.run.entry_count == args.queries * args.depth, night.error
        fetching.append(night.seconds)
        print(
            f"  round {round_number}: plain client {theirs[-1]:.2f} s, Goldset night {ours[-1]:.2f} s "
            f"(querying {night.seconds:.2f} s, the rest reading and storing the run)",
            flush=True,
        )
    goldset_s, plain_s = statistics.median(ours), statistics.median(theirs)
    ratio = goldset_s / plain_s
    print(
        f"nightly run, {args.queries:,} queries: Goldset {goldset_s:.2f} s (querying {statistics.median(fetching):.2f} s), "
        f"plain aiohttp client {plain_s:.2f} s: {ratio:.2f}x (target <= {TARGET_RATIO}x) "
        f"{'PASS' if ratio <= TARGET_RATIO else 'MISS'}"
    )
    print(f"  throughput: Goldset {args.queries / goldset_s:,.0f} queries/s, plain client {args.queries / plain_s:,.0f} queries/s")

    year_costs(big, night.run)

    small_night, big_night = fresh_night(args, "nightly-small"), fresh_night(args, "nightly-big")
    entry_bytes = 24  # the compact entries: doc index, query index and score, 8 bytes each
    mib = 1024 * 1024
    grown = big_night["querying_above_start"] - small_night["querying_above_start"]
    entries_grown = (big_night["entries"] - small_night["entries"]) * entry_bytes
    print(
        f"memory of a night in a fresh process, above its start: {args.small:,} queries "
        f"{small_night['querying_above_start'] / mib:.0f} MiB when every answer is in, {small_night['peak_above_start'] / mib:.0f} MiB "
        f"at its peak (storing); {args.queries:,} queries {big_night['querying_above_start'] / mib:.0f} and "
        f"{big_night['peak_above_start'] / mib:.0f} MiB"
    )
    print(
        f"  while querying it grew {grown / mib:.0f} MiB for {args.queries - args.small:,} more queries, against "
        f"{entries_grown / mib:.0f} MiB of compact entries (target: within 1.5x of them, so nothing per answer is kept: "
        f"flat in the queries beyond the run itself) {'PASS' if grown <= 1.5 * entries_grown else 'MISS'}"
    )
    print(
        f"  storing the run peaks at {big_night['peak_above_start'] / (big_night['entries'] * entry_bytes):.1f}x its compact "
        f"entries ({big_night['entries']:,} entries): ranking and compressing them, once, as an upload does"
    )

    version = big.latest_version()
    queries = list(Query.objects.filter(golden_set=big).order_by("id")[: args.canaries])
    for query in queries:
        start = sum(map(ord, query.query_id)) * 7919
        from bench.data import doc_id_of

        page = Page.objects.get(corpus=big.corpus, doc_id=doc_id_of((start + 4 * 104_729) % PAGES))  # its 5th hit
        canary_add(golden_set=big, query=query, page=page)
    timings = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        _, outcomes = probe_now(endpoint=endpoint)
        timings.append(time.perf_counter() - started)
        assert len(outcomes) == args.canaries and all(o.found and o.rank == 5 for o in outcomes)
    probe_s = statistics.median(timings)
    print(
        f"canary probes: {args.canaries} canaries in one round on v{version.number}: {probe_s:.2f} s "
        f"(target < {PROBE_TARGET_SECONDS:.0f} s) {'PASS' if probe_s < PROBE_TARGET_SECONDS else 'MISS'}"
    )


if __name__ == "__main__":
    main()
