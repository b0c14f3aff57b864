"""Completeness samples: a uniform random sample of the unjudged pages the pooled runs
ranked just below the pool, judged by annotators, to estimate how many relevant pages
nobody has judged (labeling.completeness.selectors.completeness_estimate).

The population of a sample of pool P, from `depth_from` (P's depth) to `depth_to` (by
default the set's k_first), is every (query, page) pair that some run of P ranks
depth_from + 1 .. depth_to, on a query that is not retired, whose page is in the corpus,
that has no judgment, that is not a judging task of any kind (pool, sample or gold) of
the set, and that is not a pair of any of its pools. Pairs inside the pool are its pairs
or labelled already, so they never enter it.
`size` pairs are drawn without replacement, uniformly, by numpy's Generator seeded with
the sample's stored seed: the same seed over the same labels and tasks draws the same
pairs.

Queue positions. Pool tasks are positioned slot * QUERY_STRIDE + query ordinal, slot n
being the query's (n + 1)-th page to judge, so queries take turns slot by slot
(labeling.pools.strategies, labeling.models.JudgingTask). Sample tasks are given
positions in the same space, spread evenly over the slots the pool still has to go through: the k-th pair
drawn (in draw order, which is random) takes slot first + k * span // size, where
`first` is the lowest slot queued in the pool now and `span` is how many more turns the
pool needs (the judgments it still has to make, budget included, divided by the queries
it has queued). A queue that serves a pool's tasks and its sample's tasks by lowest
position then hands out sample pairs at an even rate while the pool is judged, instead of
all at its end (when annotators may have stopped) or all at its start (when they would
crowd out the pool). A pool with nothing left to judge puts the whole sample at its
first slot. Sample positions are written once and never moved: they depend on no
judgment.

Runs are read and their tops joined as pools do it (labeling.pools.union), and pairs are
classified by the same code, so that "labelled", "already in a pool" and "outside the
corpus" mean the same here as in a pool.
"""

import secrets
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from goldenset.models import GoldenSet
from labeling.completeness.selectors import sample_classes, sampled_union
from labeling.models import CompletenessSample, JudgingTask, Pool, PoolRun
from labeling.pools import strategies
from labeling.pools.selectors import left_out_by_budget, pool_queue, pool_runs, task_counts
from lib.errors import GoldsetError
from lib.progress import Progress, no_progress

# Seeds are stored in a signed 64-bit column.
MAX_SEED = (1 << 63) - 1


@dataclass
class SampleDrawResult:
    """What a draw found and wrote. `candidates` are the distinct (query, page) pairs some
    pooled run ranks depth_from + 1 .. depth_to on a live query; each falls in exactly one
    of `outside_corpus`, `already_tasks`, `already_labelled` and the population."""

    sample: CompletenessSample
    candidates: int = 0
    outside_corpus: int = 0
    already_tasks: int = 0
    already_labelled: int = 0
    first_slot: int = 0
    span: int = 0

    def lines(self) -> list[str]:
        s = self.sample
        return [
            f"completeness sample {s.pk} of {s.golden_set.slug} for pool {s.pool_id}: ranks {s.depth_from + 1}..{s.depth_to} of its runs",
            f"candidate pairs: {self.candidates}",
            f"already labelled (not sampled): {self.already_labelled}",
            f"already judging tasks or pairs of a pool (not sampled): {self.already_tasks}",
            f"outside the corpus (cannot be judged, not sampled): {self.outside_corpus}",
            f"population (unjudged pairs): {s.population}",
            f"drawn uniformly at random: {s.size} (seed {s.seed})",
            f"queued among the pool's next {self.span} turn(s) from slot {self.first_slot}",
        ]


