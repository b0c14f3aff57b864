"""Writes of pools: building and extending them, closing their judging tasks.

A pool is, per query, the union of the top `depth` pages of chosen runs, minus pairs that
already have a judgment, minus pairs that are already in a pool of the set (this one or
another), minus pages outside the corpus (a run may name doc ids the corpus lacks; they
cannot be judged). The remaining pairs are the pool's, kept one row per query
(labeling.models.PoolQuery) with each run's rank of each page.

Only a window of each query's open pairs is queued: the first `Pool.window` in the
strategy's order (labeling.pools.strategies; the forecast and the window's positions are
labeling.pools.windows). A pair becomes a JudgingTask, with a position in the queue, when
it joins its query's window; pool_task_judged moves the window on after each
judgment (making the tasks of the pairs that join it), so the queue always offers every
query's next pages in order. The other pairs wait in their PoolQuery row: a pool of
millions of pairs writes a task row only for the few an annotator is about to see.

The budget is the most pairs judged in the pool. Every pair stays in the pool, so that
an adaptive strategy can choose among all of them; once `budget` tasks are done, the
queue is emptied (pool_task_judged) and the open pairs left stay unjudged. What the
budget leaves out is reported when the pool is built: the pairs beyond it, which ones
depending on the order judging takes.

The union of the runs' tops is computed in numpy by labeling.pools.union; pairs and the
windows' tasks are written with one COPY each. See bench/pool_build.py for the
cost against a plain numpy union of the same runs.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluation.models import Run
from goldenset.models import GoldenSet, Query
from labeling.leases import pool_query_lock
from labeling.models import JudgingTask, Pool, PoolQuery, PoolRun
from labeling.pools import strategies
from labeling.pools.chunk_runs import pool_chunks_write
from labeling.pools.model_first import pool_model_source_check
from labeling.pools.selectors import left_out_by_budget, pool_pairs, task_counts
from labeling.pools.task_writes import _insert_tasks, _update_tasks
from labeling.pools.union import RunSpec, Union, classify, dense_queries, member, pool_union, set_pool_keys, union_chunks
from labeling.pools.windows import PairTable, forecast, judging_order, window_positions, with_model_scores
from lib.bulk import bulk_insert, gc_paused, table_analyze
from lib.errors import GoldsetError
from lib.progress import Progress, no_progress

# A pool queues at least MIN_WINDOW open tasks of each query, and at least QUEUE_FLOOR in
# all, so that two annotators can share a query and twenty never wait (window_size).
MIN_WINDOW = 2
QUEUE_FLOOR = 500


@dataclass
class QueryPoolCounts:
    """How the candidate pairs of one query were accounted for.

    `candidates` = `outside_corpus` + `already_labelled` + `already_tasks` + `new_tasks`.
    """

    candidates: int = 0
    outside_corpus: int = 0
    already_labelled: int = 0
    already_tasks: int = 0
    new_tasks: int = 0


@dataclass
class PoolBuildResult:
    """What pool_build or pool_extend found and wrote.

    `candidate_pairs` are the distinct (query, doc) pairs in the union of the runs' top
    `depth`, over the set's active queries; each is counted once in exactly one of
    `outside_corpus`, `already_labelled`, `already_tasks` (a pool task of the set
    already, open or not) and `new_tasks`. `retired_query_pairs` are pairs of retired
    queries, left out before all that. `left_out_by_budget` is how many open tasks of
    the pool the budget will leave unjudged. `credited_tasks` (pool_extend) are tasks the
    pool already had that the added runs also retrieved, now recorded as theirs too.
    """

    pool: Pool
    strategy: str
    runs: list[tuple[str, int]]  # (run name, depth) of the runs read
    candidate_pairs: int = 0
    outside_corpus: int = 0
    already_labelled: int = 0
    already_tasks: int = 0
    new_tasks: int = 0
    retired_query_pairs: int = 0
    # Pairs the runs named with a duplicate member, folded into their group's first (one task for the group).
    duplicate_pairs_folded: int = 0
    unchosen_query_pairs: int = 0
    left_out_by_budget: int = 0
    credited_tasks: int = 0
    reordered_tasks: int = 0
    per_query: dict[str, QueryPoolCounts] = field(default_factory=dict)

    def lines(self) -> list[str]:
        runs = ", ".join(f"{name} (depth {depth})" for name, depth in self.runs)
        out = [
            f"pool {self.pool.pk} of {self.pool.golden_set.slug}: strategy {self.strategy}, runs {runs}",
            f"candidate pairs: {self.candidate_pairs} over {len(self.per_query)} queries",
            f"already labelled (skipped): {self.already_labelled}",
            f"already in a pool of the set (skipped): {self.already_tasks}",
            f"outside the corpus (cannot be judged, skipped): {self.outside_corpus}",
            f"pairs to judge added to the pool: {self.new_tasks}",
        ]
        if self.duplicate_pairs_folded:
            out.append(f"pairs of duplicate documents folded into their group's first (judged once): {self.duplicate_pairs_folded}")
        if self.retired_query_pairs:
            out.append(f"pairs of retired queries (skipped): {self.retired_query_pairs}")
        if self.unchosen_query_pairs:
            out.append(f"pairs of queries outside the chosen ones (skipped): {self.unchosen_query_pairs}")
        if self.credited_tasks:
            out.append(f"existing tasks also retrieved by the added runs (credited to them): {self.credited_tasks}")
        if self.pool.budget is not None:
            out.append(
                f"budget {self.pool.budget} judgments: {self.left_out_by_budget} open pair(s) will be left out "
                f"(left unjudged once the budget is spent; which ones depends on the judging order)"
            )
        out.append(f"queued at a time: the next {self.pool.window} pair(s) of each query, each a judging task once queued")
        out.append(f"judging order: {strategies.strategy_class(self.strategy).description}")
        if strategies.strategy_class(self.strategy).uses_model_labels:
            state = self.pool.strategy_state
            out.append(f"model labels ordering the queue: {state.get('model')}, prompt {str(state.get('prompt_hash', ''))[:12]}")
        return out

    def to_dict(self) -> dict:
        return {
            "pool": self.pool.pk,
            "strategy": self.strategy,
            "runs": [{"name": name, "depth": depth} for name, depth in self.runs],
            "candidate_pairs": self.candidate_pairs,
            "outside_corpus": self.outside_corpus,
            "already_labelled": self.already_labelled,
            "already_tasks": self.already_tasks,
            "new_tasks": self.new_tasks,
            "retired_query_pairs": self.retired_query_pairs,
            "duplicate_pairs_folded": self.duplicate_pairs_folded,
            "unchosen_query_pairs": self.unchosen_query_pairs,
            "left_out_by_budget": self.left_out_by_budget,
            "credited_tasks": self.credited_tasks,
            "per_query": {query_id: vars(counts) for query_id, counts in self.per_query.items()},
        }


@dataclass
class TaskJudgedResult:
    """What closing a task changed: how many positions were written (tasks joining,
    leaving or moving in the queue), and how many tasks left the queue because the
    judgment spent the pool's budget."""

    task: JudgingTask
    relevant: bool
    reordered_tasks: int = 0
    unqueued_by_budget: int = 0


