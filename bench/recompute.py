"""Recompute speed: from publishing a version to the last score a real Celery worker stores,
against ranx.evaluate over prebuilt typed lists of the same runs, slices and metrics.

    .venv/bin/python bench/recompute.py [--runs 20 --queries 10000 --depth 100 --pages 100000]
        [--concurrency 2] [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_recompute]
        [--broker-url redis://127.0.0.1:6379/0] [--seed 20240601] [--profile]

Creates the database named by --database-url (it must not exist beforehand), migrates it,
and generates, the same for the same seed: a corpus of --pages pages with a page slice
`doc_type` (3 values), a golden set of --queries queries with a query slice `lang` (3
values), each query with 5 relevant labels (grades 1-3) and 0-2 of grade 0, and --runs runs
of --depth pages a query. The runs go in through run_import (not timed), then one Celery
worker (`celery -A goldset worker --pool prefork --concurrency N`, N the number of cores
by default: one pool process a core, as a deployment runs it) starts on Redis, in a queue
of its own, and the script times:

- recompute: from the call of version_publish to the moment the last of the runs'
  evaluations is stored (its finished_at, set in the transaction that writes its scores).
  Each evaluation scores the default metrics of the set (k_first 100, k_final 8: ten of
  them) overall and for each of the 6 slice values, and stores 70 Score rows, the
  per-query values and whatever else evaluation_compute stores; evaluate_run_task then
  checks alerts. Everything a worker does in that time counts.
- reference: ranx.evaluate on numba typed lists built before timing (ranx's own input
  format: one [doc key, score] float64 array a query, best first, and one [doc key, grade]
  array a query, highest grade first) for the same runs x (overall + 6 slices), the same
  metrics, in this process, with numba's threads on every core. It is built from the
  generated data, not from anything Goldset stored, and its means are checked against the
  stored scores, so both sides computed the same numbers.

It prints the data size, both times, their ratio against the target (3x), and the peak
resident memory (VmHWM) of the worker's processes against its target (2 GB, the sum over
the worker's processes, which counts twice the pages they share after the fork). The
database is dropped and the worker stopped at the end, even when a step fails.
"""

import argparse
import cProfile
import io
import os
import platform
import pstats
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of, question_records  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import (  # noqa: E402
    database_url_argument,
    django_setup,
    peak_memory,
    process_started,
    purge_queue,
    scratch_database,
    server_version,
)

TIME_TARGET = 3.0
# Issue #15's next target for the same figure, printed beside the first round's.
TIME_TARGET_NEXT = 1.5
MEMORY_TARGET_BYTES = 2 * 1024**3
SLUG = "bench-recompute"
LANGS = ("en", "de", "fr")
DOC_TYPES = ("article", "faq", "manual")
RELEVANT_PER_QUERY = 5
WAIT_SECONDS = 1800  # a recompute that takes longer than this has failed, not just missed


# --- data ------------------------------------------------------------------------------


def page_id_of(key: int) -> str:
    """Page key k >= 1 is a corpus page (the doc id of page k - 1); k <= -1 a page outside
    the corpus (unjudged)."""
    return doc_id_of(key - 1) if key > 0 else f"web/{-key}"


