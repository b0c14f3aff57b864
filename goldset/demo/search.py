"""A real search engine over the demo wiki, so that Goldset can be pointed at a live system
that replays a typical incident (SEMANTICS.md, "The funnel's targets"): answers
about recently added runbooks were "not found" because two of six shards were not
refreshed after incremental indexing.

Pure and in memory: the pages come from demo_generate (no database), a build takes about
a second for the 3,000 pages.

**Shards and routing.** Pages are routed to SHARD_COUNT shards by a CRC-32 of their wiki
space's routing key: the service a page is about (the team, for a policy page). Routing by
space is what a wiki search does so that a search filtered to one space touches one shard;
its side effect is what the incident needs: the runbook sprint and the two services
onboarded this month wrote most of the new pages into a few spaces, so the incremental
writes land on a few shards. Those busiest shards are the ones a refresh job that runs
out of time leaves behind, so `stale_shards=N` makes stale the N shards with the most new
pages (ties: lower shard number), which are also the ones a freshness probe would flag.

**Stale shards.** Each shard keeps two BM25 indexes: its snapshot (the pages published
before the last NEW_PAGE_DAYS days, i.e. before the new pages were indexed) and its
refreshed index (every page routed to it). A stale shard answers from its snapshot, so it
neither returns nor counts the new pages routed to it; the other shards are unaffected.

**First stage.** Okapi BM25 (k1 = 1.2, b = 0.75) over the title (counted twice, a title
boost) and the text with its HTML tags removed; tokens are lowercase runs of letters and
digits, stopwords of the five languages dropped, Japanese cut into character pairs. A
query that names a subject of the wiki's glossary (a symptom, task or policy, named in
every language in goldset.demo.vocabulary) is expanded with the subject's names in the
other languages at a lower weight, so that a question in Spanish finds the English
runbook. Statistics (document count, document frequencies, average length) are
shard-local, as in OpenSearch's default query_then_fetch: each shard scores with what it
holds, so a stale shard's idf is the snapshot's. Every shard returns its top k and the
coordinator merges by score, ties broken by doc id (ascending), keeping k.

**Exact mode.** `search(..., exact=True)` answers as if every shard were refreshed: the
true index, searched whole, what an exact-kNN (brute-force) request answers beside an
approximate one. The index probe compares the two; the shards whose exact answers the
normal search misses are the stale ones. Every hit names its shard (`SearchHit.shard`),
numbered 1 to SHARD_COUNT as people count them ("shard 2 of 6"), as an engine's answer
names the shard it came from (OpenSearch's `_shard`); inside, shards are numbered from 0.

**Reranked stage.** Re-scores the first stage's top RERANK_DEPTH with other evidence: the
share of the query's glossary subjects the page and its title name in any language, the
share of the query's other words (the service, the team) they contain, the share of the
query's adjacent word pairs found as a phrase, and the first-stage score scaled to the
best candidate's (RERANK_WEIGHTS); returns K_FINAL by default, ties again by doc id.

Labels are never read here: the scorers see only the pages and the query text.
"""

import math
import re
import threading
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from goldset.demo.generate import DEFAULT_SEED, NEW_PAGE_DAYS, REFERENCE_DATE, demo_generate, pages_dates_move
from goldset.demo.vocabulary import POLICIES, SYMPTOMS, TASKS

SHARD_COUNT = 6
FIRST_STAGE_K = 100
RERANK_DEPTH = 100
# The demo golden set's k_first and k_final (goldset.demo.services): top 100 down to 8.
K_FINAL = 8
STAGES = ("first_stage", "reranked")
BM25_K1 = 1.2
BM25_B = 0.75
TITLE_WEIGHT = 2
# How much a glossary word the query did not use counts, against a word it did.
EXPANSION_WEIGHT = 0.3

_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[^\W_]+")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_SPLIT = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
# Words that carry no subject in the wiki's five languages; kept out of the indexes so that
# a query's work stays on the few postings that tell pages apart.
STOPWORDS = frozenset(
    "a an and are at be by do does for from how i if in is it of on or the this to what when where which "
    "with why my our we you your me now there has have "
    "der die das den dem des ein eine einen und ist im in zu von mit bei auf für wie was wenn ich "
    "le la les un une des et est en du de au aux pour comment que quoi qui dans sur avec je "
    "el los las uno una y o es por para como qué que en con del al se lo mi".split()
)


