"""Import and export speed of Goldset against a plain psycopg COPY of the same rows.

    .venv/bin/python bench/import_export.py [--pages 100000 --queries 10000 --judgments 50000]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench] [--rounds 3] [--profile]

Writes a generated BEIR folder to a temporary directory, then, in each round, creates the
database named by --database-url (it must not exist beforehand), migrates it, times the
steps below and drops it again. Each figure printed is the median over the rounds, so a
busy neighbour on a shared machine moves it less; the figures of every round are printed
too. Within a round Goldset and its reference run one right after the other, on the same
files and the same server. It times:

- import: golden_set_import_beir on the folder (what `manage.py import_beir` runs), against
  a reference that reads and parses the same three files with json.loads and str.split,
  derives the same column values (content hash, row ids, page hash of each judgment) and
  COPYs them into plain tables with the same columns and no index, constraint or trigger.
  Both sides start from the files, so the ratio is the cost of everything Goldset adds:
  validation, id checks, slice detection, unique indexes, foreign keys, id look-ups.
  The COPY of the same rows already parsed in memory is shown too, for information.
- publish: version_publish of the imported set (informational, no reference).
- export: the version's TREC qrels streamed through version_label_rows and write_qrels to a
  file (what `manage.py export_qrels --output` runs), against COPY (SELECT query_id, doc_id,
  grade ... the same join, in the same order) TO STDOUT written to a file. Before it, the
  check that the version's stored rows still give its content hash (version_check_intact),
  which an export makes once a version and process (its result is kept in Django's cache),
  is timed on its own (informational): the first export of a version pays it as well.

Targets (from the issue): import within 3x, export within 2x of COPY. The database is
dropped at the end of each round, even when a step fails.
"""

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import random
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import django_setup, scratch_database, server_version, version_labels_copy  # noqa: E402
from lib.hashing import text_hash  # noqa: E402  (needs the repository on sys.path)

IMPORT_TARGET = 3.0
IMPORT_TARGET_NEXT = 1.5  # issue #15's next target for the same figure
EXPORT_TARGET = 2.0
SLUG = "bench"

# Words to build titles, page text and queries from: text of realistic length and shape,
# so that parsing, hashing and COPY move as many bytes as a real corpus would.
WORDS = (
    "index retrieval query document passage ranking recall precision embedding vector dense sparse "
    "hybrid reranker chunk corpus judgment relevance annotator version release support billing "
    "account invoice refund password login error timeout network storage backup restore policy "
    "security token access permission admin user team project workspace dashboard report export "
    "import upload download file folder search filter sort page table column row value setting "
    "configure install upgrade migrate database server client request response latency throughput "
    "cache memory disk cluster node replica shard partition schedule job task queue worker retry "
    "alert monitor metric log trace incident outage status region zone price plan trial limit "
    "quota usage the a of and to in is for on with that by this be are from as at or an it can "
    "when how what which your you will not if more new use may all each other these than then"
).split()
LANGUAGES = ("en", "en", "en", "de", "fr", "es", "ja")
DOC_TYPES = ("article", "faq", "manual", "release-note", "forum")
INTENTS = ("navigational", "informational", "troubleshooting")
EPOCH = datetime(2019, 1, 1, tzinfo=UTC)


# --- data ------------------------------------------------------------------------------


