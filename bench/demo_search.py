"""The demo search service (goldset.demo.search) against the demo's latest labels: does it
replay the seed's incident? Recall by page age (pages published in the last 30 days, or
before) at the first stage's k and the reranker's k_final, with 0, 1 and 2 stale shards;
the build time; the time a query takes in process and over HTTP with 16 clients.

    .venv/bin/python bench/demo_search.py [--seed 20261101]

No database. Recall is the mean over the queries that have a relevant page (grade >= 1)
in the slice of the share of those pages in the top k (the golden set's page slices).
The seed's figures: recall@100 0.93 for pages older than 30 days, 0.41 for newer ones
with two of six shards stale; recall@8 0.81 after reranking.
"""

import argparse
import http.client
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goldset.demo.generate import DEFAULT_SEED, demo_generate  # noqa: E402  (needs the repository on sys.path)
from goldset.demo.labels import demo_latest_labels  # noqa: E402
from goldset.demo.search import K_FINAL, DemoSearch  # noqa: E402
from goldset.demo.search_server import demo_search_server_started  # noqa: E402

CLIENTS = 16


def recall(search: DemoSearch, latest, *, k: int, stage: str) -> dict[str, tuple[float, int]]:
    """{slice: (mean recall@k, queries)} for the slices all, old and new."""
    shares: dict[str, list[float]] = {"all": [], "old": [], "new": []}
    for query_id, text in latest.queries.items():
        found = {hit.doc_id for hit in search.search(text, k, stage)}
        relevant = latest.relevant(query_id)
        for name, values in shares.items():
            in_slice = [d for d in relevant if name == "all" or (d in search.new_doc_ids) == (name == "new")]
            if in_slice:
                values.append(sum(d in found for d in in_slice) / len(in_slice))
    return {name: (sum(values) / len(values), len(values)) for name, values in shares.items()}


def http_rate(search: DemoSearch, texts: list[str]) -> tuple[int, float]:
    """(requests, seconds) for CLIENTS kept-alive clients asking every query at both stages."""
    done = []
    with demo_search_server_started(search=search) as server:
        host, port = server.server_address[:2]

        def client(offset: int) -> None:
            connection = http.client.HTTPConnection(host, port, timeout=30)
            for text in texts[offset::CLIENTS]:
                for path in ("/first-stage/search", "/reranked/search"):
                    connection.request("POST", path, json.dumps({"query": text}), {"Content-Type": "application/json"})
                    response = connection.getresponse()
                    response.read()
                    done.append(response.status)
            connection.close()

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    if any(status != 200 for status in done):
        raise SystemExit("a request failed")
    return len(done), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    latest = demo_latest_labels(demo_generate(seed=args.seed))
    started = time.perf_counter()
    search = DemoSearch(seed=args.seed)
    built = time.perf_counter() - started
    print(
        f"seed {args.seed}: {len(search.doc_ids)} pages ({len(search.new_doc_ids)} new), {len(latest.queries)} queries; "
        f"built in {built:.2f}s"
    )
    for stale in (0, 1, 2):
        search.set_stale(stale)
        print(f"{stale} stale shards (shards {search.stale_shard_numbers}), index size {search.index_size}:")
        for stage, k in (("first_stage", 10), ("first_stage", 50), ("first_stage", 100), ("reranked", K_FINAL)):
            figures = recall(search, latest, k=k, stage=stage)
            print(f"  {stage:11} recall@{k:<3} " + "  ".join(f"{name} {value:.3f} ({n} queries)" for name, (value, n) in figures.items()))
    search.set_stale(0)
    texts = list(latest.queries.values())
    for stage, k in (("first_stage", 100), ("reranked", K_FINAL)):
        started = time.perf_counter()
        for text in texts:
            search.search(text, k, stage)
        print(f"{stage} in process: {(time.perf_counter() - started) / len(texts) * 1000:.2f} ms a query")
    requests, elapsed = http_rate(search, texts * 2)
    print(f"HTTP, {CLIENTS} clients: {requests} requests in {elapsed:.2f}s, {requests / elapsed:.0f} a second")


if __name__ == "__main__":
    main()