# --- validation ----------------------------------------------------------------------


def _check_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise GoldsetError(f"depth must be a whole number of at least 1, got {depth!r}", field="depth")
    if depth > strategies.MAX_DEPTH:
        raise GoldsetError(f"depth {depth} is over the most a pool stores ({strategies.MAX_DEPTH})", field="depth")
    return depth


def _check_budget(budget: object) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise GoldsetError(f"budget must be a whole number of at least 1 (or none), got {budget!r}", field="budget")
    return budget


def _check_strategy(strategy: object) -> str:
    if strategy not in strategies.STRATEGIES:
        raise GoldsetError(f"unknown strategy {strategy!r}; choose one of {', '.join(strategies.STRATEGIES)}", field="strategy")
    return strategy


def _check_runs(golden_set: GoldenSet, runs: Sequence[Run]) -> list[Run]:
    runs = list(runs)
    if not runs:
        raise GoldsetError("a pool needs at least one run", field="runs")
    problems = []
    seen: set[int] = set()
    for run in runs:
        if run.golden_set_id != golden_set.pk:
            problems.append(f"run {run.name!r} belongs to another golden set, not {golden_set.slug!r}")
        if run.pk in seen:
            problems.append(f"run {run.name!r} is listed twice")
        if run.archived_at is not None:
            # Archived runs are retired: pooling one would queue pages no live system returns.
            problems.append(f"run {run.name!r} is archived: unarchive it on its run page to pool it")
        seen.add(run.pk)
    if problems:
        raise GoldsetError(f"cannot pool these runs for {golden_set.slug!r}", problems=problems, field="runs")
    return runs


