"""Annotator load: 20 people judging at once against the app under gunicorn on PostgreSQL,
with a million judgments already stored. Target: p95 under 50 ms for next-pair and submit.

    .venv/bin/python bench/annotators.py [--judgments 1000000 --annotators 20 --duration 30]
        [--warmup 5] [--workers 3] [--think 0 3] [--client-processes 4]
        [--pages 200000 --queries 20000 --runs 5 --depth 20 --candidates 60] [--done-share 0]
        [--seed 20240601] [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_annotators]
        [--broker-url redis://127.0.0.1:6379/10] [--cache-url redis://127.0.0.1:6379/11] [--keep] [--profile]

Creates the database named by --database-url (it must not exist beforehand), migrates it,
and generates, the same for the same seed:

- a corpus of --pages id-only style pages (short title and text) and a golden set of
  --queries queries;
- --judgments judgments already stored: half imported (through golden_set_create, COPY),
  half human ones by the annotators (COPY through lib.bulk.bulk_insert), spread over the
  queries;
- --annotators users with the annotator role (membership_grant), QueueSettings at their
  defaults (10% overlap by 2 annotators, no gold checks);
- --runs runs of --depth pages a query drawn from --candidates pages a query, and one pool
  over them at --depth built by labeling.pools.services.pool_build (depth order), so the queue is
  the real one: hundreds of thousands of pairs, whose windows are tasks, each judgment
  making the next pair of its query a task. --done-share closes that share of the pairs
  outside the queue beforehand (bench.data.pool_judged_earlier), for a pool part-way
  through judging.

Then it starts gunicorn (the pinned one, sync workers, --workers of them: 3, as
docker-compose.yml and the Dockerfile run it) on 127.0.0.1 at a free port with
goldset.settings_production (DEBUG off, a random SECRET_KEY, static files
collected into a temporary folder; requests carry X-Forwarded-Proto: https, as behind the
TLS proxy a deployment has), the shared cache a deployment of several web processes sets
(CACHE_URL on Redis, as docker-compose.yml does: sessions are then cached_db, and the rate
limits and progress counts are shared; emptied before the run; --cache-url '' runs without
one, each worker with a cache of its own), the request figures in an empty
PROMETHEUS_MULTIPROC_DIR (as docker-compose.yml sets it for the web container) and a
Celery broker on Redis (a queue of this run's own, purged at the end, so nothing runs
in-process). Each of --annotators clients logs in through /accounts/login/ and judges.
In a phase with a pause (see --think) it loops: GET /label/<slug>/next/ (next-pair), then
POST /label/<slug>/tasks/<id>/judge/ with a random grade (submit), whose answer is already
the next pair; next-pair is its own GET each loop so that both figures are timed. In the
closed loop it sends what the judging screen sends: the screen never asks next-pair once
it has loaded (htmx swaps in the pair each submit answers with), so the client GETs
next-pair once and then only submits, each judging the pair the previous answer showed,
and the capacity is that of people judging on the screen. After
--warmup seconds the requests of --duration seconds are timed (at the client, with
the clients in --client-processes processes so that one GIL does not queue them; the
server-side time of the same requests, from gunicorn's access log, is printed beside it).

It prints the machine, the data size, throughput (requests/s, judgments/s), p50/p95/p99 of
next-pair and submit, errors (a non-200 answer, a pair without data-task-id while tasks
remain, or a grade the judge view refused with its judging-error message, is an error and
makes the run MISS), the CPU time the gunicorn workers and the PostgreSQL backends spent
per judgment (a figure the other load of a shared machine hardly moves), what the
busy backends were doing (pg_stat_activity sampled every 20 ms: running, waiting on a lock
and which, or idle in a transaction while the app works). It checks in the database that
the judgments grew by exactly the submits accepted (none lost, none extra) and that no
task was judged more often than it requires, nor twice by one annotator (a task without
overlap judged by two annotators is a double hand-out). With --profile it then renders one
next-pair and one submit in this process and prints their SQL with times, EXPLAIN ANALYZE of
the slowest statements and a cProfile. The database is dropped and gunicorn stopped at the
end, even when a step fails (--keep leaves the database, for debugging).

--think S makes each annotator pause S seconds (+-50%, random) after each judgment, as a
person reading the next pair would. 0 is the worst case, every annotator clicking as fast
as the server answers (a closed loop: latency then includes queueing behind the other 19,
so on c cores it cannot be under 20 x the CPU per cycle / c / 2 a request, whatever the
queries cost). Several values run one measured phase each, one after the other, against
the same server and data. The default, `--think 0 3`, runs the closed loop first and then
3 s. The p95 target applies to the phases with a pause: it is a target for people judging,
who read each pair (3 s is already fast for a relevance judgment). The closed loop prints
its latencies without a target and is judged on capacity instead: the judgments/s it
sustains must reach 50, and exceed what the annotators would ask at 3 s a pair. The CPU
per judgment is printed, without a target. Every phase must also
make no error, lose no judgment and hand no task out twice; the run passes only if every
phase does.
"""