@dataclass
class Dataset:
    """The golden set, as arrays. Page keys are 1..pages; queries are 0..queries-1 (id q{i+1})."""

    pages: int
    queries: int
    depth: int
    seed: int
    page_type: np.ndarray  # int, index into DOC_TYPES, per page key (index 0 unused)
    query_lang: np.ndarray  # int, index into LANGS, per query
    label_query: np.ndarray  # int64 per label
    label_page: np.ndarray  # int64 page key per label
    label_grade: np.ndarray  # int64 per label

    @property
    def query_ids(self) -> list[str]:
        return [f"q{i + 1}" for i in range(self.queries)]

    def generate_run(self, number: int) -> tuple[np.ndarray, np.ndarray]:
        """(answered query indices, page keys [answered, depth] best first) of run `number`.

        Each relevant page of a query is found with a probability from 0.80 to 0.97 (better
        with each run number, modulo 20), at a rank that favours the top; a labelled grade-0
        page half the time; the rest is pages drawn at random, one entry in fifty outside
        the corpus. One query in a hundred is left unanswered.
        """
        rng = np.random.default_rng([self.seed, number])
        finds = 0.80 + 0.17 * (number % 20) / 19
        answered = np.flatnonzero(rng.random(self.queries) >= 0.01)
        n, depth = len(answered), self.depth
        # Distinct random pages a row: an arithmetic walk through the corpus with a stride
        # small enough that `depth` steps never come back to where they started.
        start = rng.integers(0, self.pages, size=n)
        stride = rng.integers(1, self.pages // depth, size=n)
        keys = (start[:, None] + np.arange(depth)[None, :] * stride[:, None]) % self.pages + 1
        outside = rng.random((n, depth)) < 0.02
        keys[outside] = -(np.flatnonzero(outside.ravel()) + 1 + number * n * depth)

        # The labelled pages the run finds, placed at distinct ranks of their query's row.
        row_of_query = np.full(self.queries, -1)
        row_of_query[answered] = np.arange(n)
        rows = row_of_query[self.label_query]
        relevant = self.label_grade >= 1
        chosen = (rows >= 0) & np.where(relevant, rng.random(len(rows)) < finds, rng.random(len(rows)) < 0.5)
        rows, pages = rows[chosen], self.label_page[chosen]
        # Skewed to the top (about half in the top 10), and low enough that the ranks made
        # distinct below stay within the depth.
        ranks = (rng.random(len(rows)) ** 2.5 * (depth - 8)).astype(np.int64)
        order = np.lexsort((ranks, rows))
        rows, pages, ranks = rows[order], pages[order], ranks[order]
        group_start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        index_in_row = np.arange(len(rows)) - np.repeat(group_start, np.diff(np.r_[group_start, len(rows)]))
        # Distinct ranks: r'_i = max over j <= i of (r_j + i - j), a running maximum per row.
        shifted = ranks - index_in_row + rows * (2 * depth)
        ranks = np.maximum.accumulate(shifted) - rows * (2 * depth) + index_in_row
        keys[rows, ranks] = pages
        # The random walk may hold a page placed above at another rank: that copy goes.
        placed = np.zeros(keys.shape, dtype=bool)
        placed[rows, ranks] = True
        ordered = np.sort(keys, axis=1)
        for row in np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1)).tolist():
            line = keys[row]
            placed_pages = set(line[placed[row]].tolist())
            for rank in np.flatnonzero(~placed[row]).tolist():
                if line[rank] in placed_pages:
                    line[rank] = -(10**12 + number * n * depth + row * depth + rank)
        return answered, keys

    def run_lines(self, number: int, system: str):
        """TREC lines of run `number`, scores strictly decreasing with rank."""
        answered, keys = self.generate_run(number)
        page_ids = self.page_ids
        tails = [f" {rank + 1} {self.depth - rank + 0.5:.1f} {system}\n" for rank in range(self.depth)]
        for query, row in zip(answered.tolist(), keys.tolist()):
            head = f"q{query + 1} Q0 "
            for key, tail in zip(row, tails):
                yield head + (page_ids[key] if key > 0 else page_id_of(key)) + tail

    @cached_property
    def page_ids(self) -> list[str]:
        return [page_id_of(key) for key in range(self.pages + 1)]