def runs_by_name(*, golden_set: GoldenSet, names: Sequence[str]) -> list[Run]:
    """The runs of `golden_set` named `names`, in that order; GoldsetError listing every
    unknown name (with the names the set has)."""
    found = {run.name: run for run in Run.objects.filter(golden_set=golden_set, name__in=list(names))}
    missing = [name for name in names if name not in found]
    if missing:
        known = ", ".join(repr(name) for name in Run.objects.filter(golden_set=golden_set).values_list("name", flat=True))
        raise GoldsetError(
            f"golden set {golden_set.slug!r} has no run named {', '.join(map(repr, missing))}",
            problems=[f"its runs: {known or 'none'}"],
            field="runs",
        )
    return [found[name] for name in names]


# --- positions ---------------------------------------------------------------------


def window_size(queries: int) -> int:
    """The window of a pool over `queries` queries: at least MIN_WINDOW tasks a query,
    and enough that the whole queue holds QUEUE_FLOOR tasks, so that a pool of a few
    queries still has work for many annotators at once."""
    return max(MIN_WINDOW, -(-QUEUE_FLOOR // max(queries, 1)))


def _budget_spent(pool: Pool) -> bool:
    return pool.budget is not None and task_counts(pool).get(JudgingTask.Status.DONE, 0) >= pool.budget


# --- services ----------------------------------------------------------------------


def _strategy_state(strategy: str, model_source: tuple[str, str] | None) -> dict:
    # Stored with the pool so that a later change of a default cannot change how the
    # pool's judgments replay; model first keeps the model labels it orders by.
    if strategy == strategies.MaxMeanBandit.name:
        return {"discount": strategies.DEFAULT_DISCOUNT}
    if model_source is not None:
        return {"model": model_source[0], "prompt_hash": model_source[1]}
    return {}


def _account(result: PoolBuildResult, union: Union, masks: dict[str, np.ndarray]) -> None:
    """Fill the result's totals and per-query counts from the candidates' classes."""
    queries = len(union.query_pks)
    live = ~union.left_out[union.query_dense]
    result.retired_query_pairs = int(union.retired[union.query_dense].sum())
    result.duplicate_pairs_folded = union.folded_pairs
    if union.unchosen is not None:
        result.unchosen_query_pairs = int((union.unchosen[union.query_dense] & ~union.retired[union.query_dense]).sum())
    per = {
        name: np.bincount(union.query_dense[mask & live], minlength=queries)
        for name, mask in [("candidates", np.ones(len(live), dtype=bool)), *masks.items()]
    }
    result.candidate_pairs = int(per["candidates"].sum())
    for name in masks:
        setattr(result, name, int(per[name].sum()))
    for d in np.flatnonzero(per["candidates"]).tolist():
        result.per_query[union.query_ids[d]] = QueryPoolCounts(**{name: int(counts[d]) for name, counts in per.items()})


def _choose_queries(golden_set: GoldenSet, union: Union, queries: Sequence[Query] | None) -> None:
    """Restrict the union to `queries` of the set (None: every query): the others' pairs
    are left out and counted as unchosen. GoldsetError for a query of another set or none."""
    if queries is None:
        return
    chosen = np.array(sorted({query.pk for query in queries}), dtype=np.int64)
    foreign = [query.query_id for query in queries if query.golden_set_id != golden_set.pk]
    if foreign or not len(chosen):
        raise GoldsetError(
            f"queries {', '.join(map(repr, foreign[:5]))} are not of golden set {golden_set.slug!r}"
            if foreign
            else "no query chosen: pass the queries to pool, or none for every query",
            field="queries",
        )
    union.unchosen = ~np.isin(union.query_pks, chosen)


def pool_settings_check(*, depth: object, strategy: object, budget: object) -> tuple[int, str, int | None]:
    """A new pool's depth, strategy and budget checked (GoldsetError naming the field)."""
    return _check_depth(depth), _check_strategy(strategy), _check_budget(budget)


def pool_build_check(
    *,
    golden_set: GoldenSet,
    runs: Sequence[Run],
    depth: object,
    strategy: object,
    budget: object,
) -> tuple[list[Run], int, str, int | None]:
    """What pool_build refuses before it reads a run (GoldsetError naming the field), so
    that a page can refuse it at once; returns (runs, depth, strategy, budget) checked."""
    return (_check_runs(golden_set, runs), *pool_settings_check(depth=depth, strategy=strategy, budget=budget))


@gc_paused()
def pool_build(
    *,
    golden_set: GoldenSet,
    runs: Sequence[Run],
    depth: int,
    strategy: str,
    budget: int | None = None,
    queries: Sequence[Query] | None = None,
    user: AbstractBaseUser | None = None,
    progress: Progress = no_progress,
    model: str | None = None,
    prompt_hash: str | None = None,
) -> PoolBuildResult:
    """Pool the top `depth` pages of `runs`, per query, into judging tasks of a new pool.

    `queries` restricts the pool to those queries of the set (a slice that needs labels,
    say); their pairs only become tasks, and the others' are counted as unchosen.
    `model` and `prompt_hash` name the model labels a model-first pool orders by
    (pool_model_source_check); other strategies take none.

    All or nothing. Refuses (GoldsetError) a depth under 1, an unknown strategy, a budget
    under 1, no runs, a run twice or a run of another set. Pairs already labelled or
    already pool tasks of the set, pages outside the corpus and retired queries are
    skipped and counted. Every new pair joins the pool; the first `window` of each query,
    in the strategy's order, become queued tasks. Returns the counts, overall and per
    query id.
    """
    runs, depth, strategy, budget = pool_build_check(golden_set=golden_set, runs=runs, depth=depth, strategy=strategy, budget=budget)
    model_source = pool_model_source_check(golden_set=golden_set, strategy=strategy, model=model, prompt_hash=prompt_hash)
    specs = [RunSpec(run=run, ordinal=ordinal, depth=depth) for ordinal, run in enumerate(runs)]
    union = pool_union(golden_set, specs, len(specs), progress)
    _choose_queries(golden_set, union, queries)

    with transaction.atomic():
        # One pool write per set at a time: two builds must not both claim a pair.
        GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).exists()
        masks = classify(golden_set, union, set_pool_keys(golden_set, union))
        new = masks["new_tasks"]
        query_dense, ranks = union.query_dense[new], union.ranks[new]
        pool = Pool.objects.create(
            golden_set=golden_set,
            depth=depth,
            strategy=strategy,
            budget=budget,
            strategy_state=_strategy_state(strategy, model_source),
            window=window_size(int(np.count_nonzero(np.bincount(query_dense)))),
            created_by=user,
        )
        PoolRun.objects.bulk_create([PoolRun(pool=pool, run=spec.run, depth=spec.depth, ordinal=spec.ordinal) for spec in specs])
        query_pks, page_pks = union.query_pks[query_dense], union.page_keys[new]
        table = PairTable(
            query=query_dense,
            ranks=ranks,
            status=np.full(len(query_dense), JudgingTask.Status.OPEN, dtype=object),
            grade=np.zeros(len(query_dense), dtype=np.int64),
            done_order=np.full(len(query_dense), -1, dtype=np.int64),
            page=page_pks,
        )
        ahead, closed = forecast(pool, with_model_scores(pool, table, query_pks), golden_set.relevance_threshold, progress)
        positions = window_positions(ahead, closed, strategies.query_ordinals(query_pks), pool.window)
        _write_pool_queries(pool, query_pks, page_pks, ranks)
        pool_chunks_write(pool, *union_chunks(union, new))
        queued = positions >= 0
        _insert_tasks(pool, query_pks[queued], page_pks[queued], ranks[queued], positions[queued], progress)
        # The queue's statistics: the hand-out's look-ups are planned for the tasks just
        # written, not for the table as it was (lib.bulk.table_analyze).
        table_analyze(JudgingTask)
        pool.pair_count = len(query_pks)
        pool.save(update_fields=["pair_count"])

        result = PoolBuildResult(pool=pool, strategy=strategy, runs=[(spec.run.name, spec.depth) for spec in specs])
        _account(result, union, masks)
        result.left_out_by_budget = max(result.new_tasks - budget, 0) if budget else 0
    return result


def pool_extend_check(*, pool: Pool, runs: Sequence[Run], depth: object = None, for_queries: bool = False) -> tuple[list[Run], int]:
    """What pool_extend refuses before it reads a run (GoldsetError naming the field): a
    bad depth, runs of another set or listed twice, runs pooled at that depth already
    (unless the extension is `for_queries`: then the queries may be new to the pool).
    Returns (runs, depth) checked, the depth defaulting to the pool's."""
    depth = _check_depth(pool.depth if depth is None else depth)
    runs = _check_runs(pool.golden_set, runs)
    if for_queries:
        return runs, depth
    pooled = {pool_run.run_id: pool_run.depth for pool_run in pool.pool_runs.all()}
    problems = [f"run {run.name!r} is already pooled at depth {pooled[run.pk]}" for run in runs if pooled.get(run.pk, 0) >= depth]
    if problems:
        raise GoldsetError(f"nothing to add to pool {pool.pk} at depth {depth}", problems=problems, field="runs")
    return runs, depth


@gc_paused()
def pool_extend(
    *,
    pool: Pool,
    runs: Sequence[Run],
    depth: int | None = None,
    queries: Sequence[Query] | None = None,
    progress: Progress = no_progress,
) -> PoolBuildResult:
    """Add runs to a pool, or pool runs it holds deeper: only their new unjudged pairs
    join it (incremental pooling).

    `depth` defaults to the pool's. `queries` restricts the extension to those queries of
    the set (the flagged slices', say), which may be new to the pool: a run already pooled
    at that depth is then not refused. A pair that is already in a pool of the set is not added
    again; where it is a task of this pool, the added runs are recorded in its run_ranks,
    so that adaptive strategies and leave-one-run-out see every run that retrieved it.
    The windows of the queries that gained tasks or credits are formed again. When the
    budget is already spent nothing is queued. All or nothing; returns counts as
    pool_build does, over the pairs of the runs read.
    """
    golden_set = pool.golden_set
    runs, depth = pool_extend_check(pool=pool, runs=runs, depth=depth, for_queries=queries is not None)
    pooled = {pool_run.run_id: pool_run for pool_run in pool.pool_runs.all()}
    columns = max((pool_run.ordinal for pool_run in pooled.values()), default=-1) + 1
    specs = []
    for run in runs:
        if run.pk in pooled:
            specs.append(RunSpec(run=run, ordinal=pooled[run.pk].ordinal, depth=depth))
        else:
            specs.append(RunSpec(run=run, ordinal=columns, depth=depth))
            columns += 1
    union = pool_union(golden_set, specs, columns, progress)
    _choose_queries(golden_set, union, queries)
    # Pairs of retired queries, or of queries not chosen, are neither added nor credited.
    live = ~union.left_out[union.query_dense]
    threshold = golden_set.relevance_threshold

    with transaction.atomic():
        GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).exists()
        pool = Pool.objects.select_for_update().select_related("golden_set").get(pk=pool.pk)
        for spec in specs:
            # A run pooled deeper before, for other queries, keeps its deepest depth.
            depth_now = max(spec.depth, pooled[spec.run.pk].depth if spec.run.pk in pooled else 0)
            PoolRun.objects.update_or_create(pool=pool, run=spec.run, defaults={"depth": depth_now, "ordinal": spec.ordinal})

        # This pool's pairs of the queries the runs answer: candidates for credit, and
        # the rest of the order the new pairs join.
        touched = np.flatnonzero(np.bincount(union.query_dense[live], minlength=len(union.query_pks)))
        old_query_pks, old = _pool_pairs(pool, union.query_pks[touched].tolist(), columns)
        old.query = dense_queries(union, old_query_pks)
        old_keys = union.pair_keys(old.query, old.page)
        masks = classify(golden_set, union, np.concatenate([old_keys[old_keys >= 0], set_pool_keys(golden_set, union, exclude_pool=pool)]))
        new = masks["new_tasks"]

        # Credit the runs read on this pool's pairs they retrieved (in the pair's
        # PoolQuery row, and on its task if it is one).
        credited = np.zeros(0, dtype=np.int64)
        if len(old_keys):
            by_key = np.argsort(old_keys)
            at = np.minimum(np.searchsorted(old_keys[by_key], union.keys), len(old_keys) - 1)
            matched = (old_keys[by_key][at] == union.keys) & live
            pair_rows = by_key[at[matched]]
            merged = np.where(union.ranks[matched] > 0, union.ranks[matched].astype(np.int64), old.ranks[pair_rows])
            changed = (merged != old.ranks[pair_rows]).any(axis=1)
            credited = pair_rows[changed]
            old.ranks[credited] = merged[changed]
        tasked = credited[old.task_id[credited] > 0]
        _update_tasks(
            "run_ranks",
            [(int(old.task_id[row]), bytes(blob)) for row, blob in zip(tasked.tolist(), strategies.pack_ranks(old.ranks[tasked]))],
        )

        # The queries that gained pairs or credits: their pairs, old and new, stored
        # again, and their windows formed again.
        new_query, fresh = union.query_dense[new], int(new.sum())
        changed_query = np.zeros(len(union.query_pks), dtype=bool)
        changed_query[new_query] = True
        changed_query[old.query[credited]] = True
        kept = np.flatnonzero(changed_query[old.query])
        query_all = np.concatenate([old.query[kept], new_query])
        page_all = np.concatenate([old.page[kept], union.page_keys[new]])
        sort = np.lexsort((page_all, query_all))
        table = PairTable(
            query=query_all[sort],
            page=page_all[sort],
            ranks=np.concatenate([old.ranks[kept], union.ranks[new].astype(np.int64)])[sort],
            status=np.concatenate([old.status[kept], np.full(fresh, JudgingTask.Status.OPEN, dtype=object)])[sort],
            grade=np.concatenate([old.grade[kept], np.zeros(fresh, dtype=np.int64)])[sort],
            # Judging order within a query is all forecast reads of it: the old ranks still give it.
            done_order=np.concatenate([old.done_order[kept], np.full(fresh, -1, dtype=np.int64)])[sort],
            task_id=np.concatenate([old.task_id[kept], np.zeros(fresh, dtype=np.int64)])[sort],
            position=np.concatenate([old.position[kept], np.full(fresh, -1, dtype=np.int64)])[sort],
        )
        query_pks = union.query_pks[table.query]
        ahead, closed = forecast(pool, with_model_scores(pool, table, query_pks), threshold, progress)
        positions = window_positions(ahead, closed, strategies.query_ordinals(query_pks), pool.window)
        if _budget_spent(pool):
            positions[:] = -1

        PoolQuery.objects.filter(pool=pool, query_id__in=union.query_pks[changed_query].tolist()).delete()
        _write_pool_queries(pool, query_pks, table.page, table.ranks)
        # The chunks of the new pairs, and of this pool's pairs the runs read retrieved.
        in_pool = new.copy()
        if len(old_keys):
            in_pool |= member(union.keys, old_keys[old_keys >= 0]) & live
        pool_chunks_write(pool, *union_chunks(union, in_pool))
        reordered, _ = _queue_pairs(pool, query_pks, table, positions, progress)
        table_analyze(JudgingTask)  # as pool_build does
        pool.pair_count += fresh
        pool.save(update_fields=["pair_count"])

        result = PoolBuildResult(pool=pool, strategy=pool.strategy, runs=[(spec.run.name, spec.depth) for spec in specs])
        _account(result, union, masks)
        result.credited_tasks = len(credited)
        result.reordered_tasks = reordered
        result.left_out_by_budget = left_out_by_budget(pool)
    return result


