"""A 10,000,000-line query log imported by `import_query_log`, beside a plain streaming
parser reading the same file in the same run, and a stratified sample of 1,000 drawn from it.

    .venv/bin/python bench/query_log.py [--lines 10000000] [--distinct 300000] [--gzip]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_query_log]

The log is generated, not shipped: --distinct query texts of 2 to 6 words from the
vocabulary of the Cranfield collection's queries (../shared/data/cranfield, a public
collection; a fixed word list where it is absent), drawn --lines times with a Zipf-like
frequency (the query of traffic rank r weighs 1/r^1.05), one event a line as a JSONL log
`{"query", "lang", "area", "ts"}`; one event in ten typed as people do (capitals, a
doubled space, a question mark), so that normalising has forms to merge. It is written in a
temporary folder (gzip with --gzip) and deleted at the end, with the scratch database.

Timed, in this order and in one process, on the same file (warm in the page cache):

- the floor: `for line in f: json.loads(line)`, counting each query's events in a dict;
- the import: `import_query_log FILE --golden-set bench --name nov`, from opening the file
  to the commit (read, normalise, merge, COPY of the distinct queries);
- a stratified draw of 1,000 queries by `lang` (traffic.sampling.draw_queries).

Printed: the data size, each time, the import's ratio to the floor against its target
(2x), the peak resident memory of the import (VmHWM, reset before it through
/proc/self/clear_refs) against its target (500 MB), and PASS or MISS for each.
"""

import argparse
import gc
import gzip
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402  (needs the repository on sys.path)

CRANFIELD_QUERIES = REPO.parent.parent / "shared" / "data" / "cranfield" / "queries.jsonl"
FALLBACK_WORDS = "wing flutter heat transfer boundary layer shock wave supersonic flow pressure buckling shell plate panel".split()
LANGS = ["en", "en", "en", "fr", "de", "es", "ja"]
AREAS = ["aero", "heat", "structures", "flow", "materials", "propulsion", "controls", "acoustics"]
RATIO_TARGET = 2.0
MEMORY_TARGET_MB = 500
SAMPLE_SIZE = 1000


def vocabulary() -> list[str]:
    for path in (CRANFIELD_QUERIES, Path("/work/shared/data/cranfield/queries.jsonl")):
        if path.is_file():
            with path.open(encoding="utf-8") as handle:
                words = {word for line in handle for word in json.loads(line)["text"].split() if word.isalpha() and len(word) > 2}
            return sorted(words)
    return FALLBACK_WORDS


def write_log(path: Path, *, lines: int, distinct: int, seed: int, compress: bool) -> None:
    words = vocabulary()
    rng = random.Random(seed)
    texts = []
    seen = set()
    while len(texts) < distinct:
        text = " ".join(rng.choices(words, k=rng.randint(2, 6)))
        if text not in seen:
            seen.add(text)
            texts.append(text)
    weights = 1 / np.arange(1, distinct + 1) ** 1.05
    weights /= weights.sum()
    generator = np.random.default_rng(seed)
    opener = gzip.open(path, "wt", encoding="utf-8", compresslevel=1) if compress else path.open("w", encoding="utf-8")
    with opener as out:
        written = 0
        while written < lines:
            block = min(500_000, lines - written)
            ranks = generator.choice(distinct, size=block, p=weights)
            typed = generator.random(block)
            parts = []
            for offset, (rank, kind) in enumerate(zip(ranks.tolist(), typed.tolist())):
                text = texts[rank]
                if kind < 0.04:
                    text = text.capitalize()
                elif kind < 0.07:
                    text = text + "?"
                elif kind < 0.1:
                    text = text.replace(" ", "  ", 1)
                second = (written + offset) * 2_592_000 // lines  # the events spread over 30 days
                parts.append(
                    f'{{"query": "{text}", "lang": "{LANGS[rank % 7]}", "area": "{AREAS[rank % 8]}", '
                    f'"ts": "2026-11-{1 + second // 86400:02d}T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"}}\n'
                )
            out.write("".join(parts))
            written += block