def generate_dataset(*, pages: int, queries: int, depth: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    page_type = rng.integers(0, len(DOC_TYPES), size=pages + 1)
    query_lang = rng.integers(0, len(LANGS), size=queries)
    label_query, label_page, label_grade = [], [], []
    for query in range(queries):
        count = RELEVANT_PER_QUERY + int(rng.integers(0, 3))
        picked = rng.choice(pages, size=count, replace=False) + 1
        relevant = rng.choice([1, 2, 3], size=RELEVANT_PER_QUERY, p=[0.5, 0.3, 0.2])
        grades = np.concatenate([relevant, np.zeros(count - RELEVANT_PER_QUERY, dtype=np.int64)])
        label_query.append(np.full(count, query))
        label_page.append(picked)
        label_grade.append(grades)
    return Dataset(
        pages=pages,
        queries=queries,
        depth=depth,
        seed=seed,
        page_type=page_type,
        query_lang=query_lang,
        label_query=np.concatenate(label_query).astype(np.int64),
        label_page=np.concatenate(label_page).astype(np.int64),
        label_grade=np.concatenate(label_grade).astype(np.int64),
    )


def golden_set_source(data: Dataset):
    from goldenset.models import default_grade_scale
    from goldenset.services import GoldenSetSource
    from lib.formats import JsonRecord

    page_type = data.page_type.tolist()
    page_records = [
        JsonRecord(
            line=key,
            id=page_id_of(key),
            title=f"page {key}",
            text=f"text of page {key}",
            metadata={"doc_type": DOC_TYPES[page_type[key]]},
        )
        for key in range(1, data.pages + 1)
    ]
    query_records = question_records(data.query_ids, [{"lang": LANGS[lang]} for lang in data.query_lang.tolist()])
    qrels = {
        (f"q{q + 1}", page_id_of(p)): g for q, p, g in zip(data.label_query.tolist(), data.label_page.tolist(), data.label_grade.tolist())
    }
    return GoldenSetSource(
        pages=page_records,
        queries=query_records,
        qrels=qrels,
        source_name="generated",
        grade_scale=default_grade_scale(),
        query_slice_fields=["lang"],
        page_slice_fields=["doc_type"],
        k_first=100,
        k_final=8,
    )


# --- the database and the worker ------------------------------------------------------------


@contextmanager
def celery_worker(
    *,
    database_url: str,
    broker_url: str,
    queue: str,
    concurrency: int,
    log_path: Path,
    cpu: int | None = None,
    name: str = "%h",
):
    """A `celery worker` in a process group of its own, ready when this yields its Popen;
    stopped (warm shutdown, then SIGKILL) on the way out. With `cpu`, the worker and its pool
    run on that one core only (taskset), numba with one thread: a worker of one core."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "goldset.settings",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "LOG_LEVEL": "INFO",
    }
    pinned = []
    if cpu is not None:
        env["NUMBA_NUM_THREADS"] = "1"
        pinned = ["taskset", "--cpu-list", str(cpu)]
    command = [
        *pinned,
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "goldset",
        "worker",
        "--pool",
        "prefork",
        "--concurrency",
        str(concurrency),
        "-Q",
        queue,
        "--loglevel",
        "INFO",
        "--hostname",
        f"{queue}@{name}",
        "--without-mingle",
        "--without-gossip",
    ]
    with process_started(
        command,
        env=env,
        log_path=log_path,
        ready=lambda: " ready." in log_path.read_text(errors="replace"),
        what="the worker",
    ) as process:
        yield process


def worker_peak_memory(pid: int) -> dict[str, int]:
    """{process: VmHWM in bytes} of the worker's main process and its pool processes."""
    peaks = {f"main {pid}": peak_memory(pid)}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        peaks[f"pool {child}"] = peak_memory(int(child))
    return peaks


def wait_for(condition, what: str, log_path: Path, *, every: float = 0.1):
    deadline = time.monotonic() + WAIT_SECONDS
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}; worker log:\n{log_path.read_text(errors='replace')[-5000:]}")
        time.sleep(every)
    return result


# --- the reference -------------------------------------------------------------------------


def reference_inputs(data: Dataset):
    """Per slice: (name as Goldset stores it, query indices averaged, qrels typed list), and
    the per-query label tables. A slice keeps the queries with a relevant page in it."""
    from numba.typed import List as TypedList

    order = np.lexsort((data.label_page, -data.label_grade, data.label_query))  # ranx's order: highest grade first
    q, p, g = data.label_query[order], data.label_page[order], data.label_grade[order]
    slices = [("", np.ones(len(q), dtype=bool), np.ones(data.queries, dtype=bool))]
    for value, name in enumerate(LANGS):
        slices.append((f"query:lang={name}", np.ones(len(q), dtype=bool), data.query_lang == value))
    for value, name in enumerate(DOC_TYPES):
        slices.append((f"page:doc_type={name}", data.page_type[p] == value, np.ones(data.queries, dtype=bool)))
    built = []
    for name, label_kept, query_kept in slices:
        kq, kp, kg = q[label_kept], p[label_kept], g[label_kept]
        has_relevant = np.bincount(kq[kg >= 1], minlength=data.queries) > 0
        queries = np.flatnonzero(has_relevant & query_kept)
        table = np.column_stack([kp, kg]).astype(np.float64)
        offsets = np.concatenate(([0], np.cumsum(np.bincount(kq, minlength=data.queries))))
        qrels = TypedList([table[offsets[i] : offsets[i + 1]] for i in queries.tolist()])
        built.append((name, queries, qrels))
    return built


def reference_run_lists(data: Dataset, number: int, slices) -> list:
    """Run `number` as one typed list a slice, in the slice's query order: each answered
    query's [doc key, score] rows best first, an empty (0, 2) array for one not answered."""
    from numba.typed import List as TypedList

    answered, keys = data.generate_run(number)
    table = np.empty((keys.size, 2), dtype=np.float64)
    table[:, 0] = keys.ravel()
    table[:, 1] = np.tile(np.arange(data.depth, 0, -1, dtype=np.float64), len(answered))
    row_of_query = np.full(data.queries, -1)
    row_of_query[answered] = np.arange(len(answered))
    empty = np.empty((0, 2), dtype=np.float64)
    lists = []
    for _name, queries, _qrels in slices:
        rows = row_of_query[queries].tolist()
        lists.append(TypedList([table[r * data.depth : (r + 1) * data.depth] if r >= 0 else empty for r in rows]))
    return lists


