"""A query's window of queued tasks: the strategy's forecast of its open tasks and their
queue positions, computed in numpy over a pool's pairs; labeling.pools.services reads the
pairs and writes the positions."""

from dataclasses import dataclass

import numpy as np

from labeling.models import JudgingTask, Pool
from labeling.pools import strategies
from labeling.pools.model_first import pool_model_scores
from lib.progress import Progress


@dataclass
class PairTable:
    """A pool's pairs (of some queries, or about to be written), sorted by (query, page).

    `status` is the pair's task's, open for a pair without a task; `done_order` ranks
    done tasks in judging order (done_at, then id) and is -1 for the others; `grade` is
    meaningful where a task is done. `page`, `task_id` (0: no task yet) and `position`
    (-1: not queued) are filled where the pairs are read back from the pool;
    `model_score` (NaN: no label) where the pool's strategy orders by model labels
    (with_model_scores).
    """

    query: np.ndarray  # dense query index
    ranks: np.ndarray
    status: np.ndarray  # object array of JudgingTask.Status values
    grade: np.ndarray
    done_order: np.ndarray
    page: np.ndarray | None = None
    task_id: np.ndarray | None = None
    position: np.ndarray | None = None
    model_score: np.ndarray | None = None


def with_model_scores(pool: Pool, table: PairTable, query_pks: np.ndarray) -> PairTable:
    """Fill the table's model scores (its pairs are `query_pks` and table.page) when the
    pool's strategy orders by model labels; a table of any other pool is left as it is."""
    if strategies.strategy_class(pool.strategy).uses_model_labels:
        table.model_score = pool_model_scores(pool, query_pks, table.page)
    return table


def forecast(pool: Pool, table: PairTable, threshold: int, progress: Progress) -> tuple[np.ndarray, np.ndarray]:
    """(ahead, closed) for each task: how many open tasks of its query come before it in
    the strategy's forecast (-1 for a task that is not open), and how many of its query's
    tasks are closed (done or skipped).

    The forecast is the order the pool's strategy gives after replaying the query's
    judgments. Where there is nothing to replay (no done task, or a strategy that does
    not adapt) it is the strategy's initial order restricted to the open tasks, computed
    for all those queries in one sort; the others are replayed one query at a time.
    """
    is_open = table.status == JudgingTask.Status.OPEN
    is_done = table.status == JudgingTask.Status.DONE
    queries = int(table.query.max()) + 1 if len(table.query) else 0
    closed = np.bincount(table.query[~is_open], minlength=queries)[table.query] if len(table.query) else np.zeros(0, dtype=np.int64)
    ahead = np.full(len(table.query), -1, dtype=np.int64)

    cls = strategies.strategy_class(pool.strategy)
    if cls.uses_model_labels and table.model_score is None:
        raise ValueError(f"pool {pool.pk} orders by model labels: fill the table's model scores first (with_model_scores)")
    scores = table.model_score
    replayed = np.zeros(queries, dtype=bool)
    if cls.adaptive:
        replayed[table.query[is_done]] = True
    plain = is_open & ~replayed[table.query]
    if plain.any():
        ahead[plain] = strategies.initial_slots(
            pool.strategy,
            table.query[plain],
            table.ranks[plain],
            None if scores is None else scores[plain],
        )

    replay_queries = np.flatnonzero(replayed)
    if len(replay_queries):
        starts = np.searchsorted(table.query, replay_queries)
        stops = np.searchsorted(table.query, replay_queries, side="right")
        for start, stop in progress(list(zip(starts.tolist(), stops.tolist())), "replaying judged queries"):
            rows = slice(start, stop)
            status, done_order = table.status[rows], table.done_order[rows]
            done = np.flatnonzero(status == JudgingTask.Status.DONE)
            done = done[np.argsort(done_order[done], kind="stable")]
            relevant = table.grade[rows][done] >= threshold
            strategy = strategies.replay(
                pool.strategy,
                table.ranks[rows],
                list(zip(done.tolist(), relevant.tolist())),
                pool.strategy_state,
                None if scores is None else scores[rows],
            )
            for i in np.flatnonzero(status == JudgingTask.Status.SKIPPED).tolist():
                strategy.discard(i)
            ahead[start + strategy.order()] = np.arange(int(is_open[rows].sum()))
    return ahead, closed


def window_positions(ahead: np.ndarray, closed: np.ndarray, ordinals: np.ndarray, window: int) -> np.ndarray:
    """Queue positions of the tasks in their query's window (the first `window` open
    tasks of the forecast), -1 for the others. A query's open tasks take the slots after
    those its closed tasks used, so queries take turns by how far along they are."""
    queued = (ahead >= 0) & (ahead < window)
    return np.where(queued, strategies.slot_positions(closed + np.maximum(ahead, 0), ordinals), -1)


def judging_order(done_at: list, ids: list) -> np.ndarray:
    """Rank of each task in judging order (done_at, then id); -1 where not done."""
    order = np.full(len(ids), -1, dtype=np.int64)
    done = [i for i, when in enumerate(done_at) if when is not None]
    done.sort(key=lambda i: (done_at[i], ids[i]))
    order[done] = np.arange(len(done))
    return order
