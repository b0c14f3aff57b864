"""Qrels streamed through the API against a plain PostgreSQL COPY of the same rows.

    .venv/bin/python bench/export.py [--queries 20000 --pages-per-query 50 --corpus 200000]
        [--small-queries 2000] [--rounds 3] [--seed 20240601]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_export]

Creates the database named by --database-url (it must not exist beforehand), migrates it,
and loads, the same for the same seed: a corpus of --corpus pages (ids like kb/000123#2,
with a page slice `kind`), and two golden sets on it, `bench-small` with --small-queries
queries and `bench-large` with --queries queries (ids q0, q1, ...; a query slice `lang`),
each query judged on --pages-per-query distinct pages (grades 0-3, imported). Pages,
queries and judgments go in by COPY straight into Goldset's tables: they are the fixture,
not what is measured. Each set's version is then made by the real `version_publish`
(timed, for information), so the version rows are exactly what the app writes, and the
database is ANALYZEd, as autovacuum would soon after a load this size.

Then it starts the app as a deployment runs it, gunicorn with one sync worker on
127.0.0.1 (DEBUG off), and, with a read token made by `api_token_create`:

- time: GET /api/v1/golden-sets/bench-large/versions/1/qrels (TREC) read in 64 KiB chunks
  by an HTTP client in this process, from the request to the last byte, against
  COPY (SELECT query_id, doc_id, grade FROM versionlabel JOIN query JOIN page WHERE
  version ORDER BY position) TO STDOUT read in blocks by psycopg, in the same run, on the
  same server. Median of --rounds rounds, each round one of each, back to back. Target:
  the API within 2x the COPY time.
- memory: the peak resident memory (VmHWM) of the gunicorn worker that served the export,
  on a fresh server for each set: after a first small request (the app loaded), then
  after streaming the small version's qrels, and (another fresh server) after streaming
  the large one's --rounds times. Target: flat in the number of labels, i.e. the peak
  after the large version (10x the labels by default) within 10% of the peak after the
  small one.

The body the API sent is checked, by sha256, to be byte for byte what
COPY (SELECT query_id || ' 0 ' || doc_id || ' ' || grade ... ORDER BY position) writes,
so both sides moved the same rows in the same order. The servers are stopped and the
database dropped at the end, even when a step fails.
"""

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import (  # noqa: E402
    database_url_argument,
    django_setup,
    gunicorn_started,
    peak_memory,
    scratch_database,
    server_version,
    version_labels_copy,
)

TIME_TARGET = 2.0
MEMORY_TARGET = 1.10  # peak after the large version / peak after the small one
CHUNK = 1 << 16
LANGS = ("en", "de", "fr")
KINDS = ("article", "faq", "manual")

# The same rows as TREC lines, for the byte-for-byte check (ids hold no backslash, the one
# character COPY's text format would escape).
TREC_LINE = "q.query_id || ' 0 ' || p.doc_id || ' ' || l.grade"


# --- the database ----------------------------------------------------------------------------


def load_fixture(database_url: str, args: argparse.Namespace) -> dict[str, int]:
    """The corpus, both golden sets and their judgments, by COPY. Returns {slug: judgments}."""
    from goldenset.models import Corpus, GoldenSet, default_team

    corpus = Corpus.objects.create(slug="bench", name="bench", team=default_team())
    sets = {
        "bench-small": (
            GoldenSet.objects.create(
                slug="bench-small",
                name="bench small",
                corpus=corpus,
                team=corpus.team,
                query_slice_fields=["lang"],
                page_slice_fields=["kind"],
            ),
            args.small_queries,
        ),
        "bench-large": (
            GoldenSet.objects.create(
                slug="bench-large",
                name="bench large",
                corpus=corpus,
                team=corpus.team,
                query_slice_fields=["lang"],
                page_slice_fields=["kind"],
            ),
            args.queries,
        ),
    }
    rng = random.Random(args.seed)
    now = datetime.now(UTC)
    page_hash = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(args.corpus)]
    counts = {}
    with psycopg.connect(database_url) as conn, conn.cursor() as cursor:
        with cursor.copy(
            "COPY goldenset_page (corpus_id, doc_id, title, text, url, has_text, metadata, content_hash, created_at) FROM STDIN"
        ) as copy:
            for n in range(args.corpus):
                copy.write_row(
                    (
                        corpus.id,
                        doc_id_of(n),
                        f"page {n}",
                        f"text of page {n}",
                        "",
                        True,
                        json.dumps({"kind": KINDS[n % len(KINDS)]}),
                        page_hash[n],
                        now,
                    )
                )
        cursor.execute("SELECT id FROM goldenset_page WHERE corpus_id = %s ORDER BY id", (corpus.id,))
        page_pk = [row[0] for row in cursor.fetchall()]  # in COPY order, which is n
        for slug, (golden_set, queries) in sets.items():
            with cursor.copy("COPY goldenset_query (golden_set_id, query_id, text, has_text, metadata, created_at) FROM STDIN") as copy:
                for q in range(queries):
                    copy.write_row((golden_set.id, f"q{q}", f"question {q}", True, json.dumps({"lang": LANGS[q % len(LANGS)]}), now))
            cursor.execute("SELECT id FROM goldenset_query WHERE golden_set_id = %s ORDER BY id", (golden_set.id,))
            query_pk = [row[0] for row in cursor.fetchall()]
            with cursor.copy("COPY goldenset_judgment (query_id, page_id, grade, source, note, page_hash, created_at) FROM STDIN") as copy:
                for q in range(queries):
                    start = rng.randrange(args.corpus)
                    for j in range(args.pages_per_query):
                        # 104729 is prime, so the pages of one query are distinct.
                        n = (start + j * 104729) % args.corpus
                        grade = rng.choices((0, 1, 2, 3), weights=(4, 3, 2, 1))[0]
                        copy.write_row((query_pk[q], page_pk[n], grade, "imported", "", page_hash[n], now))
            counts[slug] = queries * args.pages_per_query
        conn.commit()
    return counts


