"""Run import speed of a gzipped TREC run and a JSONL run against the plain TREC import of
the same run.

    .venv/bin/python bench/run_formats.py [--queries 10000 --depth 100 --pages 50000]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_formats] [--rounds 3]

Generates one run (queries x depth entries, a million by default, doc ids in the corpus's
'kb/000123#2' style) and writes it three ways into a temporary directory: TREC text, the
same text gzipped, and JSONL (`{"query_id", "doc_id", "score"}` a line). It creates the
database named by --database-url (it must not exist beforehand), migrates it, makes a
golden set with the run's queries, then in each round imports each file with run_import
from its bytes, the form found from the content as an upload's is (what the upload page,
the API and `manage.py import_run` call), one right after the other on the same server,
and deletes the runs again. The figures printed are medians over the rounds, the rounds'
own figures beside them; the reader alone (lib.run_formats.read_run, no database) is
timed too, for information.

Target (issue 14): a gzipped run and a JSONL run each import within 1.3x of the TREC run.
"""

import argparse
import gzip
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402

TARGET = 1.3
SLUG = "bench-formats"
FORMS = ("trec", "trec.gz", "jsonl")


def write_runs(directory: Path, *, queries: int, depth: int, pages: int, seed: int) -> dict[str, Path]:
    """The same run as TREC, gzipped TREC and JSONL files; the same bytes for the same arguments."""
    rng = random.Random(seed)
    trec, jsonl = [], []
    for query in range(queries):
        query_id = f"q{query}"
        docs = rng.sample(range(pages), depth)
        for rank, doc in enumerate(docs, start=1):
            score = round(100.0 - rank * 0.37 + rng.random() * 0.01, 4)
            doc_id = doc_id_of(doc)
            trec.append(f"{query_id} Q0 {doc_id} {rank} {score} bench\n")
            jsonl.append(json.dumps({"query_id": query_id, "doc_id": doc_id, "score": score}) + "\n")
    paths = {form: directory / f"run.{form}" for form in FORMS}
    text = "".join(trec).encode()
    paths["trec"].write_bytes(text)
    paths["trec.gz"].write_bytes(gzip.compress(text, compresslevel=6))
    paths["jsonl"].write_bytes("".join(jsonl).encode())
    return paths


def measure(args: argparse.Namespace, paths: dict[str, Path]) -> tuple[dict[str, list[float]], dict[str, list[float]], str]:
    from django.core.management import call_command

    from evaluation.models import Run
    from evaluation.services import run_import
    from goldenset.services import GoldenSetSource, golden_set_create
    from lib.errors import ProblemCollector
    from lib.formats import JsonRecord
    from lib.run_formats import read_run

    call_command("migrate", verbosity=0)
    version = server_version()
    pages = [JsonRecord(line=n + 1, id=doc_id_of(n), title=f"page {n}") for n in range(args.pages)]
    queries = [JsonRecord(line=n + 1, id=f"q{n}", text=f"question {n}") for n in range(args.queries)]
    golden_set_create(slug=SLUG, name=SLUG, source=GoldenSetSource(pages=pages, queries=queries, qrels={}))
    from goldenset.models import GoldenSet

    golden_set = GoldenSet.objects.get(slug=SLUG)
    known = {f"q{n}" for n in range(args.queries)}
    imports: dict[str, list[float]] = {form: [] for form in FORMS}
    reads: dict[str, list[float]] = {form: [] for form in FORMS}
    for number in range(args.rounds):
        print(f"  round {number + 1} of {args.rounds} ...", file=sys.stderr)
        for form in FORMS:
            with paths[form].open("rb") as handle:
                started = time.perf_counter()
                problems = ProblemCollector()
                entries = read_run(handle, paths[form].name, problems, known_query_ids=known)
                reads[form].append(time.perf_counter() - started)
            assert not problems and len(entries) == args.queries * args.depth, problems.problems[:3]
        for form in FORMS:
            with paths[form].open("rb") as handle:
                started = time.perf_counter()
                run = run_import(golden_set=golden_set, data=handle, source_name=paths[form].name, system=form, stage="other")
                imports[form].append(time.perf_counter() - started)
            assert run.entry_count == args.queries * args.depth
        Run.objects.filter(golden_set=golden_set).delete()
    return imports, reads, version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pages", type=int, default=50_000, help="corpus pages; the run's doc ids are drawn from them")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=14)
    database_url_argument(parser, "goldset_bench_formats")
    args = parser.parse_args()
    if args.depth > args.pages:
        raise SystemExit("--depth must not exceed --pages")
    django_setup(args.database_url)
    with tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp, scratch_database(args.database_url):
        print(f"  writing a run of {args.queries * args.depth:,} entries ...", file=sys.stderr)
        paths = write_runs(Path(temp), queries=args.queries, depth=args.depth, pages=args.pages, seed=args.seed)
        sizes = {form: path.stat().st_size for form, path in paths.items()}
        imports, reads, version = measure(args, paths)

    entries = args.queries * args.depth
    print(
        f"run import by form: {entries:,} entries ({args.queries:,} queries x {args.depth}), corpus {args.pages:,} pages, "
        f"PostgreSQL {version}, median of {args.rounds} round(s)"
    )
    reference = statistics.median(imports["trec"])
    reference_read = statistics.median(reads["trec"])
    for form in FORMS:
        seconds, read_seconds = statistics.median(imports[form]), statistics.median(reads[form])
        rounds = ", ".join(f"{value:.2f}" for value in imports[form])
        line = f"  {form:8s} {sizes[form] / 1e6:6.1f} MB: import {seconds:6.2f} s (rounds {rounds}); reader alone {read_seconds:5.2f} s"
        if form == "trec":
            print(line + "  <- the reference")
            continue
        ratio, read_ratio = seconds / reference, read_seconds / reference_read
        verdict = "PASS" if ratio <= TARGET else "MISS"
        print(f"{line}; {ratio:.2f}x the TREC import (reader {read_ratio:.2f}x), target {TARGET}x: {verdict}")


if __name__ == "__main__":
    main()