import argparse
import os
import platform
import secrets
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import (  # noqa: E402  (needs the repository on sys.path)
    GRADE_SCALE,
    candidate_pages,
    doc_id_of,
    pool_judged_earlier,
    question_records,
    runs_write,
)
from bench.judging_load import GRADES, PASSWORD, load, server_times, times_next_pair  # noqa: E402
from bench.scratch import (  # noqa: E402
    database_url_argument,
    django_setup,
    free_port,
    process_started,
    purge_queue,
    redis_keys_delete,
    scratch_database,
    served_settings,
    server_version,
)

TARGET_P95_MS = 50.0
# The closed loop's capacity: judgments/s sustained with no pause (issue 24). CPU per
# judgment is printed, not a target: a person grades a pair every 5 to 30 s.
TARGET_CAPACITY = 50.0
SLUG = "bench-annotators"
ACCESS_LOG_FORMAT = "%({x-bench-phase}i)s %(m)s %(U)s %(s)s %(D)s"


# --- data ------------------------------------------------------------------------------


def generate(args: argparse.Namespace) -> dict:
    """The golden set, its judgments, annotators, runs and pool, through the app's code."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.utils import timezone

    from goldenset.models import GoldenSet, Judgment, Membership, Page, Query
    from goldenset.services import GoldenSetSource, golden_set_create, membership_grant
    from labeling.models import JudgingTask, QueueSettings
    from labeling.pools.services import pool_build
    from lib.bulk import bulk_insert, gc_paused
    from lib.formats import JsonRecord

    rng = np.random.default_rng(args.seed)
    pages, queries = args.pages, args.queries
    doc_ids = [doc_id_of(n) for n in range(pages)]
    query_ids = [f"q{n + 1}" for n in range(queries)]

    candidates = candidate_pages(rng, queries=queries, pages=pages, count=args.candidates)
    # Judged pages of a query: an arithmetic walk with a stride small enough never to come
    # back (distinct pages), plus a few of the candidates' head, so the pool skips some
    # already-labelled pairs as it would in a real set.
    per_query = -(-args.judgments // queries)
    walk_start = rng.integers(0, pages, size=(queries, 1))
    walk_stride = rng.integers(1, max(pages // per_query, 2), size=(queries, 1))
    judged = (walk_start + np.arange(per_query) * walk_stride) % pages
    judged[:, :3] = candidates[:, rng.integers(0, args.candidates, size=3)]
    pair_query = np.repeat(np.arange(queries), per_query)[: args.judgments]
    pair_page = judged.ravel()[: args.judgments]
    pair_grade = rng.choice(GRADES, size=len(pair_query), p=[0.55, 0.25, 0.12, 0.08])
    imported = rng.random(len(pair_query)) < 0.5

    # Imported judgments: distinct pairs (qrels are a mapping); every other row is a
    # human judgment, which may repeat a pair as re-judging does.
    qrels: dict[tuple[str, str], int] = {}
    human = []
    for q, p, g, imp in zip(pair_query.tolist(), pair_page.tolist(), pair_grade.tolist(), imported.tolist()):
        key = (query_ids[q], doc_ids[p])
        if imp and key not in qrels:
            qrels[key] = g
        else:
            human.append((q, p, g))

    print(f"  golden set: {pages:,} pages, {queries:,} queries, {len(qrels):,} imported judgments ...", file=sys.stderr)
    source = GoldenSetSource(
        pages=[JsonRecord(line=n + 1, id=doc_id, title=f"page {n}", text=f"text of page {n}, short") for n, doc_id in enumerate(doc_ids)],
        queries=question_records(query_ids),
        qrels=qrels,
        grade_scale=GRADE_SCALE,
    )
    golden_set_create(slug=SLUG, name="annotator load bench", source=source)
    del source, qrels
    golden_set = GoldenSet.objects.get(slug=SLUG)

    print(f"  {args.annotators} annotators, {len(human):,} human judgments ...", file=sys.stderr)
    User = get_user_model()
    password = make_password(PASSWORD)  # hashed once: the hasher is slow on purpose
    User.objects.bulk_create([User(username=f"annotator{n:02d}", password=password) for n in range(args.annotators)])
    annotators = list(User.objects.filter(username__startswith="annotator").order_by("username"))
    for user in annotators:
        membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    QueueSettings.objects.get_or_create(golden_set=golden_set)

    page_pk = np.zeros(pages, dtype=np.int64)
    page_hash = {}
    for doc_id, pk, content_hash in Page.objects.filter(corpus=golden_set.corpus).values_list("doc_id", "id", "content_hash"):
        n = int(doc_id[3:9]) * 4 + int(doc_id[10:])
        page_pk[n] = pk
        page_hash[pk] = content_hash
    query_pk = np.zeros(queries, dtype=np.int64)
    for query_id, pk in Query.objects.filter(golden_set=golden_set).values_list("query_id", "id"):
        query_pk[int(query_id[1:]) - 1] = pk
    annotator_ids = [user.pk for user in annotators]
    now = timezone.now()
    with gc_paused():
        from django.db import transaction

        with transaction.atomic():
            bulk_insert(
                Judgment._meta.db_table,
                ["query_id", "page_id", "grade", "annotator_id", "source", "note", "seconds_spent", "page_hash", "created_at"],
                (
                    (
                        int(query_pk[q]),
                        int(page_pk[p]),
                        g,
                        annotator_ids[i % len(annotator_ids)],
                        Judgment.Source.HUMAN,
                        "",
                        4.0,
                        page_hash[int(page_pk[p])],
                        now,
                    )
                    for i, (q, p, g) in enumerate(human)
                ),
            )
    del human

    print(f"  {args.runs} runs x depth {args.depth} ...", file=sys.stderr)
    # query_ids are in the order of their numbers, as a run lists its queries.
    runs = runs_write(
        golden_set=golden_set,
        rng=rng,
        candidates=candidates,
        page_keys=page_pk,
        query_ids=query_ids,
        runs=args.runs,
        depth=args.depth,
    )

    print("  pool_build ...", file=sys.stderr)
    result = pool_build(golden_set=golden_set, runs=runs, depth=args.depth, strategy="depth")
    done = 0
    # A pool part-way through judging: close a share of the pairs outside the queue
    # windows, as if judged earlier. Counts over closed tasks then cost what they will.
    done = pool_judged_earlier(result.pool, args.done_share)
    queued = JudgingTask.objects.filter(pool=result.pool, status=JudgingTask.Status.OPEN, position__isnull=False).count()
    return {
        "pages": pages,
        "queries": queries,
        "judgments": Judgment.objects.count(),
        "human_judgments": Judgment.objects.filter(source=Judgment.Source.HUMAN).count(),
        "tasks": result.new_tasks,
        "already_labelled": result.already_labelled,
        "queued": queued,
        "window": result.pool.window,
        "pool": result.pool.pk,
        "done": done,
    }


# --- the server ------------------------------------------------------------------------


@contextmanager
def gunicorn_server(args: argparse.Namespace, temp: Path):
    """gunicorn on a free port of 127.0.0.1 in a process group of its own; yields
    (base url, access log path); stopped (TERM, then KILL) on the way out."""
    metrics_dir = temp / "metrics"  # empty at each start, as docker-compose.yml makes it
    metrics_dir.mkdir()
    env = served_settings(
        temp,
        {
            **os.environ,
            "DATABASE_URL": args.database_url,
            "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "127.0.0.1",
            "CELERY_BROKER_URL": args.broker_url,
            "CELERY_TASK_DEFAULT_QUEUE": args.queue,
            "CACHE_URL": args.cache_url,
            "LOG_LEVEL": "WARNING",
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        },
        name="bench_annotators_settings",
    )
    port = free_port()
    access_log = temp / "access.log"
    error_log = temp / "gunicorn.log"
    command = [
        str(Path(sys.executable).with_name("gunicorn")),
        "goldset.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.workers),
        "--worker-class",
        "sync",
        "--backlog",
        "2048",
        "--access-logfile",
        str(access_log),
        "--access-logformat",
        ACCESS_LOG_FORMAT,
        "--error-logfile",
        str(error_log),
        "--log-level",
        "warning",
    ]
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        import requests

        try:
            # The first answer of each worker loads the app (ranx, numba: seconds).
            return requests.get(f"{base}/accounts/login/", headers={"X-Forwarded-Proto": "https"}, timeout=60).status_code == 200
        except requests.RequestException:
            return False

    # The error log takes Django's own warnings (console logging) too.
    with process_started(command, env=env, log_path=error_log, ready=answers, what="gunicorn", timeout=180) as process:
        args.gunicorn_pid = process.pid
        yield base, access_log, error_log


# --- checks and profile ------------------------------------------------------------------


def database_checks(judgments_before: int, last_id_before: int) -> dict:
    from django.db import connection

    from goldenset.models import GoldenSet, Judgment

    golden_set = GoldenSet.objects.get(slug=SLUG)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.id, t.judgments_required, count(*), count(DISTINCT j.annotator_id)
            FROM goldenset_judgment j
            JOIN labeling_judgingtask t
              ON t.golden_set_id = %s AND t.query_id = j.query_id AND t.page_id = j.page_id AND t.kind = 'pool'
            WHERE j.id > %s
            GROUP BY t.id, t.judgments_required
            """,
            [golden_set.pk, last_id_before],
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM goldenset_judgment WHERE id > %s", [last_id_before])
        new_rows = cursor.fetchone()[0]
    over = [r for r in rows if r[2] > r[1]]
    same_person = [r for r in rows if r[3] < r[2]]
    return {
        "judgments_after": Judgment.objects.count(),
        "new_judgments": new_rows,
        "judged_tasks": len(rows),
        "overlap_judged_tasks": sum(1 for r in rows if r[1] > 1),
        "judged_over_required": over,
        "same_annotator_twice": same_person,
        "judgments_off_task": new_rows - sum(r[2] for r in rows),
        "double_handout": [r for r in over if r[1] == 1],
    }


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def report(args: argparse.Namespace, info: dict) -> bool:
    rows, window = info["rows"], info["window"]
    requests_ = [r for r in rows if r[0] in ("next", "submit", "login")]
    measured = [r for r in requests_ if r[1] == "measure"]
    errors = [r for r in requests_ if not r[3]]
    ok_submits_all = sum(1 for r in rows if r[0] == "judged")
    judged = [r for r in rows if r[0] == "judged"]
    print()
    print(
        f"Annotator load: {args.annotators} annotators against gunicorn + PostgreSQL, {info['data']['judgments_before']:,} judgments stored"
    )
    print(
        f"machine: {os.cpu_count()} cores (shared: load average {info['load_before']} before, {info['load_after']} after), "
        f"Python {platform.python_version()}, PostgreSQL {info['server']}, gunicorn {info['gunicorn']} "
        f"({args.workers} sync workers), clients: {args.client_processes} processes of threads on the same machine; "
        f"cache: {'Redis at ' + args.cache_url + ' (sessions cached_db)' if args.cache_url else 'none shared (sessions in the database)'}"
    )
    d = info["data"]
    closed = f", {d['done']:,} of them closed beforehand (--done-share)" if d["done"] else ""
    print(
        f"data: {d['pages']:,} pages, {d['queries']:,} queries, {d['judgments_before']:,} judgments "
        f"({d['human_judgments']:,} human by the annotators); pool of {args.runs} runs at depth {args.depth}: "
        f"{d['tasks']:,} pairs ({d['already_labelled']:,} labelled pairs skipped), {d['queued']:,} queued as tasks "
        f"(window {d['window']} a query){closed}; "
        f"setup {info['setup']:.0f}s, untimed"
    )
    print(
        f"load: warm-up {args.warmup:.0f}s, then {window:.0f}s measured; think time "
        f"{'none (closed loop: every annotator clicks as soon as the pair is shown, the worst case)' if not args.think else f'{args.think:.1f}s +-50% after each judgment (people reading the pair)'}"
    )
    print()
    header = f"{'request':<12}{'count':>8}{'per s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}{'target':>9}  result"
    print(header)
    print("-" * len(header))
    # The latency target is for people judging, who pause to read each pair. A closed loop
    # (no pause) is 20 bots clicking as fast as the server answers: it measures capacity
    # (judgments/s), and its latency is queueing, so it is printed without a target.
    people = args.think > 0
    verdicts = []
    for kind, label in (("next", "next-pair"), ("submit", "submit")):
        times = [r[2] * 1000 for r in measured if r[0] == kind and r[3]]
        p95 = percentile(times, 95)
        verdict = ("PASS" if times and p95 < TARGET_P95_MS else "MISS") if people else "(capacity: no target)"
        verdicts.append(verdict != "MISS")
        target = f"<{int(TARGET_P95_MS)}" if people else "-"
        print(
            f"{label:<12}{len(times):>8}{len(times) / window:>8.1f}{percentile(times, 50):>9.1f}{p95:>9.1f}"
            f"{percentile(times, 99):>9.1f}{max(times, default=float('nan')):>9.1f}{target:>9}  {verdict}"
        )
    server = info["server_times"]
    for kind, label in (("next", "next-pair"), ("submit", "submit")):
        times = [t * 1000 for t in server[kind]]
        print(
            f"{label + ' srv':<12}{len(times):>8}{len(times) / window:>8.1f}{percentile(times, 50):>9.1f}"
            f"{percentile(times, 95):>9.1f}{percentile(times, 99):>9.1f}{max(times, default=float('nan')):>9.1f}"
            f"{'':>9}  (server side, gunicorn access log)"
        )
    measured_ok = [r for r in measured if r[3]]
    measured_judged = sum(1 for r in judged if r[1] == "measure")
    print()
    print(
        f"throughput: {len(measured_ok) / window:.1f} requests/s, {measured_judged / window:.1f} judgments/s "
        f"({measured_judged} judged in the measured window; {ok_submits_all} over the whole run)"
    )
    print(f"errors: {len(errors)}")
    kinds = Counter((r[0], r[4][:160]) for r in errors)
    for (kind, detail), count in kinds.most_common(10):
        print(f"  {count} x {kind}: {detail}")
    cpu = args.cpu
    if cpu:
        cycles = max(sum(1 for r in measured if r[0] == "submit" and r[3]), 1)
        per_cycle = (cpu["app"] + cpu["db"]) / cycles * 1000
        cores = os.cpu_count() or 1
        requests_of = "next-pair + submit" if times_next_pair(args.think) else "the screen's submit"
        print(
            f"CPU in the measured window: app workers {cpu['app']:.1f}s, PostgreSQL backends {cpu['db']:.1f}s of "
            f"{cpu['wall'] * cores:.0f} core-seconds; per judgment ({requests_of}): app "
            f"{cpu['app'] / cycles * 1000:.1f} ms + database {cpu['db'] / cycles * 1000:.1f} ms = {per_cycle:.1f} ms, "
            f"so at most {cores * 1000 / per_cycle:.0f} judgments/s on {cores} cores with nothing else running (no target)"
        )
    waits = args.waits
    if waits.get("samples"):
        active = sum(v for k, v in waits.items() if k != "samples")
        print(
            f"database: {active / waits['samples']:.1f} backends busy on average (pg_stat_activity every 20 ms); "
            f"what they were doing (last statement), share of busy samples:"
        )
        for (wait, what), count in sorted(((k, v) for k, v in waits.items() if k != "samples"), key=lambda kv: -kv[1])[:8]:
            print(f"  {count / active:6.1%}  {wait:<32} {what}")
    checks = info["checks"]
    grew = checks["judgments_after"] - info["data"]["judgments_before"]
    lost_ok = grew == ok_submits_all == checks["new_judgments"]
    print(f"check: judgments grew by {grew:,}, submits accepted (200, no refusal): {ok_submits_all:,}  {'OK' if lost_ok else 'MISMATCH'}")
    print(
        f"check: {checks['judged_tasks']:,} tasks judged ({checks['overlap_judged_tasks']} with overlap); "
        f"judged more often than required: {len(checks['judged_over_required'])} "
        f"(of which tasks without overlap judged twice: {len(checks['double_handout'])}); "
        f"one annotator twice on a task: {len(checks['same_annotator_twice'])}; judgments on no pool task: {checks['judgments_off_task']}"
    )
    for r in (checks["judged_over_required"] + checks["same_annotator_twice"])[:10]:
        print(f"  task {r[0]}: requires {r[1]}, judged {r[2]} times by {r[3]} annotator(s)")
    clean = (
        lost_ok
        and not errors
        and not checks["judged_over_required"]
        and not checks["same_annotator_twice"]
        and checks["judgments_off_task"] == 0
    )
    passed = all(verdicts) and clean
    print()
    if people:
        print(
            f"target: p95 under {TARGET_P95_MS:.0f} ms for next-pair and for submit, no error, no judgment lost, "
            f"no double hand-out  {'PASS' if passed else 'MISS'}"
        )
    else:
        demand = args.annotators / 3.0  # judgments/s of the annotators at 3 s a pair, faster than people judge
        needed = max(demand, TARGET_CAPACITY)
        print(
            f"capacity: {measured_judged / window:.1f} judgments/s sustained, target {needed:.1f}/s or more "
            f"({TARGET_CAPACITY:.0f}/s, and what {args.annotators} annotators at 3 s a pair would ask, {demand:.1f}/s); "
            f"no error, no judgment lost, no double hand-out  {'PASS' if passed and measured_judged / window >= needed else 'MISS'}"
        )
        passed = passed and measured_judged / window >= needed
    return passed