def tokens(text: str) -> list[str]:
    """Lowercase words of `text` (HTML tags dropped), stopwords removed, in order. Japanese,
    written without spaces, becomes overlapping character pairs (a CJK bigram analyzer)."""
    found = []
    for word in _WORD.findall(_TAG.sub(" ", text).lower()):
        for segment in _CJK_SPLIT.findall(word):
            if _CJK.match(segment):
                found.extend([segment] if len(segment) == 1 else [segment[i : i + 2] for i in range(len(segment) - 1)])
            elif segment not in STOPWORDS:
                found.append(segment)
    return found


def _synonym_groups() -> list[tuple[frozenset[str], ...]]:
    """The wiki's multilingual glossary: each symptom's, task's and policy's name in every
    language, as token sets. A query naming a subject in one language is expanded with
    its names in the others, which is how a question in Spanish finds the English runbook."""
    groups = [list(symptom.names.values()) for symptom in SYMPTOMS]
    groups += [list(task.phrases.values()) + [task.noun] for task in TASKS]
    groups += [list(policy.names.values()) for policy in POLICIES]
    return [tuple(frozenset(tokens(name)) for name in names) for names in groups]


@dataclass(frozen=True)
class ParsedQuery:
    """A query as the stages see it.

    `terms`: the first stage's weighted terms, the query's own tokens (weight 1, a repeated
    one counted again) and, for each glossary subject the query names, the subject's words
    in the other languages (weight EXPANSION_WEIGHT, once each). `subjects`: the glossary
    subjects named. `rest`: the query's words outside them (a service, a team, "runbook").
    `pairs`: its adjacent token pairs, for phrase matches."""

    terms: list[tuple[str, float]]
    subjects: list[tuple[frozenset[str], ...]]
    rest: list[str]
    pairs: list[tuple[str, str]]


def query_parse(text: str) -> ParsedQuery:
    """The query's terms, glossary subjects, other words and word pairs (see ParsedQuery)."""
    own = tokens(text)
    present = set(own)
    terms = [(term, 1.0) for term in own]
    added: set[str] = set()
    subjects, named = [], set()
    for group in SYNONYM_GROUPS:
        used = [variant for variant in group if variant and variant <= present]
        if not used:
            continue
        subjects.append(group)
        named.update(*used)
        # Each other name weighs, in all, what the name the query used weighs: a Japanese
        # name's many character pairs must not outweigh the query's own words.
        size = max(len(variant) for variant in used)
        for variant in group:
            weight = EXPANSION_WEIGHT * min(1.0, size / len(variant)) if variant else 0.0
            for term in sorted(variant - present - added):
                added.add(term)
                terms.append((term, weight))
    rest = list(dict.fromkeys(term for term in own if term not in named))
    return ParsedQuery(terms=terms, subjects=subjects, rest=rest, pairs=list(dict.fromkeys(zip(own, own[1:]))))


SYNONYM_GROUPS = _synonym_groups()


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    score: float
    shard: int = 0  # the shard the page lives on, 1 to SHARD_COUNT (0: not said)


class _Bm25Index:
    """One shard's BM25 index over the documents at `positions` (indexes into the corpus).

    Each term's postings are the corpus positions of the documents holding it and their
    precomputed BM25 weights, so a query is a sum of arrays."""

    def __init__(self, positions: list[int], documents: list[list[str]]):
        self.positions = np.asarray(positions, dtype=np.int64)
        self.size = len(positions)
        lengths = np.asarray([len(documents[p]) for p in positions], dtype=np.float64)
        average = float(lengths.mean()) if self.size else 1.0
        counts: dict[str, dict[int, int]] = {}
        for local, position in enumerate(positions):
            for word in documents[position]:
                postings = counts.setdefault(word, {})
                postings[local] = postings.get(local, 0) + 1
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for word, postings in counts.items():
            docs = np.fromiter(postings.keys(), dtype=np.int64, count=len(postings))
            tf = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            idf = math.log(1 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[docs] / average)
            self.postings[word] = (self.positions[docs], idf * tf * (BM25_K1 + 1) / (tf + norm))


@dataclass
class _Shard:
    number: int
    refreshed: _Bm25Index
    snapshot: _Bm25Index

    @property
    def pending(self) -> int:
        """New pages written since the snapshot: what a refresh would make searchable."""
        return self.refreshed.size - self.snapshot.size


