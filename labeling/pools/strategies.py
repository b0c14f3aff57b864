"""Judging orders for pools, and a simulation that replays judging from known qrels.

Pure numpy, the standard library and lib/ (floor 1), no Django: the services store and
load what these functions compute; the simulation (bench/pooling.py and its test) drives
them alone.

One query's pool is a ranks matrix: `ranks[i, r]` is the 1-based rank of candidate page
`i` in run `r`'s pooled top (its first `depth` pages), 0 when run `r` did not put it
there. Every candidate is in at least one run. Runs are the columns in pool order (the
order the manager listed them, then runs added later); that order breaks every tie, so
each strategy is deterministic.

A strategy is per query. It answers "which unjudged candidate next?" (`next()`), learns
from each judgment (`observe(candidate, relevant)`), and forecasts the full order of
what remains (`order()`): the order it would follow if nothing new were learned. The
queue stores the head of that forecast (a window of each query's tasks) as positions,
so that several annotators working on one query at once each get a sensible next page,
and forms it again after every judgment.

Across queries every strategy goes round-robin: the j-th judgment of every query comes
before the (j+1)-th of any (see `slot_positions`). Adaptivity works within a query,
where the runs' track record is informative; across queries, a round-robin keeps every
query's coverage growing at the same rate, so a budget is spread evenly. A set that
judges one query at a time (labeling.judging.services, QueueSettings.query_order) keeps
these positions: an annotator stays on a query, taking its pairs in this order, and the
round-robin only chooses the query they move to next (the least advanced).

Strategies:

- `depth`: rank order. Rank 1 of every run, then rank 2, ...; within a rank, runs in
  pool order. With the round-robin this is classic depth-k pooling, judged shallow first.
- `mtf`: move-to-front (Cormack, Palmer and Clarke, "Efficient construction of large
  test collections", SIGIR 1998). Runs stand in a priority queue, initially in pool
  order. The next page is the best-ranked unjudged page of the run at the front; a
  relevant page keeps that run at the front, a non-relevant one moves it to the back.
- `bandit`: MaxMean over runs with Beta posteriors, after Losada, Parapar and Barreiro
  ("Feeling lucky? Multi-armed bandits for ordering judgements in pooling-based
  evaluation", SAC 2016; "Multi-armed bandits for adjudicating documents in pooling-based
  evaluation of information retrieval systems", IP&M 2017). Each run is an arm with a
  Beta(1 + hits, 1 + misses) posterior; the next page is the best-ranked unjudged page of
  the run with the highest posterior mean, and the judgment is that run's reward, as in
  Losada's method. (Crediting every run that holds the page was tried: on the Cranfield
  replay it needed more judgments, presumably because near-identical runs then rise and
  fall together and the bandit stops telling them apart.) The non-stationary variant MM-NS
  is the one used: a run's precision falls as one goes down its ranking, so older
  evidence fades; each run's counts are multiplied by `discount` (DEFAULT_DISCOUNT)
  before each new reward of that run. MaxMean picks by the posterior mean rather than
  by a sample (Thompson sampling), so it is deterministic with no seed, and its
  forecast moves only when a judgment changes which run leads, which keeps the queue's
  reorders small.
- `model_first`: uses model labels. The pairs a model graded highest first (its score per
  candidate, higher first; equal scores in depth order), then the pairs it did not label,
  in depth order. Not adaptive: a human judgment does not change the model's opinion of
  the other pages, and a fixed order keeps every reorder of the queue empty. The scores
  come with the query (`scores`, NaN where the model gave none): the queue reads them from
  the pool's chosen model and prompt (labeling.pools.selectors.pool_model_scores), the
  replay from a mapping of (query id, doc id) to score.

The run a judgment is credited to (MTF's miss, the bandit's reward) is the run the
forecast drew the page from: the first run in priority order that holds it. With one
annotator that is always the leading run; with several, a page judged from further down
the forecast is credited to the run it was listed under.
"""

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from lib.errors import ProblemCollector
from lib.formats import read_beir_qrels
from lib.ids import natural_key
from lib.runs import rank_run, read_trec_run

