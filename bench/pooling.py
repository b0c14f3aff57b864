"""Do the adaptive judging orders earn their place? A replay on Cranfield.

    .venv/bin/python bench/pooling.py [--data ../shared/data/cranfield] [--depth 10 50]

Pools the four Cranfield runs at each depth, then judges the pool one pair at a time in
the order each strategy gives, as one annotator working through the queue would (queries
take turns, as the queue's positions make them), answering every pair from the known
qrels: relevant when graded 1 or more (-1 is the source paper, not relevant). Prints, for
each strategy, how many judgments it took to find 50%, 80% and 90% of the relevant pages
the pool holds; fewer is better. The oracle line is the best any order can do under the
same turns: each query's relevant pages first.
tests/labeling/pools/test_pooling.py keeps the adaptive strategies at least as good as depth
on this replay. The turns are the interleaved query order's; a set judging one query at a
time (the default) takes each query's pairs in the same order, query after query, so each
query's count of judgments is the replay's.
"""

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from labeling.pools import strategies as pooling  # noqa: E402  (needs the repository on sys.path)

DEFAULT_DATA = REPO.parent / "shared" / "data" / "cranfield"


def oracle(runs, relevant: dict[str, set[str]], depth: int) -> pooling.SimulationResult:
    """Judging with each query's relevant pages first, queries taking turns."""
    lists = []
    for query_id in sorted({q for run in runs for q in run}, key=pooling.natural_key):
        doc_ids, _ = pooling.pool_matrix(runs, query_id, depth)
        hits = sum(doc_id in relevant.get(query_id, ()) for doc_id in doc_ids)
        lists.append([True] * hits + [False] * (len(doc_ids) - hits))
    found, hits = [], 0
    for turn in range(max(map(len, lists), default=0)):
        for answers in lists:
            if turn < len(answers):
                hits += answers[turn]
                found.append(hits)
    return pooling.SimulationResult("oracle", depth, len(lists), len(found), hits, pooling.np.array(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder with runs/*.run and qrels/test.tsv")
    parser.add_argument("--depth", type=int, nargs="+", default=[10, 50], help="pool depths to replay (default: 10 50)")
    args = parser.parse_args()
    run_paths = sorted((args.data / "runs").glob("*.run"))
    if not run_paths:
        raise SystemExit(f"no runs/*.run under {args.data}")
    runs = pooling.runs_from_trec_files(run_paths)
    relevant = pooling.relevant_from_beir_qrels(args.data / "qrels" / "test.tsv")

    print(f"Cranfield replay: {len(runs)} runs ({', '.join(path.stem for path in run_paths)})")
    print(f"qrels: {sum(map(len, relevant.values()))} relevant pairs (grade >= 1) over {len(relevant)} queries")
    for depth in args.depth:
        results = {}
        started = time.perf_counter()
        for name in pooling.STRATEGIES:
            results[name] = pooling.simulate(name, runs, relevant, depth)
        seconds = time.perf_counter() - started
        any_result = next(iter(results.values()))
        print()
        print(f"pool depth {depth}: {any_result.pool_size} pairs over {any_result.queries} queries, "
              f"{any_result.relevant} of them relevant ({seconds:.1f} s for the {len(results)} replays)")
        header = f"{'strategy':<10}" + "".join(f"{f'{fraction:.0%} found':>12}" for fraction in pooling.FRACTIONS) + "   judgments saved against depth"
        print(header)
        print("-" * len(header))
        best = oracle(runs, relevant, depth)
        print(f"{'oracle':<10}" + "".join(f"{best.judgments_to_find(fraction):>12}" for fraction in pooling.FRACTIONS))
        baseline = [results["depth"].judgments_to_find(fraction) for fraction in pooling.FRACTIONS]
        for name, result in results.items():
            counts = [result.judgments_to_find(fraction) for fraction in pooling.FRACTIONS]
            saved = "" if name == "depth" else "   " + " ".join(f"{(b - n) / b:>6.1%}" for n, b in zip(counts, baseline))
            print(f"{name:<10}" + "".join(f"{n:>12}" for n in counts) + saved)
    print()
    print("judgments needed to find that share of the pool's relevant pages; fewer is better")


if __name__ == "__main__":
    main()