def _check_whole(value: object, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise GoldsetError(f"{name} must be a whole number {bound}, got {value!r}", field=name)
    return value


def _interleaved_slots(pool: Pool, size: int) -> tuple[int, int, np.ndarray]:
    """(first slot, span, slot of each of `size` pairs in draw order): see the module
    docstring. Three small queries: the task counts, and the queue's head and queries
    through the partial index judging_task_pool_queue."""
    counts = task_counts(pool)
    to_judge = counts.get(JudgingTask.Status.OPEN, 0) - left_out_by_budget(pool, counts)
    queue = pool_queue(pool)
    head = queue.values_list("position", flat=True).first()
    queries = queue.values("query_id").distinct().count()
    if head is None or to_judge <= 0 or not queries:
        return 0, 0, np.zeros(size, dtype=np.int64)
    first = int(head) // strategies.QUERY_STRIDE
    span = max(-(-to_judge // queries), 1)
    return first, span, first + (np.arange(size, dtype=np.int64) * span) // size


def completeness_sample_check(*, pool: Pool, size: object, depth_to: object = None, seed: object = None) -> tuple[int, int, int | None]:
    """What completeness_sample_draw refuses before it reads a run (GoldsetError naming
    the field), so that a page can refuse it at once. Returns (size, depth_to, seed)
    checked, depth_to defaulting to the set's k_first (seed stays None if not given)."""
    size = _check_whole(size, "size", 1)
    depth_to = pool.golden_set.k_first if depth_to is None else depth_to
    depth_to = _check_whole(depth_to, "depth_to", 1, strategies.MAX_DEPTH)
    if depth_to <= pool.depth:
        raise GoldsetError(
            f"depth_to {depth_to} is not below pool {pool.pk}'s depth {pool.depth}: a completeness sample is drawn "
            f"from ranks {pool.depth + 1} and deeper",
            field="depth_to",
        )
    seed = None if seed is None else _check_whole(seed, "seed", 0, MAX_SEED)
    if not PoolRun.objects.filter(pool=pool).exists():
        raise GoldsetError(f"pool {pool.pk} has no runs to sample below", field="pool")
    return size, depth_to, seed


def completeness_sample_draw(
    *,
    pool: Pool,
    size: int,
    depth_to: int | None = None,
    seed: int | None = None,
    user: AbstractBaseUser | None = None,
    progress: Progress = no_progress,
) -> SampleDrawResult:
    """Draw a completeness sample of `size` pairs below `pool`'s depth and queue them as
    SAMPLE judging tasks (see the module docstring for the population and positions).

    `depth_to` defaults to the set's k_first; `seed` to a fresh random one (stored with
    the sample either way). All or nothing. Refuses (GoldsetError, naming the field) a
    size under 1, a depth_to not deeper than the pool, a seed outside 0..2**63 - 1, a
    pool without runs, a pool with nothing unjudged below its depth, and a size over the
    population.
    """
    golden_set: GoldenSet = pool.golden_set
    size, depth_to, seed = completeness_sample_check(pool=pool, size=size, depth_to=depth_to, seed=seed)
    depth_from = pool.depth
    seed = secrets.randbits(63) if seed is None else seed
    runs = pool_runs(pool)

    union, in_range = sampled_union(golden_set, runs, depth_from, depth_to, progress)

    with transaction.atomic():
        # The same lock as pool_build: no pool or sample can claim a pair between the
        # read of the set's tasks and the write of these.
        GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).exists()
        masks = sample_classes(golden_set, union, in_range)
        eligible = np.flatnonzero(masks["new_tasks"])
        population = len(eligible)
        where = f"ranks {depth_from + 1}..{depth_to} of the runs of pool {pool.pk}"
        if not population:
            raise GoldsetError(
                f"nothing to sample: no unjudged pair in {where} (every pair there is labelled, already a task, "
                f"or outside the corpus); try a deeper depth_to",
                field="depth_to",
            )
        if size > population:
            raise GoldsetError(
                f"size {size} is over the population: {where} hold {population} unjudged pair(s)",
                field="size",
            )

        drawn = eligible[np.random.default_rng(seed).choice(population, size=size, replace=False)]
        first_slot, span, slots = _interleaved_slots(pool, size)
        query_pks = union.query_pks[union.query_dense[drawn]]
        positions = strategies.slot_positions(slots, strategies.query_ordinals(query_pks))
        ranks = union.ranks[drawn]
        best_rank, _ = strategies.best_rank_and_run(ranks)
        packed = strategies.pack_ranks(ranks)

        sample = CompletenessSample.objects.create(
            golden_set=golden_set,
            pool=pool,
            depth_from=depth_from,
            depth_to=depth_to,
            population=population,
            size=size,
            seed=seed,
            created_by=user,
        )
        JudgingTask.objects.bulk_create(
            [
                JudgingTask(
                    golden_set=golden_set,
                    pool=None,
                    sample=sample,
                    query_id=query_pk,
                    page_id=page_pk,
                    kind=JudgingTask.Kind.SAMPLE,
                    position=position,
                    best_rank=best,
                    run_ranks=bytes(blob),
                    status=JudgingTask.Status.OPEN,
                    judgments_required=1,
                )
                for query_pk, page_pk, position, best, blob in zip(
                    query_pks.tolist(),
                    union.page_keys[drawn].tolist(),
                    positions.tolist(),
                    best_rank.tolist(),
                    packed,
                )
            ],
            batch_size=2000,
        )

    live = ~union.retired[union.query_dense] & in_range
    return SampleDrawResult(
        sample=sample,
        candidates=int(live.sum()),
        outside_corpus=int(masks["outside_corpus"].sum()),
        already_tasks=int(masks["already_tasks"].sum()),
        already_labelled=int(masks["already_labelled"].sum()),
        first_slot=first_slot,
        span=span,
    )
