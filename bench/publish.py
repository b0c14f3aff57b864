"""version_publish against a plain SQL snapshot of the same resolved labels, in the same run.

    .venv/bin/python bench/publish.py [--rounds 2] [--only large,recompute,sqlite] [--profile]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_publish]

Three sets, each made the same for the same seed, each published by the real
`version_publish` (what the publish job runs, inside its transaction) and snapshotted by a
reference in plain SQL, one after the other in each round, both rolled back at the end of
the round so that the next round starts from the same database:

- large (PostgreSQL): bench/export.py's large set, 20,000 queries x 50 imported judgments
  = 1,000,000 labels on a corpus of 200,000 pages (with a page and a query slice), loaded
  by COPY (bench.export.load_fixture). Target: within 3x of the reference.
- recompute (PostgreSQL): bench/recompute.py's set, 10,000 queries with 5 relevant and 0-2
  non-relevant labels each (about 60,000) on a corpus of 100,000 pages, made through
  golden_set_create. Target: under 1 s.
- sqlite (the embedded default, WAL): 10,000 queries x 50 imported judgments = 500,000
  labels on 100,000 pages, loaded with sqlite3's executemany; run in a child process of
  this script with DATABASE_URL pointing at a temporary file. Target: within 3x of the
  reference, which runs through Python's plain sqlite3 module on the same file, with the
  app's pragmas (WAL, synchronous NORMAL, foreign keys on, so every row's keys are
  checked on both sides).

The reference is the least a snapshot can do, in one transaction: a version row, then
INSERT ... SELECT of the resolved labels (the latest judgment of each pair of an active
query, which is what the imported sets resolve to; numbered by row_number in (query, page)
order), of the active queries with their metadata, and of the labelled pages with their
metadata, date and content hash. It computes no content hash and no natural order, which
version_publish must.

Each round checks that version_publish wrote as many labels, queries and pages as the
reference did. `--profile` prints cProfile's top functions of the last round's publish.
The scratch PostgreSQL database and the SQLite file are dropped at the end, even when a
step fails. Figures are from a shared 2-core machine unless said otherwise.
"""

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database  # noqa: E402

LARGE_TARGET = 3.0  # x the reference
RECOMPUTE_TARGET_SECONDS = 1.0
SQLITE_TARGET = 3.0  # x the reference
SEED = 20240601

# The reference's statements, for both databases (%(name)s parameters, psycopg and
# sqlite3's named style are converted below). The latest judgment of each pair of an
# active query: what a set of imported judgments resolves to.
REFERENCE_LABELS = """
INSERT INTO goldenset_versionlabel (version_id, query_id, page_id, grade, position)
SELECT :version, query_id, page_id, grade, row_number() OVER (ORDER BY query_id, page_id) - 1
FROM (
    SELECT j.query_id, j.page_id, j.grade,
           row_number() OVER (PARTITION BY j.query_id, j.page_id ORDER BY j.id DESC) AS newest
    FROM goldenset_judgment j JOIN goldenset_query q ON q.id = j.query_id
    WHERE q.golden_set_id = :golden_set AND q.retired_at IS NULL
) latest
WHERE newest = 1
"""
REFERENCE_QUERIES = """
INSERT INTO goldenset_versionquery (version_id, query_id, metadata)
SELECT :version, id, metadata FROM goldenset_query WHERE golden_set_id = :golden_set AND retired_at IS NULL
"""
REFERENCE_PAGES = """
INSERT INTO goldenset_versionpage (version_id, page_id, metadata, published_at, content_hash)
SELECT :version, p.id, p.metadata, p.published_at, p.content_hash FROM goldenset_page p
WHERE p.id IN (SELECT page_id FROM goldenset_versionlabel WHERE version_id = :version)
"""
REFERENCE_VERSION = """
INSERT INTO goldenset_version (golden_set_id, number, content_hash, note, created_at, relevance_threshold, k_first,
    k_final, query_slice_fields, page_slice_fields, query_count, label_count, relevant_count, queries_without_relevant)
VALUES (:golden_set, 999999, '', 'reference', :now, 1, 100, 8, '[]', '[]', 0, 0, 0, 0)
"""