def _pool_pairs(pool: Pool, query_pks: Sequence[int], columns: int | None = None) -> tuple[np.ndarray, PairTable]:
    """(query pk of each pair, table) of the pool's pairs of `query_pks` (selectors.pool_pairs);
    the table's `query` numbers the queries read, 0 first."""
    pairs = pool_pairs(pool, query_pks, columns)
    done_order = judging_order(pairs.done_at, pairs.task_ids.tolist())
    table = PairTable(
        query=np.r_[0, np.cumsum(pairs.query_pks[1:] != pairs.query_pks[:-1])] if len(pairs) else np.zeros(0, dtype=np.int64),
        ranks=pairs.ranks,
        status=pairs.status,
        grade=np.maximum(pairs.grade, 0),
        done_order=done_order,
        page=pairs.page_pks,
        task_id=pairs.task_ids,
        position=pairs.position,
    )
    return pairs.query_pks, table


def _queue_pairs(
    pool: Pool, query_pks: np.ndarray, table: PairTable, fresh: np.ndarray, progress: Progress = no_progress
) -> tuple[int, int]:
    """Write the queue positions `fresh` (-1: not queued) of the pairs of `table` (read by
    _pool_pairs, or new with task_id 0): open tasks whose position changes are updated,
    and the pairs without a task that join the queue become tasks. Returns (moved, made)."""
    has_task = table.task_id > 0
    moving = np.flatnonzero(has_task & (table.status == JudgingTask.Status.OPEN) & (fresh != table.position))
    moved = _update_tasks("position", [(int(table.task_id[i]), None if fresh[i] < 0 else int(fresh[i])) for i in moving.tolist()])
    joining = ~has_task & (fresh >= 0)
    made = _insert_tasks(pool, query_pks[joining], table.page[joining], table.ranks[joining], fresh[joining], progress)
    return moved, made


