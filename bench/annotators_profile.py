"""The --profile part of bench/annotators.py: one next-pair and one submit rendered in this
process, their SQL with EXPLAIN ANALYZE, and a cProfile of the cycles (moved out of that
script, which had grown past 700 lines)."""

import argparse
import cProfile
import io
import pstats
import re
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.judging_load import JUDGED, JUDGING_ERROR, TASK_ID  # noqa: E402

SLUG = "bench-annotators"  # the set bench/annotators.py generates

PROFILE_CYCLES = 20


def profile(args: argparse.Namespace) -> None:
    """In this process (Django's test client, DEBUG off, nobody else judging): the median
    wall and CPU time of next-pair and submit over PROFILE_CYCLES cycles; the SQL of one
    of each, with EXPLAIN ANALYZE of the statements that take the database over 1 ms;
    and a cProfile of the cycles, restricted to the app's own code."""
    import statistics
    import warnings

    # This process runs goldset.settings without collected static files; the pages rendered
    # here are fragments that need none.
    warnings.filterwarnings("ignore", message="No directory at")
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user = get_user_model().objects.get(username="annotator00")
    client = Client(HTTP_HX_REQUEST="true")
    client.force_login(user)

    judged = {"count": ""}  # what the fragment carries, posted back as the page does

    def next_pair():
        answer = client.get(f"/label/{SLUG}/next/")
        match = JUDGED.search(answer.content)
        judged["count"] = match.group(1).decode() if match else ""
        return answer, int(TASK_ID.search(answer.content).group(1))

    def submit(task_id: int):
        answer = client.post(
            f"/label/{SLUG}/tasks/{task_id}/judge/",
            {"grade": "2", "note": "", "seconds": "3.0", "judged": judged["count"]},
        )
        if JUDGING_ERROR.search(answer.content):
            raise SystemExit(f"--profile: the judge view refused task {task_id}: {JUDGING_ERROR.search(answer.content).group(1)!r}")
        return answer

    for _ in range(3):  # the first requests fill the session's counts and the process's caches
        submit(next_pair()[1])
    times: dict[str, list[tuple[float, float]]] = {"next": [], "submit": []}
    for _ in range(PROFILE_CYCLES):  # timed without the profiler, which would double the CPU
        wall, cpu = time.perf_counter(), time.process_time()
        _, task_id = next_pair()
        times["next"].append((time.perf_counter() - wall, time.process_time() - cpu))
        wall, cpu = time.perf_counter(), time.process_time()
        submit(task_id)
        times["submit"].append((time.perf_counter() - wall, time.process_time() - cpu))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(PROFILE_CYCLES):
        submit(next_pair()[1])
    profiler.disable()
    print(
        f"\n--profile: {PROFILE_CYCLES} cycles in this process, one annotator, nobody else judging "
        f"(load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])})"
    )
    for what, pairs in times.items():
        print(
            f"  {what:<7} median wall {statistics.median(w for w, _ in pairs) * 1000:6.1f} ms, "
            f"median CPU of this process {statistics.median(c for _, c in pairs) * 1000:6.1f} ms"
        )

    captured_by_kind = {}
    with CaptureQueriesContext(connection) as captured:
        _, task_id = next_pair()
    captured_by_kind["next"] = captured.captured_queries
    with CaptureQueriesContext(connection) as captured:
        submit(task_id)
    captured_by_kind["submit"] = captured.captured_queries
    for what, queries in captured_by_kind.items():
        commits = sum(1 for q in queries if q["sql"].strip().upper() == "COMMIT")
        print(f"\n=== {what}: {len(queries)} statements ({commits} COMMIT), wall time as Django saw each:")
        for q in queries:
            print(f"  {float(q['time']) * 1000:6.1f} ms  {' '.join(q['sql'].split())[:240]}")
        for q in queries:
            statement = q["sql"]
            if not statement.lstrip().upper().startswith(("SELECT", "UPDATE", "INSERT", "DELETE", "WITH")):
                continue
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")  # rolled back: an UPDATE or INSERT must not stay
                try:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement)
                    plan = [line for (line,) in cursor.fetchall()]
                except Exception as error:  # noqa: BLE001 - a statement EXPLAIN cannot replay as logged
                    plan = [f"(could not EXPLAIN: {error})", "Execution Time: 0 ms"]
                finally:
                    cursor.execute("ROLLBACK")
            executed = next((float(line.split(":")[1].split()[0]) for line in plan if line.startswith("Execution Time")), 0.0)
            if executed > 1.0:
                print(f"\n  EXPLAIN ANALYZE ({executed:.1f} ms in the database): {' '.join(statement.split())[:300]}")
                for line in plan:
                    print("    " + line)

    stats = pstats.Stats(profiler, stream=io.StringIO())
    stats.stream = sys.stdout
    # Own time by area: what a request's CPU goes to besides the app's own functions.
    areas = [
        ("ORM: compiling SQL", "/django/db/models/sql/"),
        ("ORM: querysets, models, expressions", "/django/db/models/"),
        ("database driver and waits", "/django/db/backends/"),
        ("database driver and waits", "/psycopg"),
        ("templates", "/django/template"),
        ("middleware, sessions, auth, messages", "/django/contrib/"),
        ("middleware, sessions, auth, messages", "/django/middleware/"),
        ("middleware, sessions, auth, messages", "/django_htmx/"),
        ("request handling, URLs, responses", "/django/core/"),
        ("request handling, URLs, responses", "/django/http/"),
        ("request handling, URLs, responses", "/django/urls/"),
        ("test client", "/django/test/"),
        ("numpy", "/numpy/"),
        ("the app's code", str(REPO) + "/"),
    ]
    by_area: Counter = Counter()
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():
        by_area[next((name for name, part in areas if part in filename), "other (Python, libraries)")] += own
    total = sum(by_area.values()) or 1.0
    print(
        f"\nOwn time of the {PROFILE_CYCLES} cycles by area (cProfile's clock is wall time, so the driver's line "
        f"includes waiting for the database; the profiler inflates the rest about evenly):"
    )
    for name, seconds in by_area.most_common():
        print(f"  {seconds / total:6.1%}  {seconds * 1000 / PROFILE_CYCLES:6.2f} ms a cycle  {name}")
    print(f"\ncProfile of the {PROFILE_CYCLES} cycles (next-pair + submit), the app's own functions by cumulative time:")
    stats.sort_stats("cumulative").print_stats(re.escape(str(REPO)) + r"/(labeling|goldenset|evaluation|lib|goldset)/", 25)


# --- report ------------------------------------------------------------------------------