# Positions interleave queries: position = slot * QUERY_STRIDE + the query's place in a
# turn (below QUERY_STRIDE), so slots up to 2**39 stay well inside a bigint.
QUERY_STRIDE = 1 << 24
# Ranks are stored as unsigned 16-bit integers (see pack_ranks).
MAX_DEPTH = (1 << 16) - 1
# MM-NS fading: a reward ten draws old weighs a third of a new one. A moderate choice,
# not a tuned optimum: on the Cranfield replay (bench/pooling.py) 0.9 needed fewer
# judgments than no fading (1.0) at depths 10 and 20 and a few more at depth 50, and
# 0.5 was better at some thresholds and worse at others.
DEFAULT_DISCOUNT = 0.9


class Strategy(ABC):
    """The judging order of one query's pool; see the module docstring.

    `ranks` is the query's ranks matrix (candidates x runs). Subclasses implement
    `observe`, `order` and `initial_keys`; `next` is `order()[0]` unless overridden.
    """

    name: ClassVar[str]
    adaptive: ClassVar[bool]
    description: ClassVar[str]
    # A strategy that orders by a model's labels takes them as `scores` (one per
    # candidate); every number or page that shows it says it uses model labels.
    uses_model_labels: ClassVar[bool] = False

    def __init__(self, ranks: np.ndarray):
        ranks = np.asarray(ranks)
        if ranks.ndim != 2:
            raise ValueError(f"ranks must be a candidates x runs matrix, got shape {ranks.shape}")
        self.ranks = ranks
        self.judged = np.zeros(len(ranks), dtype=bool)

    @abstractmethod
    def observe(self, candidate: int, relevant: bool) -> None:
        """Learn that `candidate` was judged (relevant or not)."""

    def discard(self, candidate: int) -> None:
        """Take `candidate` out of the order without a judgment (a skipped task): the
        strategy learns nothing from it."""
        self.judged[candidate] = True

    @abstractmethod
    def order(self) -> np.ndarray:
        """The unjudged candidates (int64 indices into `ranks`), the next to judge first."""

    def next(self) -> int | None:
        """The candidate to judge next, or None when every candidate is judged."""
        remaining = self.order()
        return int(remaining[0]) if len(remaining) else None

    @staticmethod
    @abstractmethod
    def initial_keys(ranks: np.ndarray, scores: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """np.lexsort keys (most significant last) that sort candidates into the order
        `order()` gives before any judgment. Works on the candidates of many queries at
        once: the caller adds the query as the most significant key. `scores` (model
        scores, one per candidate) is read only by strategies that use model labels."""


def best_rank_and_run(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best rank, first run holding it) of each candidate, as int64 arrays."""
    # In uint16, rank - 1 takes 0 (not in that run's top) round to 65535, above every
    # real rank less one, so argmin finds the best rank and its first run. At half the
    # memory of int32 and a quarter of int64: a 20-run pool of 4 million pairs is 160 MB.
    shifted = np.asarray(ranks).astype(np.uint16)
    shifted -= np.uint16(1)
    best_run = shifted.argmin(axis=1)
    return shifted[np.arange(len(shifted)), best_run].astype(np.int64) + 1, best_run.astype(np.int64)


def _first_run_and_rank(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first run in pool order holding the candidate, its rank there), as int64 arrays."""
    first_run = (ranks > 0).argmax(axis=1)
    return first_run.astype(np.int64), ranks[np.arange(len(ranks)), first_run].astype(np.int64)


def _run_lists(ranks: np.ndarray) -> list[np.ndarray]:
    """For each run, the candidates it holds, best-ranked first."""
    lists = []
    for column in ranks.T:
        held = np.flatnonzero(column)
        lists.append(held[np.argsort(column[held], kind="stable")])
    return lists


class _FixedOrder(Strategy):
    """An order set once, from the initial keys (`self._order`, made by the subclass), that
    judging never changes: a judgment only takes its pair out."""

    adaptive = False
    _order: np.ndarray

    def observe(self, candidate: int, relevant: bool) -> None:
        self.judged[candidate] = True

    def order(self) -> np.ndarray:
        return self._order[~self.judged[self._order]]


class DepthOrder(_FixedOrder):
    name = "depth"
    description = "rank order: rank 1 of every run, then rank 2, ...; not adaptive"

    def __init__(self, ranks: np.ndarray):
        super().__init__(ranks)
        self._order = np.lexsort(self.initial_keys(self.ranks))

    @staticmethod
    def initial_keys(ranks: np.ndarray, scores: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        best_rank, best_run = best_rank_and_run(ranks)
        return best_run, best_rank


class _RunQueue(Strategy):
    """Strategies that draw the next page from the top of one run's unjudged pages."""

    def __init__(self, ranks: np.ndarray):
        super().__init__(ranks)
        self.lists = _run_lists(self.ranks)
        # Index of each run's best-ranked page not yet known to be judged.
        self.pointers = [0] * self.ranks.shape[1]

    def _head(self, run: int) -> int | None:
        """The run's best-ranked unjudged candidate, or None when it has none left."""
        pages, pointer = self.lists[run], self.pointers[run]
        while pointer < len(pages) and self.judged[pages[pointer]]:
            pointer += 1
        self.pointers[run] = pointer
        return int(pages[pointer]) if pointer < len(pages) else None

    @abstractmethod
    def run_order(self) -> list[int]:
        """Runs by priority, the one drawn from first."""

    def _source(self, candidate: int) -> int | None:
        """The run the forecast draws `candidate` from: the first run in priority order
        that holds it (None when none does, which a well-formed pool never has)."""
        for run in self.run_order():
            if self.ranks[candidate, run]:
                return run
        return None

    def next(self) -> int | None:
        for run in self.run_order():
            head = self._head(run)
            if head is not None:
                return head
        return None

    def order(self) -> np.ndarray:
        # What the strategy would do if every further page were relevant: the leading run
        # keeps its place until it runs out, then the next one takes over.
        taken = self.judged.copy()
        out = []
        for run in self.run_order():
            pages = self.lists[run][self.pointers[run] :]
            fresh = pages[~taken[pages]]
            taken[fresh] = True
            out.append(fresh)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    @staticmethod
    def initial_keys(ranks: np.ndarray, scores: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        first_run, rank = _first_run_and_rank(ranks)
        return rank, first_run


class MoveToFront(_RunQueue):
    name = "mtf"
    adaptive = True
    description = "move-to-front (Cormack et al. 1998): judge down the leading run; a miss sends it to the back"

    def __init__(self, ranks: np.ndarray):
        super().__init__(ranks)
        self.queue = deque(range(self.ranks.shape[1]))

    def run_order(self) -> list[int]:
        return list(self.queue)

    def observe(self, candidate: int, relevant: bool) -> None:
        source = self._source(candidate)
        self.judged[candidate] = True
        if source is not None and not relevant:
            self.queue.remove(source)
            self.queue.append(source)


class MaxMeanBandit(_RunQueue):
    name = "bandit"
    adaptive = True
    description = "bandit over runs (MaxMean, Losada et al. 2016/2017): draw from the run whose pages keep being relevant"

    def __init__(self, ranks: np.ndarray, discount: float = DEFAULT_DISCOUNT):
        super().__init__(ranks)
        if not 0 < discount <= 1:
            raise ValueError(f"discount must be in (0, 1], got {discount}")
        self.discount = discount
        runs = self.ranks.shape[1]
        self.hits = np.zeros(runs)
        self.misses = np.zeros(runs)

    def posterior_means(self) -> np.ndarray:
        """Mean of each run's Beta(1 + hits, 1 + misses) posterior."""
        return (1 + self.hits) / (2 + self.hits + self.misses)

    def run_order(self) -> list[int]:
        # Highest mean first; equal means keep pool order (a stable sort).
        return np.argsort(-self.posterior_means(), kind="stable").tolist()

    def observe(self, candidate: int, relevant: bool) -> None:
        source = self._source(candidate)
        self.judged[candidate] = True
        if source is not None:
            self.hits[source] = self.discount * self.hits[source] + (1.0 if relevant else 0.0)
            self.misses[source] = self.discount * self.misses[source] + (0.0 if relevant else 1.0)


def model_score_keys(scores: np.ndarray | None, candidates: int) -> tuple[np.ndarray, np.ndarray]:
    """(unlabelled, place) lexsort keys of model scores: `unlabelled` is 1 where the score
    is NaN (the model gave none), `place` numbers the distinct scores highest first (0 for
    the best), so that the keys are small non-negative integers like every other key."""
    if scores is None:
        return np.ones(candidates, dtype=np.int64), np.zeros(candidates, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (candidates,):
        raise ValueError(f"scores must give one value per candidate ({candidates}), got shape {scores.shape}")
    labelled = ~np.isnan(scores)
    place = np.zeros(candidates, dtype=np.int64)
    if labelled.any():
        place[labelled] = np.unique(-scores[labelled], return_inverse=True)[1].reshape(-1)
    return (~labelled).astype(np.int64), place


class ModelFirst(_FixedOrder):
    name = "model_first"
    uses_model_labels = True
    description = (
        "model first (uses model labels): the pairs a model grades highest first, then the unlabelled ones in rank order; not adaptive"
    )

    def __init__(self, ranks: np.ndarray, scores: np.ndarray | None = None, model: str = "", prompt_hash: str = ""):
        """`scores`: the model's score of each candidate, higher first, NaN where it gave
        none. `model` and `prompt_hash` name the labels' source (a pool's stored options)."""
        super().__init__(ranks)
        self.model, self.prompt_hash = model, prompt_hash
        self.scores = np.full(len(self.ranks), np.nan) if scores is None else np.asarray(scores, dtype=np.float64)
        self._order = np.lexsort(self.initial_keys(self.ranks, self.scores))

    @staticmethod
    def initial_keys(ranks: np.ndarray, scores: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        # Ties (equal scores, and the unlabelled pairs) go in depth order, so the order is
        # deterministic and falls back to classic pooling where the model is silent.
        best_rank, best_run = best_rank_and_run(ranks)
        unlabelled, place = model_score_keys(scores, len(ranks))
        return best_run, best_rank, place, unlabelled


STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (DepthOrder, MoveToFront, MaxMeanBandit, ModelFirst)}


def strategy_class(name: str) -> type[Strategy]:
    """The strategy named `name`; ValueError naming the known ones otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}") from None


def make_strategy(name: str, ranks: np.ndarray, params: Mapping | None = None, scores: np.ndarray | None = None) -> Strategy:
    """A fresh strategy for one query; `params` are the strategy's keyword options,
    `scores` the model's score of each candidate (read only by one that uses model labels)."""
    cls = strategy_class(name)
    if cls.uses_model_labels:
        return cls(ranks, scores=scores, **dict(params or {}))
    return cls(ranks, **dict(params or {}))


def replay(
    name: str,
    ranks: np.ndarray,
    history: Sequence[tuple[int, bool]],
    params: Mapping | None = None,
    scores: np.ndarray | None = None,
) -> Strategy:
    """The strategy after observing `history`, (candidate, relevant) in judging order.

    The queue keeps no per-query state between judgments: it replays the query's
    judged tasks, so the state can never drift from what was judged.
    """
    strategy = make_strategy(name, ranks, params, scores)
    for candidate, relevant in history:
        strategy.observe(candidate, relevant)
    return strategy


# --- many queries at once --------------------------------------------------------------


def initial_slots(name: str, query_index: np.ndarray, ranks: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
    """Each candidate's slot (0 = judged first) within its query, before any judgment.

    `query_index` (int64, one per candidate) groups the candidates of many queries;
    `ranks` is their stacked ranks matrix, `scores` their model scores (NaN: none; read
    only by a strategy that uses model labels). Equal to the order `order()` gives query
    by query, computed in one vectorised sort.
    """
    query_index = np.asarray(query_index, dtype=np.int64)
    keys = (*strategy_class(name).initial_keys(ranks, scores), query_index)
    order = _packed_order(keys)
    if order is None:
        order = np.lexsort(keys)
    grouped = query_index[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    slots = np.empty(len(order), dtype=np.int64)
    slots[order] = np.arange(len(order)) - np.repeat(starts, sizes)
    return slots


def _packed_order(keys: Sequence[np.ndarray]) -> np.ndarray | None:
    """np.lexsort(keys) for non-negative integer keys, by packing them and the row
    number (so that ties keep their order, as lexsort's do) into one int64 and sorting
    that: on 4 million candidates a fifth of lexsort's time. None when they do not fit."""
    rows = len(keys[-1])
    if not rows:
        return np.zeros(0, dtype=np.int64)
    widths = [max(int(key.max()), 1).bit_length() for key in keys]
    row_bits = max(rows - 1, 1).bit_length()
    if any(int(key.min()) < 0 for key in keys) or sum(widths) + row_bits > 63:
        return None
    packed = np.zeros(rows, dtype=np.int64)
    for key, width in zip(reversed(keys), reversed(widths)):  # the most significant first
        packed <<= width
        packed |= key
    packed <<= row_bits
    packed |= np.arange(rows, dtype=np.int64)
    packed.sort()
    packed &= (1 << row_bits) - 1
    return packed


def query_ordinals(query_pks: np.ndarray) -> np.ndarray:
    """Each query's place within a turn of the queue: its primary key modulo QUERY_STRIDE.
    Stable without any stored state; two queries of one pool sharing it (possible only
    when its queries' keys span more than QUERY_STRIDE) just tie, and ties go by task id."""
    return np.asarray(query_pks, dtype=np.int64) % QUERY_STRIDE


def slot_positions(slots: np.ndarray, ordinals: np.ndarray) -> np.ndarray:
    """Queue positions from slots within queries and the queries' places in a turn
    (below QUERY_STRIDE): round-robin over queries, slot by slot."""
    return slots.astype(np.int64) * QUERY_STRIDE + ordinals.astype(np.int64)


def pack_ranks(ranks: np.ndarray) -> np.ndarray:
    """Each row of a ranks matrix as bytes (little-endian uint16 per run), as stored in
    a task's `run_ranks`. Returns a numpy array of fixed-width byte strings."""
    rows, runs = ranks.shape
    packed = np.ascontiguousarray(ranks, dtype="<u2")
    return packed.view(f"V{2 * runs}").reshape(rows) if runs else np.zeros(rows, dtype="V0")


def unpack_ranks(blobs: Sequence[bytes], runs: int) -> np.ndarray:
    """The ranks matrix (int64, len(blobs) x runs) of stored `run_ranks` values; a shorter
    value (a task made before later runs joined the pool) reads as 0 for those runs."""
    out = np.zeros((len(blobs), runs), dtype=np.int64)
    for row, blob in enumerate(blobs):
        values = np.frombuffer(bytes(blob), dtype="<u2")[:runs]
        out[row, : len(values)] = values
    return out


# --- simulation ------------------------------------------------------------------------

FRACTIONS = (0.5, 0.8, 0.9)


@dataclass
class SimulationResult:
    """A replay of judging a pool, one judgment at a time, answered from known qrels.

    `found[n - 1]` is how many relevant pages the first n judgments found.
    """

    strategy: str
    depth: int
    queries: int
    pool_size: int
    relevant: int
    found: np.ndarray = field(repr=False)

    def judgments_to_find(self, fraction: float) -> int | None:
        """Fewest judgments that found at least `fraction` of the pool's relevant pages
        (None when the pool holds none)."""
        if not self.relevant:
            return None
        needed = int(np.ceil(fraction * self.relevant - 1e-9))
        return int(np.searchsorted(self.found, needed) + 1) if needed else 0


def pool_matrix(runs: Sequence[Mapping[str, Sequence[str]]], query_id: str, depth: int) -> tuple[list[str], np.ndarray]:
    """(candidate doc ids, ranks matrix) of one query: the union of the runs' top `depth`,
    candidates in order of first sight (runs in order, best rank first)."""
    positions: dict[str, int] = {}
    entries = []
    for run_number, run in enumerate(runs):
        for rank, doc_id in enumerate(run.get(query_id, ())[:depth], start=1):
            entries.append((positions.setdefault(doc_id, len(positions)), run_number, rank))
    ranks = np.zeros((len(positions), len(runs)), dtype=np.int64)
    for candidate, run_number, rank in entries:
        ranks[candidate, run_number] = rank
    return list(positions), ranks


def simulate(
    strategy: str,
    runs: Sequence[Mapping[str, Sequence[str]]],
    qrels: Mapping[str, Collection[str]],
    depth: int,
    params: Mapping | None = None,
    on_query: Callable[[str], None] | None = None,
    model_scores: Mapping[tuple[str, str], float] | None = None,
) -> SimulationResult:
    """Judge the depth-`depth` pool of `runs` one page at a time, as one annotator
    working through the queue would, answering each from `qrels`.

    `runs` maps query id to doc ids best first, one mapping per run, in pool order;
    `qrels` maps query id to its relevant doc ids (pairs absent from it are not
    relevant). Queries take turns as the queue's positions make them take turns (within
    a turn in natural id order, where the queue goes by query key). `model_scores` maps
    (query id, doc id) to a model's score, for a strategy that uses model labels (a pair
    absent from it is unlabelled).
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    query_ids = sorted({query_id for run in runs for query_id in run}, key=natural_key)
    states = []
    pool_size = relevant_total = 0
    for query_id in query_ids:
        doc_ids, ranks = pool_matrix(runs, query_id, depth)
        relevant_docs = qrels.get(query_id, ())
        relevant = np.fromiter((doc_id in relevant_docs for doc_id in doc_ids), dtype=bool, count=len(doc_ids))
        pool_size += len(doc_ids)
        relevant_total += int(relevant.sum())
        scores = None
        if model_scores is not None:
            scores = np.fromiter((model_scores.get((query_id, doc_id), np.nan) for doc_id in doc_ids), dtype=np.float64, count=len(doc_ids))
        states.append((make_strategy(strategy, ranks, params, scores), relevant))
        if on_query is not None:
            on_query(query_id)

    found = np.zeros(pool_size, dtype=np.int64)
    judged = hits = 0
    active = [state for state in states if len(state[1])]
    while active:
        still = []
        for state, relevant in active:
            candidate = state.next()
            if candidate is None:
                continue
            is_relevant = bool(relevant[candidate])
            state.observe(candidate, is_relevant)
            hits += is_relevant
            found[judged] = hits
            judged += 1
            still.append((state, relevant))
        active = still
    return SimulationResult(
        strategy=strategy, depth=depth, queries=len(query_ids), pool_size=pool_size, relevant=relevant_total, found=found
    )


# --- simulation inputs from files ----------------------------------------------------------


def runs_from_trec_files(paths: Sequence[Path]) -> list[dict[str, list[str]]]:
    """Each TREC run file as {query_id: doc ids best first}, ordered as trec_eval orders
    them (score descending, ties by doc id descending: lib.runs.rank_run); ValueError
    naming the faults of a file that does not read cleanly."""
    runs = []
    for path in paths:
        problems = ProblemCollector()
        with Path(path).open(encoding="utf-8") as lines:
            entries = read_trec_run(lines, Path(path).name, problems)
        if problems:
            raise ValueError("\n".join(problems.problems[:20]))
        keys = {doc_id: key for key, doc_id in enumerate(entries.doc_ids, start=1)}
        ranked = rank_run(entries, doc_keys=keys, depth=len(entries) or 1)
        docs = np.array(entries.doc_ids, dtype=object)
        runs.append({query_id: docs[ranked.doc_keys[ranked.rows(query_id)] - 1].tolist() for query_id in ranked.query_ids})
    return runs


def relevant_from_beir_qrels(path: Path, threshold: int = 1) -> dict[str, set[str]]:
    """{query_id: doc ids graded `threshold` or more} of a BEIR qrels file."""
    problems = ProblemCollector()
    relevant: dict[str, set[str]] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for qrel in read_beir_qrels(lines, Path(path).name, problems):
            if qrel.grade >= threshold:
                relevant.setdefault(qrel.query_id, set()).add(qrel.doc_id)
    if problems:
        raise ValueError("\n".join(problems.problems[:20]))
    return relevant