def measure_reference(data: Dataset, runs: int, metrics: list[str]) -> tuple[float, dict]:
    """Seconds of ranx.evaluate over every run and slice (typed lists built untimed), and
    {(run number, slice): {metric: mean}}."""
    import ranx

    slices = reference_inputs(data)
    # Load the kernels from the cache before timing, as the worker does when it starts.
    ranx.evaluate(slices[0][2], reference_run_lists(data, 0, slices[:1])[0], metrics, save_results_in_run=False)
    seconds, means = 0.0, {}
    for number in range(runs):
        run_lists = reference_run_lists(data, number, slices)
        started = time.perf_counter()
        results = [ranx.evaluate(qrels, run, metrics, save_results_in_run=False) for (_, _, qrels), run in zip(slices, run_lists)]
        seconds += time.perf_counter() - started
        for (name, _, _), result in zip(slices, results):
            means[(number, name)] = result
        print(f"  reference: run {number + 1} of {runs}", file=sys.stderr)
    return seconds, means


# --- measuring -------------------------------------------------------------------------------


@dataclass
class Result:
    seconds: float
    publish_seconds: float
    first_done_seconds: float
    evaluations: int
    scores: int
    entries: int
    labels: int
    peaks: dict[str, int]
    reference_seconds: float = 0.0
    max_difference: float = 0.0
    server_version: str = ""


def measure(args: argparse.Namespace, data: Dataset, work: Path) -> Result:
    from django.core.management import call_command
    from django.db import connection

    from evaluation.models import Evaluation, Run, Score
    from evaluation.selectors import metrics_for
    from evaluation.services import evaluation_compute, run_import
    from goldenset.models import GoldenSet
    from goldenset.services import golden_set_create, version_publish

    call_command("migrate", verbosity=0)
    version_of_server = server_version()
    print(f"  golden set: {data.pages} pages, {data.queries} queries, {len(data.label_grade)} labels ...", file=sys.stderr)
    golden_set_create(slug=SLUG, name=SLUG, source=golden_set_source(data))
    golden_set = GoldenSet.objects.get(slug=SLUG)

    log_path = work / "worker.log"
    worker = celery_worker(
        database_url=args.database_url,
        broker_url=args.broker_url,
        queue=args.queue,
        concurrency=args.concurrency,
        log_path=log_path,
    )
    with worker as process:
        for number in range(args.runs):
            print(f"  run_import: run {number + 1} of {args.runs} ...", file=sys.stderr)
            system = f"system-{number + 1}"
            lines = data.run_lines(number, system)
            run_import(golden_set=golden_set, lines=lines, source_name=f"{system}.trec", system=system, stage="first_stage")

        # Each upload sent a task that finds no version yet; the worker clears them before the clock starts.
        def uploads_done() -> bool:
            return log_path.read_text(errors="replace").count("'no version'") == args.runs

        wait_for(uploads_done, "the uploads' tasks", log_path)
        connection.close()

        print("  version_publish, then waiting for every evaluation ...", file=sys.stderr)
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        version = version_publish(golden_set=golden_set, note="bench")
        publish_seconds = time.perf_counter() - started
        finished = Evaluation.objects.filter(version=version, status__in=[Evaluation.Status.DONE, Evaluation.Status.FAILED])
        wait_for(lambda: finished.count() == args.runs, "every evaluation", log_path, every=0.2)
        stamps = sorted(Evaluation.objects.filter(version=version).values_list("finished_at", flat=True))
        peaks = worker_peak_memory(process.pid)

    failed = list(Evaluation.objects.filter(version=version, status=Evaluation.Status.FAILED).values_list("error", flat=True))
    if failed:
        raise SystemExit(f"{len(failed)} evaluation(s) failed: {failed[0]}")
    result = Result(
        seconds=(stamps[-1] - started_at).total_seconds(),
        publish_seconds=publish_seconds,
        first_done_seconds=(stamps[0] - started_at).total_seconds(),
        evaluations=len(stamps),
        scores=Score.objects.filter(evaluation__version=version).count(),
        entries=sum(Run.objects.filter(golden_set=golden_set).values_list("entry_count", flat=True)),
        labels=version.label_count,
        peaks=peaks,
        server_version=version_of_server,
    )

    metrics = [metric.name for metric in metrics_for(golden_set, version)]
    print("  reference: ranx.evaluate on prebuilt typed lists ...", file=sys.stderr)
    result.reference_seconds, reference = measure_reference(data, args.runs, metrics)
    stored = {}
    rows = Score.objects.filter(evaluation__version=version).values_list("evaluation__run__system", "slice", "metric", "value")
    for system, slice_name, metric, value in rows:
        stored[(int(system.split("-")[1]) - 1, slice_name, metric)] = value
    differences = [abs(stored[(number, name, metric)] - means[metric]) for (number, name), means in reference.items() for metric in metrics]
    if len(differences) != len(stored):
        raise SystemExit(f"Goldset stored {len(stored)} scores, the reference computed {len(differences)}")
    result.max_difference = max(differences)

    if args.profile:
        # The first evaluation a process makes fills its caches; the ones after it are what
        # most of a recompute is made of. Both are shown.
        for number, what in ((1, "the first in this process"), (2, "a later one")):
            run = Run.objects.get(golden_set=golden_set, system=f"system-{number}")
            profiler = cProfile.Profile()
            profiler.enable()
            evaluation_compute(run=run, version=version)
            profiler.disable()
            stats = pstats.Stats(profiler, stream=io.StringIO())
            print(f"\ncProfile of evaluation_compute of run {number} ({what}), top 25 by cumulative time:")
            stats.stream = sys.stdout
            stats.sort_stats("cumulative").print_stats(25)
    return result


