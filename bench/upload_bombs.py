"""Peak memory of a web worker handed a decompression bomb, against the same worker reading
a real run, in one run.

    .venv/bin/python bench/upload_bombs.py

The bombs are those of the hardening probe at full size: a ranx-shaped LZ4 run that
expands to 2 GB (about 40 KB), a parquet run whose footer announces 50 million rows (about
0.5 MB), and gzip of 1 GB of TREC lines (about 2.6 MB). Each is read in a fresh process that
has imported what a gunicorn worker of Goldset holds (Django set up, the URL conf, the
run readers with parquet and LZ4 loaded), with the limit the upload takes from the settings
(RUN_MAX_EXPANDED_MB, RUN_MAX_EXPANSION_RATIO), exactly as run_import calls read_run. The
reference is the same process reading a real run of 10,000 queries at depth 100 in each
form. Printed: the file's size, what the reader answered, the process's peak resident
memory (VmHWM) and seconds; the target, every bomb's peak under 300 MB.
"""

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MB = 300


def peak_resident_mb() -> float:
    """This process's peak resident memory (VmHWM): ru_maxrss would carry the parent's
    peak across fork and exec, and the parent holds the bombs it made."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(path: str, name: str) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    import django

    django.setup()
    import lz4.frame  # noqa: F401
    import pyarrow.parquet  # noqa: F401  (loaded by a worker that has read a parquet run)
    from django.conf import settings
    from django.urls import get_resolver

    from lib.errors import GoldsetError, ProblemCollector
    from lib.run_formats import ExpansionLimit, read_run

    get_resolver().url_patterns  # noqa: B018  (the whole URL conf, as a worker has it)
    limit = ExpansionLimit(ratio=settings.RUN_MAX_EXPANSION_RATIO, ceiling_bytes=settings.RUN_MAX_EXPANDED_MB << 20)
    started = time.perf_counter()
    with open(path, "rb") as handle:
        try:
            entries = read_run(handle, name, ProblemCollector(), limit=limit)
            answer = f"read {len(entries):,} entries"
        except GoldsetError as exc:
            answer = f"{exc.http_status}: {exc.message[:90]}"
    seconds = time.perf_counter() - started
    peak_mb = peak_resident_mb()
    print(f"{peak_mb:.0f}\t{seconds:.2f}\t{answer}")


def measure(path: Path, name: str) -> tuple[float, float, str]:
    out = subprocess.run([sys.executable, __file__, "--child", str(path), name], capture_output=True, text=True, check=True, cwd=ROOT)
    peak, seconds, answer = out.stdout.strip().splitlines()[-1].split("\t", 2)
    return float(peak), float(seconds), answer


def real_runs(folder: Path) -> dict[str, Path]:
    import gzip

    import cbor2
    import lz4.frame
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    queries, depth = 10_000, 100
    q = np.repeat([f"q{n}" for n in range(queries)], depth)
    d = np.array([f"doc{n}" for n in rng.integers(0, 500_000, queries * depth)])
    s = np.tile(np.linspace(1.0, 0.01, depth), queries)
    run: dict[str, dict[str, float]] = {}
    for query_id, doc_id, score in zip(q.tolist(), d.tolist(), s.tolist()):
        run.setdefault(query_id, {})[doc_id] = score
    paths = {"run.lz4": folder / "real.lz4", "run.parquet": folder / "real.parquet", "run.trec.gz": folder / "real.trec.gz"}
    paths["run.lz4"].write_bytes(lz4.frame.compress(lz4.frame.compress(cbor2.dumps(run))))
    frame = pd.DataFrame(
        {
            "q_id": [k for k, v in run.items() for _ in v],
            "doc_id": [x for v in run.values() for x in v],
            "score": [x for v in run.values() for x in v.values()],
        }
    )
    frame.to_parquet(paths["run.parquet"], index=False)
    lines = "".join(
        f"{query_id} Q0 {doc} {rank} {score} ref\n"
        for query_id, docs in run.items()
        for rank, (doc, score) in enumerate(docs.items(), start=1)
    )
    paths["run.trec.gz"].write_bytes(gzip.compress(lines.encode()))
    return paths


def main() -> int:
    import tempfile

    sys.path.insert(0, str(ROOT))
    from tests.hardening.bombs import gzip_bomb, lz4_bomb, parquet_bomb

    folder = Path(tempfile.mkdtemp(prefix="goldset-bombs-"))
    bombs = {
        "run.lz4": ("LZ4 to 2 GB", lz4_bomb(2 << 30)),
        "run.parquet": ("parquet of 50M rows", parquet_bomb(50_000_000)),
        "run.trec.gz": ("gzip to 1 GB", gzip_bomb(1 << 30)),
    }
    references = real_runs(folder)
    print(
        f"target: a worker's peak memory under {TARGET_MB} MB for each bomb; reference: the same worker reading a real run "
        "of 10,000 queries x 100 (1,000,000 entries) in that form"
    )
    missed = False
    for name, (label, data) in bombs.items():
        path = folder / ("bomb-" + name)
        path.write_bytes(data)
        peak, seconds, answer = measure(path, name)
        ref_peak, ref_seconds, ref_answer = measure(references[name], name)
        verdict = "PASS" if peak < TARGET_MB and answer.startswith("413") else "MISS"
        missed |= verdict == "MISS"
        print(f"{label:22} {len(data) / 1024:9,.0f} KB  peak {peak:5.0f} MB  {seconds:5.2f} s  {answer}")
        print(
            f"{'  reference':22} {references[name].stat().st_size / 1024:9,.0f} KB  peak {ref_peak:5.0f} MB  {ref_seconds:5.2f} s  {ref_answer}"
        )
        print(f"  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
