"""Completeness samples: a uniform draw of the unjudged pairs the pooled runs rank below the
pool depth, queued as SAMPLE tasks, and the estimate of relevant pages nobody judged."""

import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from goldenset.models import Judgment, Membership
from goldenset.services import judgment_record, membership_grant, query_retire
from labeling.completeness.selectors import completeness_estimate
from labeling.completeness.services import completeness_sample_draw
from labeling.models import CompletenessSample, JudgingTask
from labeling.pools import services
from labeling.pools import strategies as pooling
from labeling.pools.selectors import pool_queue
from labeling.pools.services import pool_build
from lib.errors import GoldsetError
from lib.ppi import wilson_interval
from tests.support import factories

# Three queries over twelve pages; q1-d1 is labelled relevant, q1-d4 not relevant.
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set("tiny", pages=factories.pages(*(f"d{n}" for n in range(1, 13))), qrels={("q1", "d1"): 2, ("q1", "d4"): 0}),
]


@pytest.fixture
def runs(golden_set):
    a = factories.run(
        golden_set,
        "a",
        {
            "q1": [f"d{n}" for n in range(1, 9)],
            "q2": [f"d{n}" for n in range(1, 9)],
            "q3": ["d9", "d10", "d11", "d12", "elsewhere", "d1"],
        },
    )
    b = factories.run(golden_set, "b", {"q1": ["d2", "d1", "d9", "d10"], "q2": ["d8", "d7", "d6", "d5"]})
    return [a, b]


@pytest.fixture
def pool(golden_set, runs):
    """Runs a and b pooled at depth 2. Ranks 3..5 of the runs hold, unjudged and not tasks:
    q1: d3, d5 (a), d9, d10 (b) (d4 is labelled); q2: d3, d4, d5 (a), d6 (b, d5 again);
    q3: d11, d12 (a; 'elsewhere' is outside the corpus)."""
    return pool_build(golden_set=golden_set, runs=runs, depth=2, strategy="depth").pool


ELIGIBLE = {
    ("q1", "d3"),
    ("q1", "d5"),
    ("q1", "d9"),
    ("q1", "d10"),
    ("q2", "d3"),
    ("q2", "d4"),
    ("q2", "d5"),
    ("q2", "d6"),
    ("q3", "d11"),
    ("q3", "d12"),
}


def sample_pairs(sample) -> set[tuple[str, str]]:
    return set(JudgingTask.objects.filter(sample=sample).values_list("query__query_id", "page__doc_id"))


def drawn_then_undone(**kwargs) -> set[tuple[str, str]]:
    """The pairs a draw takes, with the draw rolled back so the next one sees the same population."""
    with transaction.atomic():
        pairs = sample_pairs(completeness_sample_draw(**kwargs).sample)
        transaction.set_rollback(True)
    return pairs


# --- the draw -----------------------------------------------------------------------------


def test_a_sample_of_the_whole_population_is_every_unjudged_pair_below_the_pool_depth(pool):
    result = completeness_sample_draw(pool=pool, size=10, depth_to=5, seed=1)
    sample = result.sample
    assert sample_pairs(sample) == ELIGIBLE
    assert (sample.depth_from, sample.depth_to, sample.population, sample.size, sample.seed) == (2, 5, 10, 10, 1)
    # Twelve distinct pairs at ranks 3-5: ten unjudged, q1-d4 labelled, 'elsewhere' outside the corpus.
    assert (result.candidates, result.already_labelled, result.outside_corpus, result.already_tasks) == (12, 1, 1, 0)
    tasks = JudgingTask.objects.filter(sample=sample)
    assert {(t.kind, t.pool_id, t.status, t.judgments_required) for t in tasks} == {("sample", None, "open", 1)}
    # The pooled pairs (ranks 1-2) are pool tasks, not sampled.
    assert not JudgingTask.objects.filter(sample=sample, query__query_id="q1", page__doc_id="d2").exists()


def test_a_sample_records_where_its_pages_were_ranked(pool):
    sample = completeness_sample_draw(pool=pool, size=10, depth_to=5, seed=1).sample
    task = JudgingTask.objects.get(sample=sample, query__query_id="q2", page__doc_id="d5")
    assert task.best_rank == 4 and task.ranks(2) == [5, 4]  # a ranks it 5th, b 4th