def _pg(statement: str) -> str:
    for name in ("version", "golden_set", "now"):
        statement = statement.replace(f":{name}", f"%({name})s")
    return statement


@dataclass
class Measured:
    name: str
    labels: int = 0
    queries: int = 0
    pages: int = 0
    publish: list[float] = field(default_factory=list)
    reference: list[float] = field(default_factory=list)
    profile: str = ""

    @property
    def ratio(self) -> float:
        return statistics.median(self.publish) / statistics.median(self.reference)


# --- the sets ------------------------------------------------------------------------------


def load_large(database_url: str) -> int:
    """bench/export.py's large set, by COPY; returns the golden set's pk."""
    from bench.export import load_fixture
    from goldenset.models import GoldenSet

    fixture = argparse.Namespace(queries=20_000, small_queries=0, pages_per_query=50, corpus=200_000, seed=SEED)
    load_fixture(database_url, fixture)
    return GoldenSet.objects.get(slug="bench-large").pk


def load_recompute() -> int:
    """bench/recompute.py's set, through golden_set_create; returns the golden set's pk."""
    from bench.recompute import SLUG, generate_dataset, golden_set_source
    from goldenset.models import GoldenSet
    from goldenset.services import golden_set_create

    data = generate_dataset(pages=100_000, queries=10_000, depth=100, seed=SEED)
    golden_set_create(slug=SLUG, name="bench recompute", source=golden_set_source(data))
    return GoldenSet.objects.get(slug=SLUG).pk


def load_sqlite(path: str, *, queries: int, pages_per_query: int, corpus: int) -> int:
    """The SQLite set, written with sqlite3 straight into the migrated tables; returns its pk."""
    from goldenset.models import Corpus, GoldenSet, default_team

    corpus_row = Corpus.objects.create(slug="bench", name="bench", team=default_team())
    golden_set = GoldenSet.objects.create(
        team=corpus_row.team,
        slug="bench-sqlite",
        name="bench sqlite",
        corpus=corpus_row,
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
    )
    rng = random.Random(SEED)
    now = datetime.now(UTC).isoformat()
    kinds, langs = ("article", "faq", "manual"), ("en", "de", "fr")
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO goldenset_page (corpus_id, doc_id, title, text, url, has_text, metadata, content_hash, created_at) "
            "VALUES (?, ?, ?, ?, '', 1, ?, ?, ?)",
            (
                (corpus_row.pk, doc_id_of(n), f"page {n}", f"text of page {n}", json.dumps({"kind": kinds[n % 3]}), f"{n:064x}", now)
                for n in range(corpus)
            ),
        )
        page_pk = [row[0] for row in conn.execute("SELECT id FROM goldenset_page WHERE corpus_id = ? ORDER BY id", (corpus_row.pk,))]
        conn.executemany(
            "INSERT INTO goldenset_query (golden_set_id, query_id, text, has_text, metadata, created_at) VALUES (?, ?, ?, 1, ?, ?)",
            ((golden_set.pk, f"q{q}", f"question {q}", json.dumps({"lang": langs[q % 3]}), now) for q in range(queries)),
        )
        query_pk = [row[0] for row in conn.execute("SELECT id FROM goldenset_query WHERE golden_set_id = ? ORDER BY id", (golden_set.pk,))]
        rows = []
        for q in range(queries):
            start = rng.randrange(corpus)
            for j in range(pages_per_query):
                n = (start + j * 104729) % corpus
                rows.append((query_pk[q], page_pk[n], rng.choices((0, 1, 2, 3), weights=(4, 3, 2, 1))[0], f"{n:064x}", now))
        conn.executemany(
            "INSERT INTO goldenset_judgment (query_id, page_id, grade, source, note, page_hash, created_at) "
            "VALUES (?, ?, ?, 'imported', '', ?, ?)",
            rows,
        )
        conn.execute("ANALYZE")
    return golden_set.pk


