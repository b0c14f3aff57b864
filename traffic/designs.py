"""Sampling designs over a log's distinct queries, as pure numpy: who is drawn, and the exact
first-order inclusion probability (pi) of every unit of the population.

The population is a log's LoggedQuery rows (distinct queries), each with its count of
events. Every design here draws without replacement and knows pi for every unit, drawn or
not, so a weighted estimate (Horvitz-Thompson, Hajek) can divide by it:

- simple random (`srs_draw`): n of N, pi = n / N;
- stratified (`stratified_draw`): an SRS of n_h in each stratum h, pi = n_h / N_h; n is split
  among strata by `allocation` (`allocate`), proportional to stratum size (queries) or to
  stratum events (traffic);
- probability proportional to size (`pps_draw`): systematic PPS by count over a random
  permutation of the units. Units whose n * count / (events left) reaches 1 are certainty
  units, taken with pi = 1, and n and the events are reduced until no unit reaches 1; the
  rest have pi = n' * count / X' exactly (systematic sampling gives each unit exactly its pi
  for any order; the permutation only spreads the joint probabilities).

Head, torso and tail (`traffic_strata`): ranked by count (ties by the merge key), a query is in
the head while the events ranked above it are under HEAD_SHARE of all events, in the torso
while under HEAD_SHARE + TORSO_SHARE, else in the tail.

Each function takes a numpy Generator made from the draw's seed, so a seed gives the same
draw on any machine (numpy's PCG64 stream is stable across versions for these calls).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

HEAD_SHARE = 0.5
TORSO_SHARE = 0.3
TRAFFIC_STRATA = ("head", "torso", "tail")

# Allocations of a stratified draw's size among its strata.
BY_QUERIES = "queries"
BY_EVENTS = "events"
ALLOCATIONS = (BY_QUERIES, BY_EVENTS)


@dataclass(frozen=True)
class Drawn:
    """A draw: `chosen` the population indices drawn (ascending), `pi` the inclusion
    probability of every unit of the population (drawn or not), float64."""

    chosen: np.ndarray
    pi: np.ndarray


def traffic_strata(counts: np.ndarray) -> list[str]:
    """ "head", "torso" or "tail" of each unit, `counts` given in rank order (count
    descending, ties broken by the caller's canonical order)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    before = np.concatenate(([0.0], np.cumsum(counts)[:-1]))
    head = before < HEAD_SHARE * total
    torso = ~head & (before < (HEAD_SHARE + TORSO_SHARE) * total)
    return ["head" if h else "torso" if t else "tail" for h, t in zip(head.tolist(), torso.tolist())]


def srs_draw(population: int, size: int, rng: np.random.Generator) -> Drawn:
    """n = `size` of N = `population` units, every subset equally likely; pi = n / N."""
    chosen = np.sort(rng.choice(population, size=size, replace=False)) if size else np.empty(0, dtype=np.int64)
    return Drawn(chosen.astype(np.int64), np.full(population, size / population if population else 0.0))


def allocate(size: int, weights: Sequence[float], capacities: Sequence[int]) -> list[int]:
    """Split `size` among strata in proportion to `weights`: each stratum gets the whole part
    of its share, at least one query while size allows (a stratum with none drawn has no
    estimate) and at most its capacity (its queries); what is left goes one by one to the
    stratum furthest under its share (ties to the earlier). Raises ValueError when size
    exceeds the capacities' sum."""
    capacities = [int(c) for c in capacities]
    if size > sum(capacities):
        raise ValueError(f"{size} is more than the {sum(capacities)} queries of the strata")
    total = float(sum(weights))
    ideal = [size * w / total if total else size / len(weights) for w in weights]
    given = [min(capacity, int(share)) for capacity, share in zip(capacities, ideal)]
    if size >= sum(1 for capacity in capacities if capacity):
        given = [max(g, 1) if capacity else 0 for g, capacity in zip(given, capacities)]
    while sum(given) > size:  # the minimum of one overshot: take from the furthest over its share
        h = max((h for h in range(len(given)) if given[h] > 1), key=lambda h: (given[h] - ideal[h], -h))
        given[h] -= 1
    while sum(given) < size:
        h = max((h for h in range(len(given)) if given[h] < capacities[h]), key=lambda h: (ideal[h] - given[h], -h))
        given[h] += 1
    return given


def stratified_draw(
    strata: Sequence[str], size: int, rng: np.random.Generator, *, counts: np.ndarray, allocation: str = BY_QUERIES
) -> tuple[Drawn, dict[str, int]]:
    """An SRS in each stratum of `strata` (one label a unit), `size` split by `allocation`
    (BY_QUERIES: stratum sizes N_h; BY_EVENTS: stratum events E_h); pi = n_h / N_h. Strata in
    sorted order of their labels, each drawing from the rng in turn. Returns (the draw,
    {stratum: n_h})."""
    labels = np.asarray(strata, dtype=object)
    names = sorted(set(strata))
    members = {name: np.flatnonzero(labels == name) for name in names}
    counts = np.asarray(counts, dtype=np.float64)
    weights = [float(len(members[name])) if allocation == BY_QUERIES else float(counts[members[name]].sum()) for name in names]
    sizes = allocate(size, weights, [len(members[name]) for name in names])
    pi = np.zeros(len(labels))
    chosen = []
    for name, n_h in zip(names, sizes):
        units = members[name]
        part = srs_draw(len(units), n_h, rng)
        chosen.append(units[part.chosen])
        pi[units] = part.pi
    picked = np.sort(np.concatenate(chosen)) if chosen else np.empty(0, dtype=np.int64)
    return Drawn(picked.astype(np.int64), pi), dict(zip(names, sizes))


def pps_probabilities(counts: np.ndarray, size: int) -> np.ndarray:
    """The inclusion probability of each unit under PPS by `counts` of `size` units: units
    whose share reaches 1 are certainty units (pi = 1), taken out, and the rest's pi
    recomputed over what is left, until none reaches 1. Sums to `size`."""
    counts = np.asarray(counts, dtype=np.float64)
    pi = np.zeros(len(counts))
    certain = np.zeros(len(counts), dtype=bool)
    while True:
        left = size - int(certain.sum())
        rest = ~certain
        total = counts[rest].sum()
        if left <= 0 or total <= 0:
            break
        share = np.where(rest, left * counts / total, 0.0)
        over = rest & (share >= 1.0)
        if not over.any():
            pi[rest] = share[rest]
            break
        certain |= over
    pi[certain] = 1.0
    return pi


def pps_draw(counts: np.ndarray, size: int, rng: np.random.Generator) -> Drawn:
    """Systematic PPS by `counts` over a random order (see the module's docstring): `size`
    distinct units, each with probability pps_probabilities(counts, size)."""
    pi = pps_probabilities(counts, size)
    certain = np.flatnonzero(pi >= 1.0)
    rest = np.flatnonzero(pi < 1.0)
    order = rest[rng.permutation(len(rest))]
    left = size - len(certain)
    picked = []
    if left > 0:
        edges = np.cumsum(pi[order])
        points = rng.random() + np.arange(left)
        # A point p falls in the unit whose interval [C_{i-1}, C_i) holds it; each interval is
        # under 1 long, so the points, 1 apart, fall in distinct units.
        found = np.searchsorted(edges, points, side="right").clip(0, len(order) - 1)
        picked = order[found].tolist()
        if len(set(picked)) != left:  # rounding at an interval's edge: never seen, refused loudly
            raise ArithmeticError("systematic PPS drew a unit twice")
    chosen = np.sort(np.concatenate([certain, np.asarray(picked, dtype=np.int64)]))
    return Drawn(chosen.astype(np.int64), pi)