def sentence(rng: random.Random, low: int, high: int) -> str:
    words = rng.choices(WORDS, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def write_beir_folder(directory: Path, *, pages: int, queries: int, judgments: int, seed: int) -> None:
    """corpus.jsonl, queries.jsonl and qrels/test.tsv, the same bytes for the same arguments."""
    if judgments > pages * queries:
        raise SystemExit(f"--judgments {judgments} is more than the {pages * queries} possible pairs")
    rng = random.Random(seed)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for number in range(pages):
            published = EPOCH + timedelta(seconds=rng.randint(0, 6 * 365 * 86400))
            record = {
                "_id": doc_id_of(number),
                "title": sentence(rng, 3, 8)[:-1],
                "text": " ".join(sentence(rng, 8, 16) for _ in range(rng.randint(3, 5))),
                "url": f"https://docs.example.com/kb/{number // 4}",
                "metadata": {
                    "lang": rng.choice(LANGUAGES),
                    "doc_type": rng.choice(DOC_TYPES),
                    "published_at": published.isoformat(),
                    "product": f"product-{rng.randint(1, 12)}",
                },
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as out:
        for number in range(queries):
            record = {"_id": f"q{number}", "text": sentence(rng, 4, 12)[:-1] + "?", "metadata": {"intent": rng.choice(INTENTS)}}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < judgments:
        pairs.add((rng.randrange(queries), rng.randrange(pages)))
    (directory / "qrels").mkdir()
    with (directory / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for query, page in sorted(pairs):
            out.write(f"q{query}\t{doc_id_of(page)}\t{rng.choices((0, 1, 2, 3), weights=(4, 3, 2, 1))[0]}\n")


# --- the database ----------------------------------------------------------------------


def server_url(database_url: str, dbname: str) -> str:
    return urlunparse(urlparse(database_url)._replace(path="/" + dbname))


REFERENCE_TABLES = """
CREATE TABLE ref_page (
    id bigint, corpus_id bigint, doc_id varchar(255), title text, text text, url varchar(2000),
    has_text boolean, metadata jsonb, published_at timestamptz, modified_at timestamptz,
    content_hash varchar(64), created_at timestamptz
);
CREATE TABLE ref_query (
    id bigint, golden_set_id bigint, query_id varchar(255), text text, has_text boolean,
    metadata jsonb, created_at timestamptz
);
CREATE TABLE ref_judgment (
    id bigint, query_id bigint, page_id bigint, grade smallint, source varchar(10), note text,
    page_hash varchar(64), created_at timestamptz
);
"""
PAGE_COLUMNS = "id, corpus_id, doc_id, title, text, url, has_text, metadata, published_at, modified_at, content_hash, created_at"
QUERY_COLUMNS = "id, golden_set_id, query_id, text, has_text, metadata, created_at"
JUDGMENT_COLUMNS = "id, query_id, page_id, grade, source, note, page_hash, created_at"


def reference_rows(directory: Path):
    """Page, query and judgment tuples from the files, parsed the plainest way.

    Yields (table, columns, rows) with rows a generator, so that a caller inside COPY
    parses and writes in one pass, as a hand-written loader would.
    """
    now = datetime.now(UTC)
    page_ids: dict[str, tuple[int, str]] = {}
    query_ids: dict[str, int] = {}

    def pages():
        with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                obj = json.loads(line)
                metadata = obj.get("metadata") or {}
                published_at = metadata.pop("published_at", None)
                modified_at = metadata.pop("modified_at", None)
                title, text, url = obj.get("title", ""), obj.get("text", ""), obj.get("url", "")
                content_hash = text_hash(title, text, url)
                page_ids[obj["_id"]] = (number, content_hash)
                yield (
                    number,
                    1,
                    obj["_id"],
                    title,
                    text,
                    url,
                    True,
                    json.dumps(metadata, ensure_ascii=False),
                    published_at,
                    modified_at,
                    content_hash,
                    now,
                )

    def queries():
        with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                obj = json.loads(line)
                query_ids[obj["_id"]] = number
                yield (number, 1, obj["_id"], obj.get("text", ""), True, json.dumps(obj.get("metadata") or {}, ensure_ascii=False), now)

    def judgments():
        with (directory / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
            next(handle)
            for number, line in enumerate(handle, start=1):
                query_id, doc_id, grade = line.rstrip("\n").split("\t")
                page_pk, page_hash = page_ids[doc_id]
                yield (number, query_ids[query_id], page_pk, int(grade), "imported", "", page_hash, now)

    yield "ref_page", PAGE_COLUMNS, pages()
    yield "ref_query", QUERY_COLUMNS, queries()
    yield "ref_judgment", JUDGMENT_COLUMNS, judgments()


def reference_copy(database_url: str, tables) -> None:
    """COPY each (table, columns, rows) in one transaction, as the import does."""
    with psycopg.connect(database_url) as conn:
        with conn.cursor() as cursor:
            for table, columns, rows in tables:
                with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
        conn.commit()


def truncate_reference_tables(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("TRUNCATE ref_page, ref_query, ref_judgment")


def reference_export(database_url: str, version_id: int, path: Path) -> None:
    with psycopg.connect(database_url) as conn, path.open("wb") as out:
        with conn.cursor().copy(version_labels_copy(version_id)) as copy:
            for data in copy:
                out.write(data)


# --- measuring -------------------------------------------------------------------------

STEPS = ("import", "reference import", "reference import, COPY only", "publish", "integrity check", "export", "reference export")


@dataclass
class Round:
    """Wall time in seconds of each of STEPS in one round, and what the round wrote."""

    seconds: dict[str, float] = field(default_factory=dict)
    profiles: dict[str, pstats.Stats] = field(default_factory=dict)
    summary: object = None
    version: object = None
    exported: int = 0
    server_version: str = ""

    @contextmanager
    def timed(self, name: str, profile: bool = False):
        profiler = cProfile.Profile() if profile else None
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        try:
            yield
        finally:
            if profiler:
                profiler.disable()
                self.profiles[name] = pstats.Stats(profiler, stream=io.StringIO())
            self.seconds[name] = time.perf_counter() - start


def check_exports_match(ours: Path, reference: Path) -> int:
    """The two exports must hold the same rows in the same order; return the row count."""
    with ours.open(encoding="utf-8") as a, reference.open(encoding="utf-8") as b:
        count = 0
        for count, (line, ref_line) in enumerate(zip(a, b, strict=True), start=1):
            query_id, doc_id, grade = ref_line.rstrip("\n").split("\t")
            if line != f"{query_id} 0 {doc_id} {grade}\n":
                raise SystemExit(f"exports differ at line {count}: {line!r} against COPY's {ref_line!r}")
    return count


def measure_round(database_url: str, folder: Path, work: Path, profile: bool) -> Round:
    """One round on a freshly migrated database: reference and Goldset, import then export."""
    from django.core.management import call_command
    from django.db import connection

    from goldenset.models import GoldenSet
    from goldenset.selectors import version_check_intact, version_label_rows
    from goldenset.services import golden_set_import_beir, version_publish
    from lib.formats import write_qrels

    result = Round()
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(REFERENCE_TABLES)
    result.server_version = server_version()
    connection.close()

    print("  reference import: parse + COPY ...", file=sys.stderr)
    with result.timed("reference import"):
        reference_copy(database_url, reference_rows(folder))
    parsed = [(table, columns, list(rows)) for table, columns, rows in reference_rows(folder)]
    truncate_reference_tables(database_url)
    with result.timed("reference import, COPY only"):
        reference_copy(database_url, parsed)
    del parsed

    print("  golden_set_import_beir ...", file=sys.stderr)
    with result.timed("import", profile):
        result.summary = golden_set_import_beir(directory=folder, slug=SLUG)
    golden_set = GoldenSet.objects.get(slug=SLUG)

    print("  version_publish ...", file=sys.stderr)
    with result.timed("publish", profile):
        result.version = version_publish(golden_set=golden_set, note="bench")
    connection.close()

    ours_path, reference_path = work / "ours.qrels", work / "copy.tsv"
    # An export first checks that the version's stored rows still give its content hash,
    # once per version (kept in Django's cache): timed on its own, as the one-time cost it is.
    print("  version_check_intact, export: write_qrels, then COPY TO ...", file=sys.stderr)
    with result.timed("integrity check", profile):
        version_check_intact(result.version)
    with result.timed("export", profile):
        with ours_path.open("w", encoding="utf-8", newline="\n") as out:
            write_qrels(version_label_rows(result.version), out, "trec")
    with result.timed("reference export"):
        reference_export(database_url, result.version.id, reference_path)
    result.exported = check_exports_match(ours_path, reference_path)
    connection.close()
    return result


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url)

    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp:
        folder = Path(temp) / "beir"
        folder.mkdir()
        print(f"generating BEIR folder ({args.pages} pages, {args.queries} queries, {args.judgments} judgments) ...", file=sys.stderr)
        write_beir_folder(folder, pages=args.pages, queries=args.queries, judgments=args.judgments, seed=args.seed)
        size_mb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
        for number in range(1, args.rounds + 1):
            print(f"round {number} of {args.rounds}", file=sys.stderr)
            with scratch_database(args.database_url):
                # cProfile slows what it watches, so only the first round carries it.
                rounds.append(measure_round(args.database_url, folder, Path(temp), args.profile and number == 1))
    report(args, rounds, size_mb)


def report(args: argparse.Namespace, rounds: list[Round], size_mb: float) -> None:
    median = {step: statistics.median(r.seconds[step] for r in rounds) for step in STEPS}
    last = rounds[-1]
    summary, version = last.summary, last.version
    print()
    print("Goldset import/export against plain psycopg COPY, PostgreSQL, same run")
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, psycopg {psycopg.__version__} "
        f"({psycopg.pq.__impl__}), PostgreSQL {last.server_version}"
    )
    print(
        f"data: {summary.pages_created} pages, {summary.queries_created} queries, {summary.judgments_created} judgments "
        f"-> version {version.number} with {version.label_count} labels ({last.exported} qrels lines exported); "
        f"BEIR files {size_mb:.1f} MB"
    )
    print(f"figures: median of {len(rounds)} round(s), each on a freshly migrated database")
    if args.profile:
        print("NOTE: --profile was on: round 1 ran under cProfile, which slows it; use --rounds 3 or more for the figures.")
    print()
    rows = [
        ("import (golden_set_import_beir)", median["import"], median["reference import"], IMPORT_TARGET),
        ("  the same, issue #15's target", median["import"], median["reference import"], IMPORT_TARGET_NEXT),
        ("publish (version_publish)", median["publish"], None, None),
        ("export TREC qrels to a file", median["export"], median["reference export"], EXPORT_TARGET),
        ("  its integrity check, once a version", median["integrity check"], None, None),
    ]
    header = f"{'step':<34}{'goldset':>10}{'COPY':>10}{'ratio':>8}{'target':>8}  result"
    print(header)
    print("-" * len(header))
    for name, ours, reference, target in rows:
        if reference is None:
            print(f"{name:<34}{ours:>9.2f}s{'-':>10}{'-':>8}{'-':>8}  (informational)")
            continue
        ratio = ours / reference
        verdict = "PASS" if ratio <= target else "MISS"
        print(f"{name:<34}{ours:>9.2f}s{reference:>9.2f}s{ratio:>7.2f}x{target:>7.1f}x  {verdict}")
    print()
    print("import COPY reference: reads and parses corpus.jsonl, queries.jsonl and qrels/test.tsv (json.loads,")
    print("  split on tabs), computes the same column values (sha256 content hash, row ids, each judgment's page")
    print("  hash) and COPYs them in one transaction into plain tables with the same columns and no index,")
    print("  constraint or trigger. It does no validation and no id look-up in the database.")
    copy_only = median["reference import, COPY only"]
    print(
        f"  The COPY alone of the same rows already parsed in memory took {copy_only:.2f}s "
        f"(Goldset's import is {median['import'] / copy_only:.2f}x that; informational)."
    )
    print("export COPY reference: COPY (SELECT query_id, doc_id, grade FROM versionlabel JOIN query JOIN page")
    print("  WHERE version ORDER BY position) TO STDOUT, written to a file; checked to hold the same rows in the")
    print("  same order as Goldset's export.")
    if len(rounds) > 1:
        print()
        print("seconds per round: " + ", ".join(STEPS))
        for number, result in enumerate(rounds, start=1):
            print(f"  round {number}: " + "  ".join(f"{result.seconds[step]:.2f}" for step in STEPS))
    for name, stats in rounds[0].profiles.items():
        print(f"\ncProfile of {name} (round 1), top 25 by cumulative time:")
        stats.stream = sys.stdout
        stats.sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--judgments", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds to take the median of (default 3)")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generated data")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/goldset_bench",
        help="PostgreSQL database to create, use and drop in each round; it must not exist beforehand",
    )
    parser.add_argument("--profile", action="store_true", help="also print cProfile statistics of Goldset's steps (round 1)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    run(args)


if __name__ == "__main__":
    main()