# --- the server ------------------------------------------------------------------------------

# --- measuring -------------------------------------------------------------------------------


@dataclass
class Download:
    seconds: float
    size: int
    sha256: str


def api_download(base: str, slug: str, secret: str) -> Download:
    """GET the TREC qrels of version 1, read in CHUNK-byte pieces, hashed as they come."""
    digest = hashlib.sha256()
    size = 0
    start = time.perf_counter()
    with requests.get(
        f"{base}/api/v1/golden-sets/{slug}/versions/1/qrels",
        params={"format": "trec"},
        # identity: the plain stream against COPY, as measured before the API gzipped qrels
        # for clients asking for it (requests does by default).
        headers={"Authorization": f"Bearer {secret}", "Accept-Encoding": "identity"},
        stream=True,
        timeout=600,
    ) as response:
        response.raise_for_status()
        for chunk in response.iter_content(chunk_size=CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return Download(time.perf_counter() - start, size, digest.hexdigest())


def copy_download(database_url: str, query: str, hashed: bool = False) -> Download:
    """The rows of a COPY ... TO STDOUT, read block by block (hashed if asked)."""
    digest = hashlib.sha256()
    size = 0
    start = time.perf_counter()
    with psycopg.connect(database_url) as conn, conn.cursor().copy(query) as copy:
        for block in copy:
            if hashed:
                digest.update(block)
            size += len(block)
    return Download(time.perf_counter() - start, size, digest.hexdigest())


@dataclass
class Result:
    labels: dict[str, int] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)
    publish_seconds: dict[str, float] = field(default_factory=dict)
    api: list[Download] = field(default_factory=list)
    copy: list[Download] = field(default_factory=list)
    body_checked: bool = False
    memory: dict[str, int] = field(default_factory=dict)
    server_version: str = ""


def measure(args: argparse.Namespace, work: Path) -> Result:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from api.services import api_token_create
    from goldenset.models import GoldenSet, Membership
    from goldenset.services import membership_grant, version_publish

    result = Result()
    call_command("migrate", verbosity=0)
    result.server_version = server_version()
    print(
        f"loading the fixture by COPY ({args.corpus} pages, {args.small_queries} + {args.queries} queries "
        f"x {args.pages_per_query} judgments) ...",
        file=sys.stderr,
    )
    load_fixture(args.database_url, args)
    owner = get_user_model().objects.create_user("bench")
    versions = {}
    for slug in ("bench-small", "bench-large"):
        golden_set = GoldenSet.objects.get(slug=slug)
        membership_grant(user=owner, golden_set=golden_set, role=Membership.Role.MANAGER)
        print(f"version_publish {slug} ...", file=sys.stderr)
        start = time.perf_counter()
        versions[slug] = version_publish(golden_set=golden_set, user=owner, note="bench")
        result.publish_seconds[slug] = time.perf_counter() - start
        result.labels[slug] = versions[slug].label_count
        result.queries[slug] = versions[slug].query_count
    _, secret = api_token_create(owner=owner, scope="read")
    # Fresh planner statistics, as autovacuum gathers within a minute of a load this size;
    # without them both sides would be planned on guesses.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    connection.close()

    log = work / "gunicorn.log"
    print("memory: a fresh server streams the small version ...", file=sys.stderr)
    with gunicorn_started(args.database_url, log) as (base, worker):
        requests.get(f"{base}/api/v1/golden-sets/", headers={"Authorization": f"Bearer {secret}"}, timeout=60).raise_for_status()
        result.memory["small: after the first request"] = peak_memory(worker)
        api_download(base, "bench-small", secret)
        result.memory["small: after streaming its qrels"] = peak_memory(worker)

    print(f"time and memory: a fresh server streams the large version, {args.rounds} round(s) against COPY ...", file=sys.stderr)
    large = versions["bench-large"]
    with gunicorn_started(args.database_url, log) as (base, worker):
        requests.get(f"{base}/api/v1/golden-sets/", headers={"Authorization": f"Bearer {secret}"}, timeout=60).raise_for_status()
        result.memory["large: after the first request"] = peak_memory(worker)
        for number in range(1, args.rounds + 1):
            result.api.append(api_download(base, "bench-large", secret))
            result.copy.append(copy_download(args.database_url, version_labels_copy(large.id)))
            print(f"  round {number}: API {result.api[-1].seconds:.2f}s, COPY {result.copy[-1].seconds:.2f}s", file=sys.stderr)
        result.memory["large: after streaming its qrels"] = peak_memory(worker)

    reference = copy_download(args.database_url, version_labels_copy(large.id, TREC_LINE), hashed=True)
    if any(download.sha256 != reference.sha256 or download.size != reference.size for download in result.api):
        raise SystemExit("the API's body differs from COPY's TREC lines of the same version")
    result.body_checked = True
    return result