def test_the_count_equals_the_size_and_a_seed_draws_the_same_pairs_again(pool):
    first = drawn_then_undone(pool=pool, size=4, depth_to=5, seed=42)
    assert len(first) == 4 and first <= ELIGIBLE
    assert drawn_then_undone(pool=pool, size=4, depth_to=5, seed=42) == first
    assert any(drawn_then_undone(pool=pool, size=4, depth_to=5, seed=seed) != first for seed in range(5))


def test_every_eligible_pair_can_be_drawn_and_nothing_else_is(pool):
    seen: set[tuple[str, str]] = set()
    for seed in range(40):
        seen |= drawn_then_undone(pool=pool, size=2, depth_to=5, seed=seed)
    assert seen == ELIGIBLE


def test_the_draw_is_uniform_over_the_population(pool):
    # 10 pairs, 3 drawn: each pair is drawn with probability 0.3; over 100 draws each count
    # is Binomial(100, 0.3), mean 30, sd 4.6: 7..53 is five sd either side.
    counts = dict.fromkeys(ELIGIBLE, 0)
    for seed in range(100):
        for pair in drawn_then_undone(pool=pool, size=3, depth_to=5, seed=seed):
            counts[pair] += 1
    assert sum(counts.values()) == 300
    assert all(7 <= n <= 53 for n in counts.values()), counts


def test_a_drawn_seed_is_stored_so_the_draw_can_be_repeated(pool):
    sample = completeness_sample_draw(pool=pool, size=3, depth_to=5).sample
    pairs = sample_pairs(sample)
    JudgingTask.objects.filter(sample=sample).delete()
    again = completeness_sample_draw(pool=pool, size=3, depth_to=5, seed=sample.seed).sample
    assert sample_pairs(again) == pairs


def test_the_default_depth_is_the_sets_k_first(golden_set, pool):
    golden_set.k_first, golden_set.k_final = 4, 2
    golden_set.save(update_fields=["k_first", "k_final"])
    pool.golden_set.refresh_from_db()
    sample = completeness_sample_draw(pool=pool, size=1, seed=3).sample
    # Rank 5 is left out: q1-d5 (a's 5th) goes; q2-d5 stays (b's 4th).
    assert (sample.depth_from, sample.depth_to, sample.population) == (2, 4, 9)


def test_pairs_that_are_tasks_of_any_kind_labelled_or_of_retired_queries_are_not_drawn(golden_set, pool, owner):
    already = sample_pairs(completeness_sample_draw(pool=pool, size=1, depth_to=5, seed=5).sample)
    c = factories.run(golden_set, "c", {"q2": ["d6"]})
    pool_build(golden_set=golden_set, runs=[c], depth=1, strategy="depth")  # q2-d6 becomes a task of another pool
    judgment_record(query=golden_set.queries.get(query_id="q1"), page=golden_set.corpus.pages.get(doc_id="d3"), grade=0, annotator=owner)
    query_retire(query=golden_set.queries.get(query_id="q3"))

    retired = {("q3", "d11"), ("q3", "d12")}
    expected = ELIGIBLE - already - {("q2", "d6"), ("q1", "d3")} - retired
    result = completeness_sample_draw(pool=pool, size=len(expected), depth_to=5, seed=6)
    assert result.sample.population == len(expected)
    assert sample_pairs(result.sample) == expected
    tasks = (already | {("q2", "d6")}) - retired
    assert result.already_tasks == len(tasks)
    assert result.already_labelled == len({("q1", "d4"), ("q1", "d3")} - tasks)