def report(args: argparse.Namespace, data: Dataset, result: Result) -> None:
    ratio = result.seconds / result.reference_seconds
    memory = sum(result.peaks.values())
    print()
    print("Goldset recompute on a real Celery worker against ranx.evaluate on prebuilt typed lists, same run")
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, PostgreSQL {result.server_version}, "
        f"Redis broker {args.broker_url}"
    )
    print(
        f"data: {data.queries} queries, {result.labels} labels over {data.pages} pages; {args.runs} runs x {data.queries} "
        f"queries x depth {data.depth} = {result.entries} run entries; metrics: 10 defaults (k_first 100, k_final 8); "
        f"slices: overall + query lang x3 + page doc_type x3"
    )
    print(f"worker: 1 process, prefork pool of {args.concurrency} (one a core); the reference uses numba's threads on every core")
    print()
    header = f"{'step':<46}{'seconds':>10}"
    print(header)
    print("-" * len(header))
    print(f"{'publish -> last score stored (Goldset)':<46}{result.seconds:>9.2f}s")
    print(f"{'  of which version_publish':<46}{result.publish_seconds:>9.2f}s")
    print(f"{'  first evaluation stored after':<46}{result.first_done_seconds:>9.2f}s")
    print(f"{'ranx.evaluate, prebuilt typed lists (reference)':<46}{result.reference_seconds:>9.2f}s")
    print()
    verdict = "PASS" if ratio <= TIME_TARGET else "MISS"
    print(f"time:   {ratio:.2f}x the reference (target {TIME_TARGET:.0f}x)  {verdict}")
    print(f"        issue #15's next target: within {TIME_TARGET_NEXT}x  {'PASS' if ratio <= TIME_TARGET_NEXT else 'MISS'}")
    memory_verdict = "PASS" if memory <= MEMORY_TARGET_BYTES else "MISS"
    peaks = ", ".join(f"{name}: {peak / 2**20:.0f} MiB" for name, peak in result.peaks.items())
    print(
        f"memory: worker peak RSS {memory / 2**20:.0f} MiB summed over its processes ({peaks}); "
        f"target {MEMORY_TARGET_BYTES / 2**30:.0f} GiB  {memory_verdict}"
    )
    print(
        f"check:  {result.evaluations} evaluations, {result.scores} scores stored; largest difference from the "
        f"reference's means {result.max_difference:.1e}"
    )


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url, CELERY_BROKER_URL=args.broker_url, CELERY_TASK_DEFAULT_QUEUE=args.queue)

    print(f"generating data (seed {args.seed}) ...", file=sys.stderr)
    data = generate_dataset(pages=args.pages, queries=args.queries, depth=args.depth, seed=args.seed)
    purge_queue(args.broker_url, args.queue)
    try:
        with tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp, scratch_database(args.database_url):
            result = measure(args, data, Path(temp))
    finally:
        purge_queue(args.broker_url, args.queue)
    report(args, data, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=os.cpu_count() or 1,
        help="pool processes of the worker (default: the cores)",
    )
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generated data")
    database_url_argument(parser, "goldset_bench_recompute")
    parser.add_argument(
        "--broker-url",
        default="redis://127.0.0.1:6379/0",
        help="Redis for the worker (in a queue of this run's own)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print cProfile statistics of evaluation_compute of one run",
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.pages < args.depth * 2:
        parser.error("--pages must be at least twice --depth")
    args.queue = f"goldset-bench-{os.getpid()}"
    run(args)


if __name__ == "__main__":
    main()
