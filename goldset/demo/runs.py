"""Demo runs for wiki-demo that replay the seed's story in numbers.

A hybrid first stage finds about 91% of relevant pages in its top 100 and a reranker
keeps about 81% in the top 8 (recall@100 = 0.91, recall@8 = 0.81 in the seed). Its
latest run misses most pages newer than 30 days: the incremental index was not refreshed
on some shards, so recall@100 on new pages falls to about 0.41 while old pages stay near
0.93. An older run of the same system, from before the fault, did not have that gap, and
a plain BM25 first stage sits below the 0.85 line. Everything is generated from a fixed
seed, as TREC lines (no database: goldset.demo.services uploads them through run_import
like any upload and scores them against every version).
"""

import random
from dataclasses import dataclass

DEPTH = 100


@dataclass(frozen=True)
class DemoSystem:
    name: str
    system: str
    stage: str
    # Chance that a relevant page is retrieved within the top DEPTH, for old and new pages.
    found_old: float
    found_new: float
    # For a reranked run: chance that a retrieved relevant page is lifted into the top 8.
    lift: float = 0.0


DEMO_SYSTEMS = [
    DemoSystem("hybrid-2026-10 first stage", "hybrid", "first_stage", 0.93, 0.90),
    DemoSystem("hybrid-2026-11 first stage", "hybrid", "first_stage", 0.95, 0.41),
    DemoSystem("hybrid-2026-11 reranked", "hybrid", "reranked", 0.95, 0.41, lift=0.90),
    DemoSystem("bm25 first stage", "bm25", "first_stage", 0.80, 0.70),
]


def _rank_for_found(rng: random.Random) -> int:
    """A rank in 1..DEPTH shaped like the seed's first stage: recall@10 about 0.62/0.91,
    recall@50 about 0.86/0.91 of what is found in the top 100."""
    draw = rng.random()
    if draw < 0.68:
        return rng.randint(1, 10)
    if draw < 0.945:
        return rng.randint(11, 50)
    return rng.randint(51, DEPTH)


def demo_run_lines(
    system: DemoSystem, *, labels: dict[str, dict[str, int]], new_pages: set[str], all_doc_ids: list[str], query_ids: list[str], seed: int
) -> list[str]:
    """TREC run lines for every query: relevant pages placed at drawn ranks (or missed),
    the other positions filled with pages of the corpus, scores strictly decreasing."""
    rng = random.Random(f"{seed}:{system.name}")
    lines = []
    for query_id in query_ids:
        ranking: list[str | None] = [None] * DEPTH
        relevant = [doc for doc, grade in sorted(labels.get(query_id, {}).items()) if grade >= 1]
        for doc_id in relevant:
            if rng.random() >= (system.found_new if doc_id in new_pages else system.found_old):
                continue
            rank = _rank_for_found(rng)
            if system.lift and rng.random() < system.lift:
                rank = rng.randint(1, 8)
            while ranking[rank - 1] is not None:
                rank = rank % DEPTH + 1
            ranking[rank - 1] = doc_id
        taken = set(ranking)
        for position in range(DEPTH):
            if ranking[position] is None:
                doc_id = rng.choice(all_doc_ids)
                while doc_id in taken:
                    doc_id = rng.choice(all_doc_ids)
                ranking[position] = doc_id
                taken.add(doc_id)
        tag = system.system.replace(" ", "_")
        lines.extend(f"{query_id} Q0 {doc_id} {rank} {DEPTH - rank + 1:.1f} {tag}\n" for rank, doc_id in enumerate(ranking, start=1))
    return lines
