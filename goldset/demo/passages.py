"""The demo's second chunking and its run, generated (no database: goldset.demo.services
stores them).

The wiki's team tries passages instead of whole pages: `passages-400` cuts each page's text
into windows of about PASSAGE_CHARS characters that overlap by PASSAGE_OVERLAP, each cut at
a word boundary, and its reranked run returns passages. At document level it finds a few
points more of what the prompt needs than the page run, and puts more characters in the
prompt (two passages of a page often both make the top 8), so the compare page has a
trade-off to read (docs/chunking.md).
"""

import random
import re

from goldset.demo.runs import DEPTH, DemoSystem, demo_run_lines

CHUNKING_NAME = "passages-400"
CHUNKING_DESCRIPTION = "passages of about 400 characters overlapping by 100, cut at word boundaries (the demo's second chunking)"
PASSAGE_CHARS = 400
PASSAGE_OVERLAP = 100
PASSAGE_SYSTEM = DemoSystem("hybrid-passages-2026-11 reranked", "hybrid-passages", "reranked", 0.96, 0.55, lift=0.95)
# A reranked passage run keeps a page's second passage next to its first this often.
SECOND_PASSAGE_SHARE = 0.6


def passages(text: str, *, size: int = PASSAGE_CHARS, overlap: int = PASSAGE_OVERLAP) -> list[tuple[int, int]]:
    """[start, end) character ranges covering `text`: windows of about `size` characters,
    each starting `size - overlap` after the one before, both ends moved back to the
    nearest blank so no word is cut (a word longer than the window is cut). A text of
    `size` or fewer characters is one passage; an empty text has none."""
    length = len(text)
    if not length:
        return []
    ranges, start = [], 0
    while True:
        end = min(start + size, length)
        if end < length:
            blank = text.rfind(" ", start + 1, end)
            blank = max(blank, text.rfind("\n", start + 1, end))
            if blank > start + size // 2:
                end = blank
        ranges.append((start, end))
        if end >= length:
            return ranges
        following = max(end - overlap, start + 1)
        blank = max(text.rfind(" ", start + 1, following), text.rfind("\n", start + 1, following))
        start = blank + 1 if blank > start else following
        start = _skip_blanks(text, start)


def _skip_blanks(text: str, start: int) -> int:
    match = re.compile(r"\s*").match(text, start)
    return min(match.end(), len(text) - 1)


def passage_id(doc_id: str, number: int) -> str:
    """A passage's chunk id: its page's doc id and its place in the page (doc ids hold no whitespace)."""
    return f"{doc_id}#p{number}"


def passage_run_rankings(
    *,
    passages_of: dict[str, list[str]],
    labels: dict[str, dict[str, int]],
    new_pages: set[str],
    all_doc_ids: list[str],
    query_ids: list[str],
    seed: int,
) -> list[tuple[str, list[tuple[str, float]]]]:
    """The passage run, per query: the page ranking of PASSAGE_SYSTEM (as the page runs
    draw theirs), each page replaced by one of its passages and, often, its second one
    right after; DEPTH passages a query, scores strictly decreasing."""
    rng = random.Random(f"{seed}:{PASSAGE_SYSTEM.name}:passages")
    lines = demo_run_lines(PASSAGE_SYSTEM, labels=labels, new_pages=new_pages, all_doc_ids=all_doc_ids, query_ids=query_ids, seed=seed)
    by_query: dict[str, list[str]] = {}
    for line in lines:
        query_id, _, doc_id, *_ = line.split()
        by_query.setdefault(query_id, []).append(doc_id)
    rankings = []
    for query_id in query_ids:
        chosen: list[str] = []
        for doc_id in by_query.get(query_id, []):
            ids = passages_of.get(doc_id, [])
            if not ids:
                continue
            first = rng.randrange(len(ids))
            chosen.append(ids[first])
            if len(ids) > 1 and rng.random() < SECOND_PASSAGE_SHARE:
                chosen.append(ids[(first + 1) % len(ids)])
            if len(chosen) >= DEPTH:
                break
        chosen = chosen[:DEPTH]
        rankings.append((query_id, [(chunk_id, float(DEPTH - rank)) for rank, chunk_id in enumerate(chosen)]))
    return rankings