def _ordered(positions: np.ndarray, scores: np.ndarray, k: int, id_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The k best (position, score) pairs: scores descending, equal scores by doc id (the
    position's `id_rank`). Scores are rounded to 6 decimals first, as the caller sees them."""
    scores = np.round(scores, 6)
    order = np.lexsort((id_rank[positions], -scores))[:k]
    return positions[order], scores[order]


def shard_of(routing_key: str) -> int:
    """The shard (0..SHARD_COUNT-1) of a routing key: stable across processes and machines."""
    return zlib.crc32(routing_key.encode()) % SHARD_COUNT


def default_reference_date() -> datetime:
    """Today, midnight UTC: the moment demo_load moves the demo's REFERENCE_DATE to."""
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


class DemoSearch:
    """The demo wiki's search service: SHARD_COUNT BM25 shards, a first stage and a reranker.

    `reference_date` mirrors demo_load's: the pages' dates are moved so that the generator's
    REFERENCE_DATE falls on it (default: today, midnight UTC), and the new pages are those
    published in the NEW_PAGE_DAYS days before it. The move is the same for every page, so
    which pages are new does not depend on it: they are the pages the loaded demo's age
    slice 0-30d holds. `stale_shards` may be changed at runtime with set_stale / refresh,
    from any thread.
    """

    def __init__(self, *, seed: int = DEFAULT_SEED, stale_shards: int = 0, reference_date: datetime | None = None):
        content = demo_generate(seed=seed)
        self.reference_date = reference_date or default_reference_date()
        pages_dates_move(content.pages, self.reference_date - REFERENCE_DATE)
        self.new_since = self.reference_date - timedelta(days=NEW_PAGE_DAYS)
        self.doc_ids = [page.id for page in content.pages]
        # A page's rank in doc id order: ties between equal scores go to the lower doc id.
        self._id_rank = np.empty(len(self.doc_ids), dtype=np.int64)
        self._id_rank[np.argsort(np.asarray(self.doc_ids))] = np.arange(len(self.doc_ids))
        self.new_doc_ids = frozenset(
            page.id for page in content.pages if datetime.fromisoformat(page.metadata["published_at"]) > self.new_since
        )
        titles = [tokens(page.title) for page in content.pages]
        bodies = [tokens(page.text) for page in content.pages]
        documents = [title * TITLE_WEIGHT + body for title, body in zip(titles, bodies)]
        # The reranker's evidence: each page's title words, words, and adjacent word pairs.
        self._title_words = [frozenset(title) for title in titles]
        self._words = [frozenset(title + body) for title, body in zip(titles, bodies)]
        self._pairs = [frozenset(zip(title, title[1:])) | frozenset(zip(body, body[1:])) for title, body in zip(titles, bodies)]

        routed: list[list[int]] = [[] for _ in range(SHARD_COUNT)]
        self._shard_at = np.empty(len(self.doc_ids), dtype=np.int64)
        for position, page in enumerate(content.pages):
            number = shard_of(page.metadata.get("service") or page.metadata["team"])
            routed[number].append(position)
            self._shard_at[position] = number
        self.shards = [
            _Shard(
                number,
                _Bm25Index(positions, documents),
                _Bm25Index([p for p in positions if self.doc_ids[p] not in self.new_doc_ids], documents),
            )
            for number, positions in enumerate(routed)
        ]
        # The order in which shards go stale: most pending new pages first.
        self._stale_order = [shard.number for shard in sorted(self.shards, key=lambda s: (-s.pending, s.number))]
        self._lock = threading.Lock()
        self._stale: frozenset[int] = frozenset()
        # Per state of the shards (the stale ones), each searched term's postings across them.
        self._merged: dict[frozenset[int], dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        self.set_stale(stale_shards)

    # --- the shards' state ---

    @property
    def stale_shards(self) -> int:
        return len(self._stale)

    @property
    def stale_shard_numbers(self) -> list[int]:
        return sorted(self._stale)

    def set_stale(self, count: int) -> None:
        """Make the `count` shards with the most new pages stale (answering from their
        snapshot) and every other shard refreshed. Raises ValueError outside 0..SHARD_COUNT."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= SHARD_COUNT:
            raise ValueError(f"stale shards must be an integer from 0 to {SHARD_COUNT}, not {count!r}")
        with self._lock:
            self._stale = frozenset(self._stale_order[:count])

    def refresh(self) -> None:
        """Refresh every shard: the new pages become searchable everywhere."""
        self.set_stale(0)

    def _indexes_with(self, stale: frozenset[int]) -> list[_Bm25Index]:
        """Each shard's index as a search sees it when the `stale` shards are."""
        return [shard.snapshot if shard.number in stale else shard.refreshed for shard in self.shards]

    @property
    def index_size(self) -> int:
        """Documents searchable across the shards; a stale shard counts its snapshot."""
        return sum(index.size for index in self._indexes_with(self._stale))

    # --- searching ---

    def search(self, text: str, k: int | None = None, stage: str = "first_stage", *, exact: bool = False) -> list[SearchHit]:
        """The best `k` pages for `text`, best first, scores descending (ties by doc id).

        stage "first_stage": BM25 over the shards, k defaulting to FIRST_STAGE_K.
        stage "reranked": the first stage's top RERANK_DEPTH re-scored, k defaulting to
        K_FINAL; at most RERANK_DEPTH hits, since the reranker sees no more than that.
        Fewer than k hits when fewer pages share a word with the query. `exact`: as if
        every shard were refreshed (the module's "Exact mode")."""
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {stage!r}")
        if k is not None and k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        query = query_parse(text)
        if stage == "first_stage":
            positions, scores = self._first_stage(query.terms, k or FIRST_STAGE_K, exact)
        else:
            positions, scores = self._rerank(query, *self._first_stage(query.terms, RERANK_DEPTH, exact))
            positions, scores = positions[: k or K_FINAL], scores[: k or K_FINAL]
        return [SearchHit(self.doc_ids[p], round(float(s), 6), int(self._shard_at[p]) + 1) for p, s in zip(positions, scores)]

    def _first_stage(self, terms: list[tuple[str, float]], k: int, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Each shard's top k by its own BM25 statistics, merged by the coordinator into the
        top k. Worked as one pass over the corpus: each document's score is the sum its shard
        computes (the same additions, in the same order), the hits are put in the merge's
        order once, and a hit stays only while its shard has given fewer than k before it,
        which is what merging every shard's own top k keeps."""
        stale = frozenset() if exact else self._stale  # read once, so that one query sees one state
        scores = np.zeros(len(self.doc_ids))
        for term, weight in terms:
            positions, weights = self._term_postings(term, stale)
            scores[positions] += weight * weights
        hits = np.flatnonzero(scores > 0)
        positions, ranked = _ordered(hits, scores[hits], len(hits), self._id_rank)
        shards = self._shard_at[positions]
        given = np.empty(len(positions), dtype=np.int64)  # hits of the same shard before each
        for number in range(SHARD_COUNT):
            mine = shards == number
            given[mine] = np.arange(np.count_nonzero(mine))
        kept = np.flatnonzero(given < k)[:k]
        return positions[kept], ranked[kept]

    def _term_postings(self, term: str, stale: frozenset[int]) -> tuple[np.ndarray, np.ndarray]:
        """`term`'s postings across the shards as a search sees them when the `stale` shards
        are (corpus positions, BM25 weights), merged on first use and kept for the state.
        Threads may race to merge one term: each gets the same arrays (dict.setdefault is
        atomic), so no lock is taken."""
        merged = self._merged.setdefault(stale, {})
        found = merged.get(term)
        if found is None:
            parts = [index.postings[term] for index in self._indexes_with(stale) if term in index.postings]
            found = merged.setdefault(
                term,
                (np.concatenate([p for p, _ in parts]), np.concatenate([w for _, w in parts]))
                if parts
                else (np.empty(0, dtype=np.int64), np.empty(0)),
            )
        return found

    def _rerank(self, query: ParsedQuery, positions: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(positions):
            return positions, scores
        best = float(scores[0])
        weights = RERANK_WEIGHTS
        # Each feature is the share of the query's subjects, other words or word pairs the
        # page holds (0 when the query has none); a subject counts when the page names it
        # in any language, fully.
        subjects, rest, pairs = query.subjects, query.rest, query.pairs
        reranked = np.empty(len(positions))
        for i, (position, score) in enumerate(zip(positions.tolist(), scores.tolist())):
            title_words, words, page_pairs = self._title_words[position], self._words[position], self._pairs[position]
            subject = title_subject = rest_found = title_rest = phrase = 0
            for group in subjects:
                subject += any(v and v <= words for v in group)
                title_subject += any(v and v <= title_words for v in group)
            for word in rest:
                rest_found += word in words
                title_rest += word in title_words
            for pair in pairs:
                phrase += pair in page_pairs
            reranked[i] = (
                weights["first_stage"] * score / best
                + weights["subject"] * _share(subject, subjects)
                + weights["title_subject"] * _share(title_subject, subjects)
                + weights["rest"] * _share(rest_found, rest)
                + weights["title_rest"] * _share(title_rest, rest)
                + weights["phrase"] * _share(phrase, pairs)
            )
        return _ordered(positions, reranked, len(positions), self._id_rank)


def _share(count: int, items: list) -> float:
    """`count` of `items` as a fraction; 0 for no items."""
    return count / len(items) if items else 0.0


# The reranker's weights, each feature being a fraction from 0 to 1 (the first-stage score
# is scaled to the best candidate's).
RERANK_WEIGHTS = {"first_stage": 1.0, "subject": 1.0, "title_subject": 0.5, "rest": 1.0, "title_rest": 0.5, "phrase": 0.3}
