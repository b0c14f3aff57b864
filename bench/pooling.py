"""Do the adaptive judging orders earn their place? A replay on Cranfield.

    .venv/bin/python bench/pooling.py [--data ../shared/data/cranfield] [--depth 10 50]
                                      [--model-labels FILE [--model-labels-format trec|jsonl]]

Pools the four Cranfield runs at each depth, then judges the pool one pair at a time in
the order each strategy gives, as one annotator working through the queue would (queries
take turns, as the queue's positions make them), answering every pair from the known
qrels: relevant when graded 1 or more (-1 is the source paper, not relevant). Prints, for
each strategy, how many judgments it took to find 50%, 80% and 90% of the relevant pages
the pool holds; fewer is better. The oracle line is the best any order can do under the
same turns: each query's relevant pages first.

"model first" uses model labels: it judges the pairs a model scores highest first. Its
scores come from `--model-labels FILE` (model labels as import_model_labels reads them,
TREC qrels or JSONL; the score where given, else the grade), or else from lib.minilm when
the packaged model is installed (the optional model extra, requirements-model.txt): the
cosine of the query's and the page's all-MiniLM-L6-v2 embeddings (title and text, cut at
the model's 256 word pieces), computed offline. Without either it is left out, and the
bench says why.
tests/labeling/pools/test_pooling.py keeps the adaptive strategies at least as good as depth
on this replay. The turns are the interleaved query order's; a set judging one query at a
time (the default) takes each query's pairs in the same order, query after query, so each
query's count of judgments is the replay's.
"""

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from labeling.pools import strategies as pooling  # noqa: E402  (needs the repository on sys.path)
from lib.errors import ProblemCollector  # noqa: E402
from lib.formats import MODEL_LABEL_READERS  # noqa: E402

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


def model_scores_from_file(path: Path, fmt: str) -> dict[tuple[str, str], float]:
    """{(query id, doc id): score} of a model-label file; the grade where a line gives
    no score. SystemExit naming the bad lines of a file that does not read cleanly."""
    problems = ProblemCollector()
    with path.open(encoding="utf-8") as lines:
        scores = {
            (label.query_id, label.doc_id): float(label.grade if label.score is None else label.score)
            for label in MODEL_LABEL_READERS[fmt](lines, path.name, problems)
        }
    if problems:
        raise SystemExit("\n".join(problems.problems[:20]))
    return scores


def model_scores_from_minilm(data: Path, runs) -> tuple[dict[tuple[str, str], float] | None, str]:
    """({(query id, doc id): cosine of the all-MiniLM-L6-v2 embeddings} for every pair the
    runs name, or None when the packaged model cannot run here; and why not, or "")."""
    try:
        from lib import minilm
    except ImportError:
        return None, "lib.minilm is not in this checkout"
    problem = minilm.install_problem()
    if problem:
        return None, problem

    def read(name: str) -> dict[str, str]:
        with (data / name).open(encoding="utf-8") as lines:
            rows = (json.loads(line) for line in lines if line.strip())
            return {row["_id"]: " ".join(part for part in (row.get("title", ""), row.get("text", "")) if part) for row in rows}

    queries, pages = read("queries.jsonl"), read("corpus.jsonl")
    query_ids, doc_ids = list(queries), list(pages)
    query_vectors = minilm.embed([queries[q] for q in query_ids])
    page_vectors = minilm.embed([pages[d] for d in doc_ids])
    query_row = {q: i for i, q in enumerate(query_ids)}
    page_row = {d: i for i, d in enumerate(doc_ids)}
    scores = {}
    for run in runs:
        for query_id, ranked in run.items():
            for doc_id in ranked:
                if query_id in query_row and doc_id in page_row and (query_id, doc_id) not in scores:
                    scores[(query_id, doc_id)] = float(query_vectors[query_row[query_id]] @ page_vectors[page_row[doc_id]])
    return scores, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder with runs/*.run and qrels/test.tsv")
    parser.add_argument("--depth", type=int, nargs="+", default=[10, 50], help="pool depths to replay (default: 10 50)")
    parser.add_argument(
        "--model-labels", type=Path, metavar="FILE", help="model labels ordering 'model first' (default: lib.minilm's cosine)"
    )
    parser.add_argument(
        "--model-labels-format",
        choices=list(MODEL_LABEL_READERS),
        default=None,
        help="form of --model-labels (default: jsonl for a .jsonl file, else trec)",
    )
    args = parser.parse_args()
    run_paths = sorted((args.data / "runs").glob("*.run"))
    if not run_paths:
        raise SystemExit(f"no runs/*.run under {args.data}")
    runs = pooling.runs_from_trec_files(run_paths)
    relevant = pooling.relevant_from_beir_qrels(args.data / "qrels" / "test.tsv")
    if args.model_labels is not None:
        fmt = args.model_labels_format or ("jsonl" if args.model_labels.suffix == ".jsonl" else "trec")
        model_scores, model_source, missing = model_scores_from_file(args.model_labels, fmt), f"model labels from {args.model_labels}", ""
    else:
        started = time.perf_counter()
        (model_scores, missing), model_source = (
            model_scores_from_minilm(args.data, runs),
            "all-MiniLM-L6-v2 cosine of query and page (lib.minilm, offline)",
        )
        if model_scores is not None:
            print(f"embedded the queries and pages with all-MiniLM-L6-v2 in {time.perf_counter() - started:.0f} s (a shared machine)")

    print(f"Cranfield replay: {len(runs)} runs ({', '.join(path.stem for path in run_paths)})")
    print(f"qrels: {sum(map(len, relevant.values()))} relevant pairs (grade >= 1) over {len(relevant)} queries")
    if model_scores is None:
        print(f"model first: left out ({missing}; no --model-labels file was given)")
    else:
        print(f"model first uses model labels: {len(model_scores)} pairs scored by {model_source}")
    for depth in args.depth:
        results = {}
        started = time.perf_counter()
        for name, cls in pooling.STRATEGIES.items():
            if cls.uses_model_labels:
                if model_scores is not None:
                    results[name] = pooling.simulate(name, runs, relevant, depth, model_scores=model_scores)
            else:
                results[name] = pooling.simulate(name, runs, relevant, depth)
        seconds = time.perf_counter() - started
        any_result = next(iter(results.values()))
        print()
        print(
            f"pool depth {depth}: {any_result.pool_size} pairs over {any_result.queries} queries, "
            f"{any_result.relevant} of them relevant ({seconds:.1f} s for the {len(results)} replays)"
        )
        header = (
            f"{'strategy':<12}"
            + "".join(f"{f'{fraction:.0%} found':>12}" for fraction in pooling.FRACTIONS)
            + "   judgments saved against depth"
        )
        print(header)
        print("-" * len(header))
        best = oracle(runs, relevant, depth)
        print(f"{'oracle':<12}" + "".join(f"{best.judgments_to_find(fraction):>12}" for fraction in pooling.FRACTIONS))
        baseline = [results["depth"].judgments_to_find(fraction) for fraction in pooling.FRACTIONS]
        for name, result in results.items():
            counts = [result.judgments_to_find(fraction) for fraction in pooling.FRACTIONS]
            saved = "" if name == "depth" else "   " + " ".join(f"{(b - n) / b:>6.1%}" for n, b in zip(counts, baseline))
            print(f"{name:<12}" + "".join(f"{n:>12}" for n in counts) + saved)
    print()
    print("judgments needed to find that share of the pool's relevant pages; fewer is better")
    if model_scores is not None:
        print(f"model_first uses model labels ({model_source}); the others use none")


if __name__ == "__main__":
    main()
