"""The judging strategies on small hand-made pools (labeling.pools.strategies, no database)."""

import numpy as np
import pytest

from labeling.models import Pool
from labeling.pools import strategies as pooling


def ranks_of(*runs: list[int], pages: int | None = None) -> np.ndarray:
    """A ranks matrix from each run's candidates best first (candidate indices)."""
    size = pages if pages is not None else max(max(run, default=-1) for run in runs) + 1
    ranks = np.zeros((size, len(runs)), dtype=np.int64)
    for column, run in enumerate(runs):
        for rank, candidate in enumerate(run, start=1):
            ranks[candidate, column] = rank
    return ranks


def judge_all(strategy: pooling.Strategy, relevant: set[int]) -> list[int]:
    """Judge until nothing is left, one next() at a time; return the candidates in judging order."""
    judged = []
    while (candidate := strategy.next()) is not None:
        strategy.observe(candidate, candidate in relevant)
        judged.append(candidate)
    return judged


def test_the_strategies_are_the_pool_models_choices():
    assert list(pooling.STRATEGIES) == Pool.Strategy.values


def test_depth_takes_rank_one_of_every_run_before_rank_two():
    strategy = pooling.DepthOrder(ranks_of([0, 1, 2], [3, 1, 4]))
    assert strategy.order().tolist() == [0, 3, 1, 2, 4]
    assert judge_all(strategy, relevant={3}) == [0, 3, 1, 2, 4]  # not adaptive


def test_move_to_front_moves_a_run_to_the_back_after_a_miss():
    strategy = pooling.MoveToFront(ranks_of([0, 1, 2], [3, 4, 5], [6, 7]))
    assert strategy.next() == 0
    strategy.observe(0, relevant=False)
    assert strategy.run_order() == [1, 2, 0]
    assert strategy.order().tolist() == [3, 4, 5, 6, 7, 1, 2]


def test_move_to_front_keeps_drawing_from_a_run_while_it_hits():
    strategy = pooling.MoveToFront(ranks_of([0, 1, 2], [3, 4, 5]))
    assert judge_all(strategy, relevant={3, 4, 5}) == [0, 3, 4, 5, 1, 2]


def test_move_to_front_skips_pages_already_judged_from_another_run():
    strategy = pooling.MoveToFront(ranks_of([0, 1], [1, 2]))
    strategy.observe(0, relevant=False)  # a misses: b leads, and b's first page is b's rank 1
    assert strategy.order().tolist() == [1, 2]
    strategy.observe(1, relevant=True)  # found under b, the run it was drawn from
    assert strategy.run_order() == [1, 0] and strategy.next() == 2


def test_the_bandit_draws_more_from_a_run_that_keeps_hitting():
    poor, good = list(range(10, 20)), list(range(0, 10))
    strategy = pooling.MaxMeanBandit(ranks_of(good, poor)[:, ::-1])  # the poor run is listed first
    first_ten = judge_all(strategy, relevant=set(good) - {0})[:10]
    # It starts with the first run listed, sees both runs miss once, then stays with the one that hits.
    assert first_ten == [10, 0, 11, 1, 2, 3, 4, 5, 6, 7]


def test_the_bandit_credits_only_the_run_a_page_was_drawn_from():
    strategy = pooling.MaxMeanBandit(ranks_of([0, 1], [0, 2]), discount=1.0)
    strategy.observe(0, relevant=True)
    assert strategy.hits.tolist() == [1.0, 0.0] and strategy.posterior_means().tolist() == [2 / 3, 1 / 2]


def test_the_bandit_lets_old_evidence_fade():
    strategy = pooling.MaxMeanBandit(ranks_of([0, 1, 2]), discount=0.5)
    for candidate, relevant in [(0, True), (1, False), (2, False)]:
        strategy.observe(candidate, relevant)
    assert strategy.hits.tolist() == [0.25] and strategy.misses.tolist() == [1.5]


def test_a_discount_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="discount must be in"):
        pooling.MaxMeanBandit(ranks_of([0]), discount=0)