_POOL_QUERY_COLUMNS = ["pool_id", "query_id", "page_ids", "run_ranks", "runs"]


def _write_pool_queries(pool: Pool, query_pks: np.ndarray, page_pks: np.ndarray, ranks: np.ndarray) -> int:
    """Store pairs sorted by (query, page) as the pool's PoolQuery rows, one per query
    (binary COPY on PostgreSQL). Returns how many rows."""
    if not len(query_pks):
        return 0
    starts = np.flatnonzero(np.r_[True, query_pks[1:] != query_pks[:-1]])
    stops = np.r_[starts[1:], len(query_pks)]
    packed = PoolQuery.packed(page_pks, ranks)
    pages, runs_bytes, runs = packed["page_ids"], packed["run_ranks"], packed["runs"]
    rows = (
        (pool.pk, int(query_pks[start]), pages[8 * start : 8 * stop], runs_bytes[2 * runs * start : 2 * runs * stop], runs)
        for start, stop in zip(starts.tolist(), stops.tolist())
    )
    return bulk_insert(PoolQuery._meta.db_table, _POOL_QUERY_COLUMNS, rows, types=["bigint", "bigint", "bytea", "bytea", "smallint"])


def _unqueue_if_budget_spent(pool_id: int) -> int:
    """Empty the pool's queue if its budget is spent; how many tasks left it."""
    pool = Pool.objects.filter(pk=pool_id).first()
    if pool is None or not _budget_spent(pool):
        return 0
    return JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.OPEN, position__isnull=False).update(position=None)