# --- one round -----------------------------------------------------------------------------


class _Rollback(Exception):
    pass


def publish_once(golden_set_pk: int, profile: bool) -> tuple[float, tuple[int, int, int], str]:
    """version_publish of the set, timed, inside a transaction rolled back after; returns
    (seconds, (labels, queries, pages) written, cProfile text if asked)."""
    from django.db import transaction

    from goldenset.models import GoldenSet, VersionPage
    from goldenset.services import version_publish

    golden_set = GoldenSet.objects.get(pk=golden_set_pk)
    profiler = cProfile.Profile() if profile else None
    counts, text = (0, 0, 0), ""
    try:
        with transaction.atomic():
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            version = version_publish(golden_set=golden_set, note="bench")
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - started
            counts = (version.label_count, version.query_count, VersionPage.objects.filter(version=version).count())
            raise _Rollback
    except _Rollback:
        pass
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        text = out.getvalue()
    return seconds, counts, text


def reference_pg(golden_set_pk: int) -> tuple[float, tuple[int, int, int]]:
    """The plain SQL snapshot on PostgreSQL, through Django's connection, rolled back."""
    from django.db import connection, transaction

    params = {"golden_set": golden_set_pk, "now": datetime.now(UTC)}
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute(_pg(REFERENCE_VERSION) + " RETURNING id", params)
            params["version"] = cursor.fetchone()[0]
            counts = []
            for statement in (REFERENCE_LABELS, REFERENCE_QUERIES, REFERENCE_PAGES):
                cursor.execute(_pg(statement), params)
                counts.append(cursor.rowcount)
            seconds = time.perf_counter() - started
            raise _Rollback
    except _Rollback:
        pass
    return seconds, tuple(counts)


def reference_sqlite(path: str, golden_set_pk: int) -> tuple[float, tuple[int, int, int]]:
    """The plain SQL snapshot with Python's sqlite3 module on the same file, rolled back."""
    conn = sqlite3.connect(path, isolation_level=None)
    # The pragmas of the app's own connection (goldset.settings.sqlite_database): foreign
    # keys checked on every row written, as they are for the publish.
    conn.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
    try:
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        params = {"golden_set": golden_set_pk, "now": datetime.now(UTC).isoformat()}
        params["version"] = conn.execute(REFERENCE_VERSION, params).lastrowid
        counts = tuple(conn.execute(statement, params).rowcount for statement in (REFERENCE_LABELS, REFERENCE_QUERIES, REFERENCE_PAGES))
        seconds = time.perf_counter() - started
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    return seconds, counts


def measure(name: str, golden_set_pk: int, reference, rounds: int, profile: bool) -> Measured:
    result = Measured(name)
    for number in range(1, rounds + 1):
        seconds, expected = reference(golden_set_pk)
        result.reference.append(seconds)
        published, counts, text = publish_once(golden_set_pk, profile and number == rounds)
        result.publish.append(published)
        result.profile = text or result.profile
        if counts != expected:
            raise SystemExit(f"{name}: version_publish wrote {counts} (labels, queries, pages), the reference {expected}")
        result.labels, result.queries, result.pages = counts
        print(f"  {name} round {number}: publish {published:.2f}s, reference {seconds:.2f}s", file=sys.stderr)
    return result


# --- the two processes ---------------------------------------------------------------------------


def run_postgres(args: argparse.Namespace, which: list[str]) -> list[Measured]:
    from django.core.management import call_command
    from django.db import connection

    results = []
    django_setup(args.database_url)
    with scratch_database(args.database_url):
        call_command("migrate", verbosity=0)
        sets = {}
        if "large" in which:
            print("loading the large set by COPY (200,000 pages, 20,000 queries x 50 judgments) ...", file=sys.stderr)
            sets["large"] = load_large(args.database_url)
        if "recompute" in which:
            print("loading bench/recompute.py's set through golden_set_create (100,000 pages, 10,000 queries) ...", file=sys.stderr)
            sets["recompute"] = load_recompute()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        for name, pk in sets.items():
            results.append(measure(name, pk, reference_pg, args.rounds, args.profile))
        connection.close()
    return results


