"""Does recompute scale out? One worker of one core against two workers of one core each,
on the same data, in one run. Target: two finish at least 1.6x faster than one.

    .venv/bin/python bench/scale_out.py [--runs 20 --queries 3000 --depth 100 --pages 30000]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_scale_out]
        [--broker-url redis://127.0.0.1:6379/0] [--seed 20240601]

Generates the data of bench/recompute.py (the same generator: --runs runs of --depth pages
for each of --queries queries, slices lang x3 and doc_type x3, 5 relevant labels a query),
imports the runs and publishes one version with no worker running, then times the same
recompute twice, from sending `evaluate_version_task` to the last evaluation stored:

- one: one `celery worker` process, pool of 1, pinned to core 0 (taskset), numba with one
  thread;
- two: two `celery worker` processes on one queue, each a pool of 1 pinned to its own core
  (0 and 1), numba with one thread each.

Before each phase the version's evaluations are deleted, with what the workers store for it
(its scoring inputs, the labels each run pools), so both phases do the whole work;
the workers are started and ready (kernels loaded from NUMBA_CACHE_DIR) before the clock
starts. Each evaluation is one task, so the runs spread over whatever workers listen.
PostgreSQL runs on the same two cores and does its part of each evaluation's writes in
both phases: the speed-up it prints is what a deployment adding a second one-core worker
beside its database would see, not the workers' alone. The scores of both phases are
compared, value for value.
"""

import argparse
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.recompute import SLUG, celery_worker, generate_dataset, golden_set_source, wait_for  # noqa: E402
from bench.scratch import database_url_argument, django_setup, purge_queue, scratch_database, server_version  # noqa: E402

TARGET = 1.6


def phase(args, version, work: Path, cpus: list[int]) -> tuple[float, dict]:
    """Seconds from sending the version's recompute to its last evaluation stored, with one
    worker a core of `cpus`; and the scores stored, {(run, slice, metric): value}."""
    from django.db import connection

    from evaluation.models import Evaluation, RunPooledLabels, Score, VersionScoringInputs
    from evaluation.tasks import evaluate_version_task

    # What the first phase's workers stored for the version goes too (its scoring inputs, the
    # labels each run pools), so that both phases start as after a publish.
    Evaluation.objects.filter(version=version).delete()
    RunPooledLabels.objects.filter(version=version).delete()
    VersionScoringInputs.objects.filter(version=version).delete()
    purge_queue(args.broker_url, args.queue)
    log_path = work / f"workers-{len(cpus)}.log"
    with ExitStack() as stack:
        for cpu in cpus:
            stack.enter_context(
                celery_worker(
                    database_url=args.database_url,
                    broker_url=args.broker_url,
                    queue=args.queue,
                    concurrency=1,
                    log_path=work / f"worker-{len(cpus)}-{cpu}.log",
                    cpu=cpu,
                    name=f"core{cpu}",
                )
            )
        log_path.write_text("")
        connection.close()
        started = time.perf_counter()
        evaluate_version_task.apply_async((version.pk,), queue=args.queue)
        finished = Evaluation.objects.filter(version=version, status__in=[Evaluation.Status.DONE, Evaluation.Status.FAILED])
        wait_for(lambda: finished.count() == args.runs, f"{args.runs} evaluations on {len(cpus)} worker(s)", log_path, every=0.05)
        seconds = time.perf_counter() - started
        workers = set(Evaluation.objects.filter(version=version).values_list("worker", flat=True))
    failed = list(Evaluation.objects.filter(version=version, status=Evaluation.Status.FAILED).values_list("error", flat=True))
    if failed:
        raise SystemExit(f"{len(failed)} evaluation(s) failed: {failed[0]}")
    if len(cpus) > 1 and len(workers) < len(cpus):
        raise SystemExit(f"the evaluations ran on {sorted(workers)} only: the second worker took no task")
    scores = {
        (run, slice_name, metric): value
        for run, slice_name, metric, value in Score.objects.filter(evaluation__version=version).values_list(
            "evaluation__run_id",
            "slice",
            "metric",
            "value",
        )
    }
    return seconds, scores


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url, CELERY_BROKER_URL=args.broker_url, CELERY_TASK_DEFAULT_QUEUE=args.queue)
    print(f"generating data (seed {args.seed}) ...", file=sys.stderr)
    data = generate_dataset(pages=args.pages, queries=args.queries, depth=args.depth, seed=args.seed)
    try:
        with tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp, scratch_database(args.database_url):
            from django.core.management import call_command

            from evaluation.models import Run
            from evaluation.services import run_import
            from goldenset.models import GoldenSet
            from goldenset.services import golden_set_create, version_publish

            call_command("migrate", verbosity=0)
            version_of_server = server_version()
            golden_set_create(slug=SLUG, name=SLUG, source=golden_set_source(data))
            golden_set = GoldenSet.objects.get(slug=SLUG)
            for number in range(args.runs):
                print(f"  run_import: run {number + 1} of {args.runs} ...", file=sys.stderr)
                system = f"system-{number + 1}"
                run_import(
                    golden_set=golden_set,
                    lines=data.run_lines(number, system),
                    source_name=f"{system}.trec",
                    system=system,
                    stage="first_stage",
                )
            version = version_publish(golden_set=golden_set, note="bench")
            entries = sum(Run.objects.filter(golden_set=golden_set).values_list("entry_count", flat=True))
            print("  one worker of one core ...", file=sys.stderr)
            one, scores_one = phase(args, version, Path(temp), [0])
            print("  two workers of one core each ...", file=sys.stderr)
            two, scores_two = phase(args, version, Path(temp), [0, 1])
    finally:
        purge_queue(args.broker_url, args.queue)
    if scores_one.keys() != scores_two.keys():
        raise SystemExit("the two phases stored different scores")
    difference = max(abs(scores_one[key] - scores_two[key]) for key in scores_one)
    speedup = one / two
    print()
    print("Recompute on one worker of one core against two workers of one core each, same data, same run")
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end), "
        f"Python {platform.python_version()}, PostgreSQL {version_of_server} on the same cores"
    )
    print(
        f"data: {args.runs} runs x {args.queries} queries x depth {args.depth} = {entries:,} run entries, "
        f"{len(data.label_grade):,} labels; {len(scores_one):,} scores stored a phase (10 metrics x 7 slices a run)"
    )
    print()
    print(f"{'workers':<40}{'seconds':>10}")
    print("-" * 50)
    print(f"{'one, pool of 1 on core 0':<40}{one:>9.2f}s")
    print(f"{'two, a pool of 1 each on cores 0 and 1':<40}{two:>9.2f}s")
    print()
    verdict = "PASS" if speedup >= TARGET else "MISS"
    print(f"scale-out: two workers {speedup:.2f}x faster than one (target {TARGET}x)  {verdict}")
    print(f"check: the two phases' scores differ by at most {difference:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--queries", type=int, default=3_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pages", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generated data")
    database_url_argument(parser, "goldset_bench_scale_out")
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/0", help="Redis (a queue of this run's own)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2: one task cannot spread over two workers")
    if (os.cpu_count() or 1) < 2:
        parser.error("this machine has one core: two workers of one core each cannot run")
    args.queue = f"goldset-bench-{os.getpid()}"
    run(args)


if __name__ == "__main__":
    main()