def pool_task_judged(*, task: JudgingTask, grade: int, judgments_required: int = 1) -> TaskJudgedResult:
    """Close an open pool task with the grade it was judged, then move the queue on.

    Call it once the pair's judgment is recorded (goldenset.services.judgment_record),
    in the same transaction. Marks the task done, frees its lease and counts that
    judgment, writing `judgments_required`, how many judgments the task needs in all
    (more than 1 for an overlap task, which the judging queue decides), in one UPDATE.
    Then forms the query's window again: the next open task in the strategy's order joins
    the queue, and an adaptive strategy reorders it from what it learned (only positions
    that change are written). Once the pool's budget is spent, its queue is emptied
    instead. Judgments of one query of a pool are serialised (labeling.leases.
    pool_query_lock), so two reorders of a window never interleave; judgments of
    different queries go on side by side. Refuses (GoldsetError) a task that is not an
    open pool task and a grade off the set's scale.

    It runs in its caller's transaction when there is one, without a savepoint: a task
    found closed already under the locks refuses the caller's whole transaction, so a
    judgment never stays without its task's close. Called alone, it is its own
    transaction.
    """
    if task.kind != JudgingTask.Kind.POOL or task.pool_id is None:
        raise GoldsetError(f"task {task.pk} is a {task.kind} task, not a pool task", field="task")
    golden_set = task.golden_set
    if isinstance(grade, bool) or grade not in golden_set.grade_values():
        allowed = ", ".join(map(str, golden_set.grade_values()))
        raise GoldsetError(f"grade {grade!r} is not on the scale of {golden_set.slug!r} ({allowed})", field="grade")
    with transaction.atomic(savepoint=False):
        pool = pool_query_lock(pool_id=task.pool_id, query_id=task.query_id)
        task = JudgingTask.objects.select_for_update(of=("self",)).get(pk=task.pk)
        pool.golden_set = task.golden_set = golden_set  # the same row: the database checks it
        if task.status != JudgingTask.Status.OPEN:
            raise GoldsetError(f"task {task.pk} is {task.status}, not open", field="task")

        task.status, task.grade, task.done_at = JudgingTask.Status.DONE, grade, timezone.now()
        task.leased_to, task.lease_expires_at = None, None
        task.judgments_done, task.judgments_required = task.judgments_done + 1, judgments_required
        JudgingTask.objects.filter(pk=task.pk).update(
            status=task.status,
            grade=grade,
            done_at=task.done_at,
            leased_to=None,
            lease_expires_at=None,
            judgments_done=F("judgments_done") + 1,
            judgments_required=judgments_required,
        )
        result = TaskJudgedResult(task=task, relevant=grade >= golden_set.relevance_threshold)

        if pool.budget is not None:
            # Judgments of other queries commit side by side, and each counts the done
            # tasks without the others' still uncommitted ones: two could each see the
            # budget one short and neither empty the queue. Counted again once this one
            # has committed, the last of them to commit sees every one.
            pool_id = pool.pk
            transaction.on_commit(lambda: _unqueue_if_budget_spent(pool_id))
        if _budget_spent(pool):
            result.unqueued_by_budget = JudgingTask.objects.filter(
                pool=pool, status=JudgingTask.Status.OPEN, position__isnull=False
            ).update(position=None)
            return result

        query_pks, table = _pool_pairs(pool, [task.query_id])
        ahead, closed = forecast(pool, with_model_scores(pool, table, query_pks), golden_set.relevance_threshold, no_progress)
        fresh = window_positions(ahead, closed, strategies.query_ordinals(query_pks), pool.window)
        # Closed tasks keep the position they were judged at; open ones move, and pairs
        # that join the window become tasks.
        moved, made = _queue_pairs(pool, query_pks, table, fresh)
        result.reordered_tasks = moved + made
    return result