def test_model_first_takes_the_highest_model_scores_first_then_the_unlabelled_in_depth_order():
    ranks = ranks_of([0, 1, 2], [3, 1, 4])  # depth order: 0, 3, 1, 2, 4
    scores = np.array([0.2, np.nan, 0.9, np.nan, 0.2])
    strategy = pooling.make_strategy("model_first", ranks, scores=scores)
    # 2 (0.9), then the tie at 0.2 in depth order (0 before 4), then 3 and 1 unlabelled in depth order.
    assert strategy.order().tolist() == [2, 0, 4, 3, 1]
    assert judge_all(strategy, relevant={4}) == [2, 0, 4, 3, 1]  # not adaptive


def test_model_first_without_any_model_label_is_depth_order():
    ranks = ranks_of([0, 1, 2], [3, 1, 4])
    assert pooling.make_strategy("model_first", ranks).order().tolist() == pooling.DepthOrder(ranks).order().tolist()


def test_model_first_says_it_uses_model_labels_and_the_others_do_not():
    assert [name for name, cls in pooling.STRATEGIES.items() if cls.uses_model_labels] == ["model_first"]
    assert "uses model labels" in pooling.STRATEGIES["model_first"].description


def test_model_scores_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match="one value per candidate"):
        pooling.initial_slots("model_first", np.zeros(3, dtype=np.int64), ranks_of([0, 1, 2]), np.zeros(2))


def test_initial_slots_of_model_first_over_many_queries_match_each_querys_own_order():
    rng = np.random.default_rng(5)
    matrices, scores = [], []
    for _ in range(6):
        runs = [rng.permutation(25)[: rng.integers(1, 10)].tolist() for _ in range(3)]
        ranks = ranks_of(*runs, pages=25)
        ranks = ranks[np.any(ranks, axis=1)]
        matrices.append(ranks)
        # Few distinct values (ties) and some pairs unlabelled.
        score = rng.integers(0, 3, size=len(ranks)).astype(float)
        score[rng.random(len(ranks)) < 0.3] = np.nan
        scores.append(score)
    query_index = np.concatenate([np.full(len(m), q) for q, m in enumerate(matrices)])
    slots = pooling.initial_slots("model_first", query_index, np.concatenate(matrices), np.concatenate(scores))
    for q, (ranks, score) in enumerate(zip(matrices, scores)):
        expected = np.empty(len(ranks), dtype=np.int64)
        expected[pooling.make_strategy("model_first", ranks, scores=score).order()] = np.arange(len(ranks))
        assert slots[query_index == q].tolist() == expected.tolist()


@pytest.mark.parametrize("name", list(pooling.STRATEGIES))
def test_every_strategy_judges_each_candidate_once_and_next_is_the_head_of_its_order(name):
    rng = np.random.default_rng(7)
    runs = [rng.permutation(30)[:12].tolist() for _ in range(4)]
    strategy = pooling.make_strategy(name, ranks_of(*runs, pages=30)[np.any(ranks_of(*runs, pages=30), axis=1)])
    relevant = set(rng.choice(len(strategy.ranks), 8, replace=False).tolist())
    judged = []
    while len(order := strategy.order()):
        assert strategy.next() == order[0]
        judged.append(int(order[0]))
        strategy.observe(int(order[0]), int(order[0]) in relevant)
    assert sorted(judged) == list(range(len(strategy.ranks))) and strategy.next() is None


@pytest.mark.parametrize("name", list(pooling.STRATEGIES))
def test_initial_slots_of_many_queries_match_each_querys_own_order(name):
    rng = np.random.default_rng(3)
    matrices = []
    for _ in range(5):
        runs = [rng.permutation(25)[: rng.integers(1, 10)].tolist() for _ in range(3)]
        ranks = ranks_of(*runs, pages=25)
        matrices.append(ranks[np.any(ranks, axis=1)])
    query_index = np.concatenate([np.full(len(m), q) for q, m in enumerate(matrices)])
    slots = pooling.initial_slots(name, query_index, np.concatenate(matrices))
    for q, ranks in enumerate(matrices):
        expected = np.empty(len(ranks), dtype=np.int64)
        expected[pooling.make_strategy(name, ranks).order()] = np.arange(len(ranks))
        assert slots[query_index == q].tolist() == expected.tolist()


