"""`make test-fast` against its target (issue 24: under 4 minutes on this 2-core machine),
with where the time goes: each test's CPU (its process's own and that of the children it
waited for), summed over the suite, the tests and the modules that take the most, the tests
that waited longest (wall time less CPU), the local database server's CPU, and the
machine's busy and idle core-seconds over the run (from /proc/stat).

    .venv/bin/python bench/suite_speed.py [--processes N] [--top 15] [--waits 10] [--modules 10] [--tests-of COMMIT]

`--tests-of COMMIT` times the same target on this checkout's code but only on the tests that
COMMIT already had (the node ids its own collection lists, in a temporary worktree of it):
the suite an issue was written against, without the tests that later work added.

Run it alone: the suite keeps both cores busy, so anything running beside it shows in the
figure. The same file is the pytest plugin that records each test's CPU (`-p suite_speed`,
loaded in every xdist process).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

TARGET_SECONDS = 240.0
ROOT = Path(__file__).resolve().parent.parent

# --- the plugin: one line per test, written by the process that ran it ---------------------


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """With SUITE_SPEED_ONLY (a file of node ids, one a line), only those tests run."""
    only = os.environ.get("SUITE_SPEED_ONLY")
    if not only:
        return
    listed = set(Path(only).read_text().splitlines())
    kept, left_out = [], []
    for item in items:  # xdist's loadgroup adds "@group" to the node ids of grouped tests
        (kept if item.nodeid.split("@", 1)[0] in listed else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get("SUITE_SPEED_DIR")
    before, started = _cpu_seconds(), time.perf_counter()
    yield
    if folder:
        with open(Path(folder) / f"{os.getpid()}.tsv", "a") as out:
            out.write(f"{item.nodeid}\t{_cpu_seconds() - before:.3f}\t{time.perf_counter() - started:.3f}\n")


# --- the bench ------------------------------------------------------------------------------


def _machine_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of all cores since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields[:8]) - idle, idle


def _database_server_seconds() -> float | None:
    """CPU of the local PostgreSQL server's processes so far: the postmaster's own and its
    ended children's (each test process's backend ends with it). None where no local
    postmaster is found."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            name = stat.with_name("comm").read_text().strip()
        except OSError:
            continue
        parent = Path(f"/proc/{fields[1]}/comm")
        if name == "postgres" and (not parent.exists() or parent.read_text().strip() != "postgres"):
            # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name
            return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return None


def _node_ids_of(commit: str, folder: Path) -> list[str]:
    """The node ids COMMIT's suite collects, every test of it (the make target then makes its
    own selection), collected by this interpreter in a temporary worktree of COMMIT made in
    `folder`."""
    tree = folder / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), commit], cwd=ROOT, check=True)
    try:
        collected = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
            cwd=tree,
            capture_output=True,
            text=True,
        )
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    if not ids:
        sys.exit(f"{commit}'s suite collected no test:\n{collected.stdout[-2000:]}{collected.stderr[-2000:]}")
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=3, help="TEST_PROCESSES (the Makefile's default: 3)")
    parser.add_argument(
        "--target", default="test-fast", help="the make target to time (test-sqlite: the tests that reach a database, on SQLite)"
    )
    parser.add_argument("--top", type=int, default=15, help="how many of the costliest tests to list")
    parser.add_argument("--waits", type=int, default=10, help="how many of the tests that waited longest (wall less CPU) to list")
    parser.add_argument("--modules", type=int, default=10, help="how many of the costliest test modules to list")
    parser.add_argument("--tests-of", metavar="COMMIT", help="run only the tests that COMMIT had (on this checkout's code)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="suite_speed_") as folder:
        only = {}
        if args.tests_of:
            ids = _node_ids_of(args.tests_of, Path(folder))
            listed = Path(folder) / "node_ids.txt"
            listed.write_text("\n".join(ids) + "\n")
            only = {"SUITE_SPEED_ONLY": str(listed)}
            print(f"only the tests of the {len(ids)} that {args.tests_of} collects, on this checkout's code")
        env = {
            **os.environ,
            **only,
            "SUITE_SPEED_DIR": folder,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")])),
        }
        command = ["make", args.target, f"TEST_PROCESSES={args.processes}", "PYTEST_ARGS=-p suite_speed -q"]
        busy_before, idle_before = _machine_ticks()
        database_before = _database_server_seconds()
        started = time.perf_counter()
        finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        busy_after, idle_after = _machine_ticks()
        database_after = _database_server_seconds()
        # (node id, CPU seconds, wall seconds) of each test, as the plugin above wrote them
        rows = [
            (node, float(seconds), float(took))
            for tsv in Path(folder).glob("*.tsv")
            for node, seconds, took in (line.split("\t") for line in tsv.read_text().splitlines())
        ]

    summary = [line for line in finished.stdout.splitlines() if " passed" in line or " failed" in line]
    print(f"suite: {len(rows)} tests on {args.processes} processes, {os.cpu_count()} cores; {summary[-1] if summary else 'no summary'}")
    if finished.returncode:  # the failure first, then where the time went all the same
        print(finished.stdout[-3000:], finished.stderr[-2000:], sep="\n")
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = sorted(((seconds, node) for node, seconds, _ in rows), reverse=True)
    waits = sorted(((took - seconds, node) for node, seconds, took in rows), reverse=True)
    print(f"CPU of the tests: {sum(seconds for seconds, _ in cpu):.0f} s (own and waited-for children)")
    print(
        f"machine: {(busy_after - busy_before) / ticks:.0f} core-seconds busy, "
        f"{(idle_after - idle_before) / ticks:.0f} idle (the database server and other processes included)"
    )
    if database_before is not None and database_after is not None:
        print(f"database server: {database_after - database_before:.0f} core-seconds (its backends that ended during the run)")
    print(f"costliest {args.top} tests:")
    for seconds, node in cpu[: args.top]:
        print(f"  {seconds:6.2f} s  {node}")
    # Waiting (for a server, a subprocess, a timeout, or a core on a busy machine) is where
    # a process leaves a core to the others, or to nobody (the machine's idle time).
    print(f"longest {args.waits} waits (wall less CPU):")
    for seconds, node in waits[: args.waits]:
        print(f"  {seconds:6.2f} s  {node}")
    # A module's tests together (a module-scoped fixture is paid by its first test).
    modules: dict[str, list[float]] = {}
    for seconds, node in cpu:
        modules.setdefault(node.split("::", 1)[0], []).append(seconds)
    print(f"costliest {args.modules} modules:")
    for path, times in sorted(modules.items(), key=lambda item: -sum(item[1]))[: args.modules]:
        print(f"  {sum(times):6.2f} s  {len(times):4d} tests  {path}")
    if finished.returncode:
        sys.exit(f"make {args.target} failed after {wall:.0f} s: no figure")
    verdict = "PASS" if wall < TARGET_SECONDS else "MISS"
    which = f" (only the tests of {args.tests_of})" if args.tests_of else ""
    print(f"make {args.target}{which}: {wall:.0f} s wall against a target of {TARGET_SECONDS:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