def report(args: argparse.Namespace, result: Result) -> None:
    api_time = statistics.median(d.seconds for d in result.api)
    copy_time = statistics.median(d.seconds for d in result.copy)
    ratio = api_time / copy_time
    mb = 1024 * 1024
    small_peak = result.memory["small: after streaming its qrels"]
    large_peak = result.memory["large: after streaming its qrels"]
    growth = large_peak / small_peak
    large, small = "bench-large", "bench-small"
    print()
    print("Qrels through the API (gunicorn, 1 sync worker, DEBUG off) against PostgreSQL COPY, same run")
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, psycopg {psycopg.__version__} "
        f"({psycopg.pq.__impl__}), PostgreSQL {result.server_version}"
    )
    print(
        f"data: {result.labels[large]:,} labels ({result.queries[large]:,} queries x {args.pages_per_query} pages) in the large "
        f"version, {result.labels[small]:,} in the small one, corpus of {args.corpus:,} pages; TREC body "
        f"{result.api[0].size / mb:.1f} MiB, plain COPY {result.copy[0].size / mb:.1f} MiB"
    )
    print(f"version_publish (informational): small {result.publish_seconds[small]:.1f}s, large {result.publish_seconds[large]:.1f}s")
    print(f"body check: the API's bytes equal COPY's TREC lines of the same version (sha256): {'yes' if result.body_checked else 'no'}")
    print(f"figures: median of {len(result.api)} round(s)")
    print()
    header = f"{'measure':<44}{'API':>12}{'COPY':>12}{'ratio':>8}{'target':>9}  result"
    print(header)
    print("-" * len(header))
    print(
        f"{'time to stream the large version':<44}{api_time:>11.2f}s{copy_time:>11.2f}s{ratio:>7.2f}x"
        f"{TIME_TARGET:>8.1f}x  {'PASS' if ratio <= TIME_TARGET else 'MISS'}"
    )
    print(f"{'throughput (labels/s)':<44}{result.labels[large] / api_time:>12,.0f}{result.labels[large] / copy_time:>12,.0f}")
    print()
    print("peak resident memory (VmHWM) of the gunicorn worker:")
    for name, value in result.memory.items():
        print(f"  {name:<40}{value / mb:>9.1f} MiB")
    labels_ratio = result.labels[large] / result.labels[small]
    print(
        f"  {labels_ratio:.0f}x the labels -> {growth:.3f}x the peak (target <= {MEMORY_TARGET:.2f}x): "
        f"{'PASS' if growth <= MEMORY_TARGET else 'MISS'}"
    )
    print()
    print("COPY reference: COPY (SELECT query_id, doc_id, grade FROM versionlabel JOIN query JOIN page WHERE version")
    print("  ORDER BY position) TO STDOUT, read block by block with psycopg in this process.")
    print("API: GET .../versions/1/qrels?format=trec with a Bearer token, read in 64 KiB chunks with requests; the")
    print("  time includes authentication, the access check, the version look-up and HTTP (chunked transfer).")
    rounds = ", ".join(f"{a.seconds:.2f}/{c.seconds:.2f}" for a, c in zip(result.api, result.copy, strict=True))
    print(f"seconds per round (API/COPY): {rounds}")


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url)
    with tempfile.TemporaryDirectory(prefix="goldset-bench-export-") as temp, scratch_database(args.database_url):
        result = measure(args, Path(temp))
    report(args, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=20_000, help="queries of the large set (default 20,000)")
    parser.add_argument("--small-queries", type=int, default=2_000, help="queries of the small set (default 2,000)")
    parser.add_argument("--pages-per-query", type=int, default=50, help="judged pages a query (default 50)")
    parser.add_argument("--corpus", type=int, default=200_000, help="pages in the corpus (default 200,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds to take the median of (default 3)")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generated data")
    database_url_argument(parser, "goldset_bench_export")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.pages_per_query > args.corpus:
        parser.error("--pages-per-query must not exceed --corpus")
    run(args)


if __name__ == "__main__":
    main()