# --- main --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url, DEBUG="false", CELERY_BROKER_URL=args.broker_url, CELERY_TASK_DEFAULT_QUEUE=args.queue)
    import gunicorn
    from django.core.management import call_command
    from django.db import connection

    from goldenset.models import Judgment

    info: dict = {"gunicorn": gunicorn.__version__}
    purge_queue(args.broker_url, args.queue)
    if args.cache_url:
        redis_keys_delete(args.cache_url)  # no session or count of an earlier run is read
    try:
        with scratch_database(args.database_url, keep=args.keep), tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp:
            started = time.perf_counter()
            call_command("migrate", verbosity=0)
            print(f"generating (seed {args.seed}) ...", file=sys.stderr)
            data = generate(args)
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
            info["server"] = server_version()
            info["setup"] = time.perf_counter() - started
            connection.close()
            print("starting gunicorn ...", file=sys.stderr)
            verdicts = []
            with gunicorn_server(args, Path(temp)) as (base, access_log, error_log):
                # One phase a --think value, one after the other against the same server and
                # data (each phase judges on from where the one before left the queue).
                for think in args.thinks:
                    args.think = think
                    data["judgments_before"] = Judgment.objects.count()
                    last_id = Judgment.objects.order_by("-id").values_list("id", flat=True).first() or 0
                    info["data"] = data
                    connection.close()
                    offset = access_log.stat().st_size if access_log.exists() else 0
                    info["load_before"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                    print(
                        f"{args.annotators} annotators for {args.warmup:.0f}s + {args.duration:.0f}s against {base}, think {think:g}s ...",
                        file=sys.stderr,
                    )
                    info["rows"], info["window"] = load(args, base, SLUG)
                    info["load_after"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                    info["server_times"] = server_times(access_log, offset)
                    info["checks"] = database_checks(data["judgments_before"], last_id)
                    verdicts.append((think, report(args, info)))
                server_errors = error_log.read_text(errors="replace").strip()
            passed = all(ok for _, ok in verdicts)
            if len(verdicts) > 1:
                print()
                print(
                    "phases: "
                    + "; ".join(
                        f"{'closed loop (no pause, capacity)' if not think else f'think {think:g}s (latency)'} {'PASS' if ok else 'MISS'}"
                        for think, ok in verdicts
                    )
                    + f"  => {'PASS' if passed else 'MISS'} (every phase must pass: the latency target in the "
                    f"phases with a pause, capacity and correctness in the closed loop)"
                )
            if server_errors:
                print(f"\ngunicorn error log (last 3000 characters):\n{server_errors[-3000:]}")
            if args.profile:
                from bench.annotators_profile import profile

                profile(args)
    finally:
        purge_queue(args.broker_url, args.queue)
    sys.exit(0 if passed else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=1_000_000, help="judgments stored before the load")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured (after --warmup)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load before measuring")
    parser.add_argument(
        "--think",
        type=float,
        nargs="+",
        default=[0.0, 3.0],
        dest="thinks",
        help="seconds an annotator pauses after each judgment; several values run one phase each, one after the "
        "other (default 0 3: the closed loop, then annotators who read for about 3 s as people do)",
    )
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (3, as docker-compose.yml and the Dockerfile run it)")
    parser.add_argument("--client-processes", type=int, default=4, help="processes the annotator threads are spread over")
    parser.add_argument("--pages", type=int, default=200_000, help="corpus size")
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--depth", type=int, default=20, help="pool depth (and run depth)")
    parser.add_argument("--candidates", type=int, default=60, help="pages a query's runs draw their top from")
    parser.add_argument("--done-share", type=float, default=0.0, help="share of the pool's unqueued tasks closed beforehand (0-1)")
    parser.add_argument("--seed", type=int, default=20240601)
    database_url_argument(parser, "goldset_bench_annotators")
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/10", help="Redis for Celery (a queue of this run's own)")
    parser.add_argument(
        "--cache-url",
        default="redis://127.0.0.1:6379/11",
        help="the served app's CACHE_URL, a Redis database of its own (emptied); '' for none",
    )
    parser.add_argument("--keep", action="store_true", help="do not drop the database at the end (debugging)")
    parser.add_argument("--profile", action="store_true", help="then profile one next-pair and one submit in-process")
    args = parser.parse_args()
    if any(think < 0 for think in args.thinks):
        parser.error("--think cannot be negative")
    args.think = args.thinks[0]
    if args.annotators < 1 or args.duration <= 0 or args.workers < 1 or args.client_processes < 1:
        parser.error("--annotators, --duration, --workers and --client-processes must be positive")
    if args.candidates < args.depth:
        parser.error("--candidates must be at least --depth")
    if args.judgments < args.queries:
        parser.error("--judgments must be at least --queries")
    args.client_processes = min(args.client_processes, args.annotators)
    args.queue = f"goldset-bench-annotators-{os.getpid()}"
    run(args)


if __name__ == "__main__":
    main()