def run_sqlite_child(args: argparse.Namespace) -> None:
    """In the child process: Django on the SQLite file, the set loaded, the rounds measured;
    the result printed as one JSON line."""
    path = args.sqlite_child
    os.environ.pop("DATABASE_URL", None)
    os.environ["SQLITE_PATH"] = path
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print("loading the SQLite set (100,000 pages, 10,000 queries x 50 judgments) ...", file=sys.stderr)
    pk = load_sqlite(path, queries=10_000, pages_per_query=50, corpus=100_000)
    result = measure("sqlite", pk, lambda pk: reference_sqlite(path, pk), args.rounds, args.profile)
    print(json.dumps(result.__dict__))


def run_sqlite(args: argparse.Namespace) -> Measured:
    with tempfile.TemporaryDirectory(prefix="goldset-bench-publish-") as temp:
        command = [sys.executable, __file__, "--sqlite-child", str(Path(temp) / "bench.sqlite3"), "--rounds", str(args.rounds)]
        if args.profile:
            command.append("--profile")
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return Measured(**json.loads(done.stdout.strip().splitlines()[-1]))


def report(results: list[Measured], args: argparse.Namespace) -> None:
    print()
    print(f"version_publish against a plain SQL snapshot of the same rows, same run; median of {args.rounds} round(s)")
    print(f"machine: {os.cpu_count()} cores (shared with other work), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}")
    print()
    header = f"{'set':<44}{'labels':>10}{'publish':>10}{'reference':>11}{'ratio':>8}  target"
    print(header)
    print("-" * len(header))
    for result in results:
        publish, reference = statistics.median(result.publish), statistics.median(result.reference)
        if result.name == "recompute":
            verdict = f"< {RECOMPUTE_TARGET_SECONDS:.0f} s: {'PASS' if publish < RECOMPUTE_TARGET_SECONDS else 'MISS'}"
        else:
            target = LARGE_TARGET if result.name == "large" else SQLITE_TARGET
            verdict = f"<= {target:.0f}x: {'PASS' if result.ratio <= target else 'MISS'}"
        title = {
            "large": "large (PostgreSQL, bench/export.py's set)",
            "recompute": "recompute (PostgreSQL, bench/recompute.py's)",
            "sqlite": "sqlite (embedded default, WAL)",
        }[result.name]
        print(f"{title:<44}{result.labels:>10,}{publish:>9.2f}s{reference:>10.2f}s{result.ratio:>7.2f}x  {verdict}")
    print()
    for result in results:
        rounds = ", ".join(f"{p:.2f}/{r:.2f}" for p, r in zip(result.publish, result.reference))
        print(
            f"{result.name}: {result.queries:,} queries, {result.pages:,} pages snapshotted; seconds per round (publish/reference): {rounds}"
        )
    for result in results:
        if result.profile:
            print(f"\n--- cProfile of the last publish of {result.name} ---\n{result.profile}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds to take the median of (default 2)")
    parser.add_argument("--only", default="large,recompute,sqlite", help="which sets, comma separated (default all three)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's view of the last publish of each set")
    parser.add_argument("--sqlite-child", help=argparse.SUPPRESS)
    database_url_argument(parser, "goldset_bench_publish")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.sqlite_child:
        run_sqlite_child(args)
        return
    which = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(which) - {"large", "recompute", "sqlite"}
    if unknown:
        parser.error(f"--only: unknown set(s) {sorted(unknown)}")
    results = []
    if "sqlite" in which:
        results.append(run_sqlite(args))
    if {"large", "recompute"} & set(which):
        results = run_postgres(args, which) + results
    report(results, args)


if __name__ == "__main__":
    main()