def test_pairs_of_the_pool_that_are_no_task_yet_are_not_drawn(golden_set, runs, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # windows of two: q2's d2 and d7 wait in the pool
    pool = pool_build(golden_set=golden_set, runs=runs, depth=2, strategy="depth").pool
    waiting = {("q2", "d2"), ("q2", "d7")}
    assert not JudgingTask.objects.filter(pool=pool, query__query_id="q2", page__doc_id__in=["d2", "d7"]).exists()
    # Down to rank 8, run a ranks q2-d7 seventh: below the pool's depth, yet a pair of the pool.
    population = completeness_sample_draw(pool=pool, size=1, depth_to=8, seed=1).sample.population
    CompletenessSample.objects.all().delete()
    drawn = drawn_then_undone(pool=pool, size=population, depth_to=8, seed=2)
    assert len(drawn) == population and not drawn & waiting


def test_sample_tasks_are_spread_over_the_pools_remaining_turns(golden_set, pool):
    queue = list(pool_queue(pool).values_list("position", flat=True))
    first_slot = min(queue) // pooling.QUERY_STRIDE
    result = completeness_sample_draw(pool=pool, size=10, depth_to=5, seed=7)
    slots = sorted(p // pooling.QUERY_STRIDE for p in JudgingTask.objects.filter(sample=result.sample).values_list("position", flat=True))
    # The pool has 7 open tasks, all queued, over 3 queries: three turns to go, shared by ten pairs.
    assert (len(queue), result.first_slot, result.span) == (7, first_slot, 3)
    assert slots == [first_slot + k * 3 // 10 for k in range(10)]
    ordinals = {p % pooling.QUERY_STRIDE for p in JudgingTask.objects.filter(sample=result.sample).values_list("position", flat=True)}
    assert ordinals == {q.pk % pooling.QUERY_STRIDE for q in golden_set.queries.all()}


# --- refusals -----------------------------------------------------------------------------


def test_a_size_over_the_population_is_refused_and_nothing_is_written(pool):
    with pytest.raises(
        GoldsetError, match=r"size 11 is over the population: ranks 3\.\.5 of the runs of pool \d+ hold 10 unjudged pair"
    ) as caught:
        completeness_sample_draw(pool=pool, size=11, depth_to=5, seed=1)
    assert caught.value.field == "size"
    assert not CompletenessSample.objects.exists() and not JudgingTask.objects.filter(kind="sample").exists()


def test_a_pool_with_nothing_below_its_depth_is_refused(golden_set):
    run = factories.run(golden_set, "short", {"q1": ["d2", "d3"], "q2": ["d5"]})
    pool = pool_build(golden_set=golden_set, runs=[run], depth=2, strategy="depth").pool
    with pytest.raises(GoldsetError, match=r"nothing to sample: no unjudged pair in ranks 3\.\.100 of the runs of pool"):
        completeness_sample_draw(pool=pool, size=1)
    assert not CompletenessSample.objects.exists()


@pytest.mark.parametrize(
    "kwargs, field, message",
    [
        ({"size": 0}, "size", "size must be a whole number of at least 1, got 0"),
        ({"size": True}, "size", "size must be a whole number"),
        ({"size": 1, "depth_to": 2}, "depth_to", "depth_to 2 is not below pool"),
        ({"size": 1, "depth_to": 70_000}, "depth_to", "depth_to must be a whole number from 1 to 65535"),
        ({"size": 1, "seed": -1}, "seed", "seed must be a whole number from 0 to"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(pool, kwargs, field, message):
    with pytest.raises(GoldsetError, match=message) as caught:
        completeness_sample_draw(pool=pool, **kwargs)
    assert caught.value.field == field


# --- the estimate -------------------------------------------------------------------------


def scipy_wilson(r: int, n: int) -> tuple[float, float]:
    stats = pytest.importorskip("scipy.stats")
    ci = stats.binomtest(r, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


@pytest.mark.parametrize("r, n", [(0, 1), (0, 10), (1, 10), (3, 10), (10, 10), (2, 200), (57, 400), (1, 1)])
def test_the_wilson_interval_agrees_with_scipy(r, n):
    low, high = wilson_interval(r, n)
    expected = scipy_wilson(r, n)
    assert low == pytest.approx(expected[0], abs=1e-12) and high == pytest.approx(expected[1], abs=1e-12)


def test_the_wilson_interval_matches_a_hand_computed_value():
    # r = 1, n = 10, z = 1.96: centre (0.1 + 0.19208) / 1.38416 = 0.21101, half 0.19306 ...
    low, high = wilson_interval(1, 10, z=1.96)
    z2 = 1.96**2
    centre = (0.1 + z2 / 20) / (1 + z2 / 10)
    half = 1.96 / (1 + z2 / 10) * math.sqrt(0.1 * 0.9 / 10 + z2 / 400)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert (round(low, 4), round(high, 4)) == (0.0179, 0.4042)


def test_the_estimate_scales_the_judged_share_to_the_population_with_its_interval(golden_set, pool, owner, teammate):
    sample = completeness_sample_draw(pool=pool, size=6, depth_to=5, seed=11).sample
    estimate = completeness_estimate(sample)
    assert (estimate.judged, estimate.relevant, estimate.estimate, estimate.interval) == (0, 0, None, None)

    tasks = list(JudgingTask.objects.filter(sample=sample).select_related("query__golden_set", "page").order_by("id"))
    for task, grade in zip(tasks, [2, 0, 1, 0, 0]):  # five of six judged
        judgment_record(query=task.query, page=task.page, grade=grade, annotator=owner)
    # A person's later grade supersedes their earlier one.
    judgment_record(query=tasks[3].query, page=tasks[3].page, grade=3, annotator=owner)

    estimate = completeness_estimate(sample)
    assert (estimate.size, estimate.population, estimate.judged, estimate.relevant) == (6, 10, 5, 3)
    assert estimate.share == pytest.approx(0.6) and estimate.estimate == pytest.approx(6.0)
    low, high = scipy_wilson(3, 5)
    assert estimate.interval == pytest.approx((10 * low, 10 * high))
    assert estimate.still_unjudged == pytest.approx(3.0)


def test_the_estimate_resolves_labels_as_versions_do(golden_set, pool, owner, teammate, make_user):
    sample = completeness_sample_draw(pool=pool, size=2, depth_to=5, seed=12).sample
    first, second = JudgingTask.objects.filter(sample=sample).select_related("query__golden_set", "page").order_by("id")
    # Two annotators split 0 / 2: the lower median, 0, is not relevant.
    judgment_record(query=first.query, page=first.page, grade=0, annotator=owner)
    judgment_record(query=first.query, page=first.page, grade=2, annotator=teammate)
    # An adjudicator's decision overrides the annotators'.
    judge = make_user("judge")
    membership_grant(user=judge, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    judgment_record(query=second.query, page=second.page, grade=0, annotator=owner)
    judgment_record(query=second.query, page=second.page, grade=3, annotator=judge, source=Judgment.Source.ADJUDICATED)
    judgment_record(query=second.query, page=second.page, grade=0, annotator=teammate)

    estimate = completeness_estimate(sample)
    assert (estimate.judged, estimate.relevant) == (2, 1)


def test_an_estimate_with_no_relevant_page_found_still_has_an_upper_bound(pool, owner):
    sample = completeness_sample_draw(pool=pool, size=4, depth_to=5, seed=13).sample
    for task in JudgingTask.objects.filter(sample=sample).select_related("query__golden_set", "page"):
        judgment_record(query=task.query, page=task.page, grade=0, annotator=owner)
    estimate = completeness_estimate(sample)
    assert estimate.estimate == 0 and estimate.interval[0] == 0
    assert estimate.interval[1] == pytest.approx(10 * scipy_wilson(0, 4)[1]) and estimate.interval[1] > 4


# --- the command --------------------------------------------------------------------------


def test_the_draw_sample_command_draws_and_reports(golden_set, pool, capsys):
    expected = drawn_then_undone(pool=pool, size=3, depth_to=5, seed=9)
    call_command("draw_sample", "tiny", "--pool", str(pool.pk), "--size", "3", "--depth-to", "5", "--seed", "9", verbosity=0)
    out = capsys.readouterr().out
    sample = CompletenessSample.objects.get()
    assert f"completeness sample {sample.pk} of tiny for pool {pool.pk}: ranks 3..5 of its runs" in out
    assert "population (unjudged pairs): 10" in out and "drawn uniformly at random: 3 (seed 9)" in out
    assert sample_pairs(sample) == expected


def test_the_draw_sample_command_names_what_it_refuses(golden_set, pool):
    with pytest.raises(CommandError, match="size 50 is over the population"):
        call_command("draw_sample", "tiny", "--pool", str(pool.pk), "--size", "50", "--depth-to", "5", verbosity=0)
    with pytest.raises(CommandError, match="has no pool 999"):
        call_command("draw_sample", "tiny", "--pool", "999", "--size", "1", verbosity=0)