@pytest.mark.parametrize("name", list(pooling.STRATEGIES))
def test_initial_slots_are_the_same_when_the_keys_are_too_wide_to_pack(name, monkeypatch):
    rng = np.random.default_rng(11)
    ranks = rng.integers(0, 4, size=(400, 3))  # many ties within a query
    ranks[ranks.sum(axis=1) == 0, 0] = 1
    query_index = np.sort(rng.integers(0, 7, size=400))[rng.permutation(400)]  # queries interleaved
    packed = pooling.initial_slots(name, query_index, ranks)
    monkeypatch.setattr(pooling, "_packed_order", lambda keys: None)
    assert packed.tolist() == pooling.initial_slots(name, query_index, ranks).tolist()


def test_the_best_rank_is_the_lowest_nonzero_one_and_ties_go_to_the_first_run():
    ranks = np.array([[0, 3, 3], [7, 0, 2], [1, 1, 0], [0, 0, pooling.MAX_DEPTH]], dtype=np.uint16)
    best_rank, best_run = pooling.best_rank_and_run(ranks)
    assert (best_rank.tolist(), best_run.tolist()) == ([3, 2, 1, pooling.MAX_DEPTH], [1, 2, 0, 2])


def test_a_replay_reproduces_the_judging_it_replays():
    ranks = ranks_of([0, 1, 2, 3], [4, 1, 5], [6, 2])
    live = pooling.make_strategy("mtf", ranks)
    history = []
    for relevant in [False, True, False, False]:
        candidate = live.next()
        live.observe(candidate, relevant)
        history.append((candidate, relevant))
    assert pooling.replay("mtf", ranks, history).order().tolist() == live.order().tolist()


def test_a_discarded_candidate_leaves_the_order_and_teaches_nothing():
    strategy = pooling.MoveToFront(ranks_of([0, 1], [2]))
    strategy.discard(0)
    assert strategy.order().tolist() == [1, 2] and strategy.run_order() == [0, 1]


def test_positions_interleave_queries_slot_by_slot():
    positions = pooling.slot_positions(np.array([0, 1, 0, 0]), np.array([0, 0, 1, 2]))
    assert np.argsort(positions).tolist() == [0, 2, 3, 1]


def test_ranks_pack_into_bytes_and_shorter_values_read_as_zeros():
    ranks = np.array([[1, 0, 300], [0, 65535, 2]])
    packed = pooling.pack_ranks(ranks)
    assert [bytes(blob) for blob in packed] == [b"\x01\x00\x00\x00\x2c\x01", b"\x00\x00\xff\xff\x02\x00"]
    assert pooling.unpack_ranks([bytes(blob) for blob in packed] + [b"\x07\x00"], 4).tolist() == [
        [1, 0, 300, 0],
        [0, 65535, 2, 0],
        [7, 0, 0, 0],
    ]


def test_unknown_strategies_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown strategy 'random'; choose one of depth, mtf, bandit"):
        pooling.strategy_class("random")


def test_the_simulation_counts_the_judgments_it_took_to_find_each_share_of_the_relevant_pages():
    runs = [{"q1": ["a", "b", "c"], "q2": ["x", "y"]}, {"q1": ["c", "d"]}]
    result = pooling.simulate("depth", runs, {"q1": {"c", "d"}, "q2": {"y"}}, depth=2)
    # Round-robin in rank order: q1-a, q2-x, q1-c, q2-y, q1-b, q1-d.
    assert (result.queries, result.pool_size, result.relevant) == (2, 6, 3)
    assert result.found.tolist() == [0, 0, 1, 2, 2, 3]
    assert [result.judgments_to_find(f) for f in (0.5, 0.8, 0.9)] == [4, 6, 6]