def plain_parse(path: Path) -> int:
    """The floor: the same file read line by line by json.loads, events counted by query."""
    counts: dict[str, int] = {}
    opener = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    with opener as handle:
        for line in handle:
            obj = json.loads(line)
            query = obj["query"]
            counts[query] = counts.get(query, 0) + obj.get("count", 1)
    return len(counts)


def peak_reset() -> bool:
    """Reset this process's peak resident memory (VmHWM); False where the kernel will not."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def draw_sample(golden_set, log) -> str:
    """A stratified draw of SAMPLE_SIZE queries by language from the imported log, timed."""
    from traffic.sampling import draw_queries

    started = time.perf_counter()
    draw_queries(golden_set=golden_set, log_name=log.name, size=SAMPLE_SIZE, design="stratified", strata_field="lang", seed=28)
    return f"{time.perf_counter() - started:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--distinct", type=int, default=300_000, help="distinct query texts before typing variants")
    parser.add_argument("--gzip", action="store_true", help="write and read the log gzipped")
    parser.add_argument("--seed", type=int, default=28)
    database_url_argument(parser, "goldset_bench_query_log")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--write-only", metavar="PATH", help=argparse.SUPPRESS)  # the generator's own process
    args = parser.parse_args()
    if args.write_only:
        write_log(Path(args.write_only), lines=args.lines, distinct=args.distinct, seed=args.seed, compress=args.gzip)
        return
    django_setup(args.database_url)
    from django.core.management import call_command

    with scratch_database(args.database_url, keep=args.keep), tempfile.TemporaryDirectory(prefix="goldset-bench-log-") as folder:
        call_command("migrate", verbosity=0)
        from tests.support import factories
        from traffic.models import QueryLog

        golden_set = factories.golden_set("bench")
        path = Path(folder) / ("log.jsonl.gz" if args.gzip else "log.jsonl")
        started = time.perf_counter()
        # In a process of its own, so that the generator's memory is not the import's peak.
        command = [sys.executable, __file__, "--write-only", str(path), "--lines", str(args.lines), "--distinct", str(args.distinct)]
        subprocess.run([*command, "--seed", str(args.seed), *(["--gzip"] if args.gzip else [])], check=True)
        written = time.perf_counter() - started
        size_mb = path.stat().st_size / 2**20

        started = time.perf_counter()
        forms = plain_parse(path)
        floor = time.perf_counter() - started
        gc.collect()

        reset = peak_reset()
        started = time.perf_counter()
        call_command("import_query_log", str(path), "--golden-set", "bench", "--name", "nov", verbosity=0, stdout=io.StringIO())
        imported = time.perf_counter() - started
        peak = peak_mib()
        log = QueryLog.objects.get(golden_set=golden_set, name="nov")
        assert log.lines_read == log.event_count == args.lines
        drawn = draw_sample(golden_set, log)

        ratio = imported / floor
        print(
            f"PostgreSQL {server_version()}; log: {args.lines:,} lines (one event each), {size_mb:,.0f} MB{' gzipped' if args.gzip else ''},"
        )
        print(f"  {args.distinct:,} generated queries from Cranfield's vocabulary, Zipf 1/r^1.05; {forms:,} distinct typed forms")
        print(
            f"  -> {log.query_count:,} distinct queries once normalised; slice fields {', '.join(log.fields)} (written in {written:.0f} s)"
        )
        print(f"plain parser (json.loads a line, counts in a dict): {floor:.1f} s")
        print(f"import_query_log (read, normalise, merge, COPY, commit): {imported:.1f} s")
        print(f"  import / plain parser: {ratio:.2f}x (target <= {RATIO_TARGET:.0f}x): {'PASS' if ratio <= RATIO_TARGET else 'MISS'}")
        how = "VmHWM reset before the import" if reset else "ru_maxrss of the whole run: the peak reset was refused"
        print(
            f"  peak resident memory of the import: {peak:,.0f} MiB ({how}; target < {MEMORY_TARGET_MB} MB): {'PASS' if peak < MEMORY_TARGET_MB else 'MISS'}"
        )
        print(f"stratified draw of {SAMPLE_SIZE:,} by lang: {drawn}")


if __name__ == "__main__":
    main()
