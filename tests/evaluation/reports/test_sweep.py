"""The depth-and-cost sweep's reads: the seed's cost maths at a set's figures, the knee, the
cheapest k meeting the 0.80 target, and no price per point for a run that returns only
k_final pages (issue 30 item 1's guarantee). Unsaved rows: nothing here reads the database."""

from decimal import Decimal

import pytest

from evaluation.models import Evaluation, Run
from evaluation.reports.sweep import PromptCost, depth_sweep, run_depth, sweep_chart
from goldenset.models import GoldenSet, Version


def seed_cost(**changes) -> PromptCost:
    return PromptCost(**{"tokens_per_page": 400, "price_per_million": 3.0, "monthly_queries": 1_000_000, **changes})


def test_raising_k_final_from_5_to_10_costs_6000_dollars_a_month_as_the_seed_says():
    cost = seed_cost()
    assert cost.tokens(10) - cost.tokens(5) == 2000
    assert cost.monthly_dollars(10) - cost.monthly_dollars(5) == pytest.approx(6000.0)
    assert cost.monthly_dollars(8) == pytest.approx(9600.0)


def test_the_context_budget_caps_the_tokens_a_query_pays_for():
    cost = seed_cost(context_token_budget=1000)
    assert [cost.tokens(k) for k in (1, 2, 3, 10)] == [400, 800, 1000, 1000]
    assert cost.pages_in_budget == 2
    assert seed_cost().pages_in_budget is None


def test_a_sets_figures_are_its_prompt_cost():
    golden_set = GoldenSet(monthly_queries=20, price_per_million_input=Decimal("0.5"), tokens_per_page=100, context_token_budget=250)
    assert PromptCost.of(golden_set) == PromptCost(tokens_per_page=100, price_per_million=0.5, monthly_queries=20, context_token_budget=250)


def sweep_of(curve, *, entries_per_query: int, k_first: int = 16, k_final: int = 8, queries: int = 10):
    run = Run(name="reranked", entry_count=entries_per_query * queries, query_count=queries, answered_query_count=queries)
    version = Version(number=3, k_first=k_first, k_final=k_final)
    golden_set = GoldenSet(monthly_queries=1_000_000, price_per_million_input=Decimal(3), tokens_per_page=400)
    evaluation = Evaluation(status=Evaluation.Status.DONE, recall_curve=[[k, value] for k, value in enumerate(curve, start=1)])
    return depth_sweep(run, version, golden_set, evaluation)


# recall@1..16: a steep start that flattens after k = 4, crossing 0.80 at k = 6.
CURVE = [0.40, 0.60, 0.70, 0.75, 0.78, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.86, 0.87, 0.87, 0.88]


def test_the_sweep_lists_every_k_to_the_runs_depth_with_tokens_and_dollars():
    sweep = sweep_of(CURVE, entries_per_query=16)
    assert [p.k for p in sweep.points] == list(range(1, 17))
    assert sweep.at(8).tokens == 3200 and sweep.at(8).monthly_dollars == pytest.approx(9600.0)
    assert sweep.recall_final == 0.82
    # From k_final 8 to 12: 4 pages (4,800 dollars a month) for 4 points of recall.
    assert sweep.at(12).dollars_per_point == pytest.approx(1200.0)
    assert sweep.at(8).dollars_per_point is None and sweep.at(5).dollars_per_point is None


def test_the_cheapest_k_meeting_the_target_and_the_knee_are_found():
    sweep = sweep_of(CURVE, entries_per_query=16)
    assert sweep.cheapest_meeting_target.k == 6
    # The farthest point above the chord from (1, 0.40) to (16, 0.88).
    assert sweep.knee.k == 4


def test_a_run_shallower_than_k_first_is_swept_to_its_own_depth_but_never_short_of_k_final():
    sweep = sweep_of(CURVE, entries_per_query=12)
    assert sweep.depth == 12 and sweep.points[-1].k == 12
    shallow = sweep_of(CURVE, entries_per_query=5)
    assert shallow.depth == 8 and shallow.recall_final == 0.82 and shallow.returns_only_k_final


def test_a_run_that_returns_only_k_final_pages_has_no_price_per_point_and_says_why():
    """Issue 30 item 1: recall@16 equal to recall@8 but for a float's last bits priced a
    point at $144,115,188,075,855,870 a month on the demo."""
    flat = CURVE[:8] + [0.82 + 2.5e-17] * 8
    sweep = sweep_of(flat, entries_per_query=8, k_first=16)
    assert sweep.returns_only_k_final
    assert all(point.dollars_per_point is None for point in sweep.points)
    assert "returns no more than k_final = 8 pages a query" in sweep.note and "no price per point" in sweep.note


def test_a_flat_curve_past_k_final_gets_no_price_per_point():
    flat = CURVE[:8] + [0.82 + 2.5e-17] * 8
    sweep = sweep_of(flat, entries_per_query=16)
    assert not sweep.returns_only_k_final
    assert all(point.dollars_per_point is None for point in sweep.points)


def test_a_curve_that_never_meets_the_target_has_no_cheapest_k():
    sweep = sweep_of([value / 2 for value in CURVE], entries_per_query=16)
    assert sweep.cheapest_meeting_target is None


def test_an_unscored_run_has_no_points_and_says_so():
    run = Run(name="late", entry_count=10, query_count=1)
    sweep = depth_sweep(run, Version(number=2, k_first=10, k_final=3), GoldenSet(), Evaluation(status=Evaluation.Status.PENDING))
    assert sweep.points == [] and sweep.note == "late is not scored on v2 yet."


def test_a_runs_depth_is_its_entries_over_the_queries_it_answers_rounded_up():
    assert run_depth(Run(entry_count=95, query_count=10, answered_query_count=10)) == 10
    assert run_depth(Run(entry_count=0, query_count=0)) == 0


def test_the_chart_marks_k_final_the_knee_and_the_target_and_takes_overlays():
    from lib import charts

    sweep = sweep_of(CURVE, entries_per_query=16)
    overlay = charts.Series(label="answer accuracy", points=[(8, 0.7, "accuracy")], color=charts.color(1), dots=True)
    chart = sweep_chart(sweep, [overlay])
    labels = [rule.label for rule in chart.rules]
    assert labels == ["0.80 target", "k_final 8", "knee 4", "0.80 at 6"]
    assert [line.label for line in chart.lines] == ["recall@k of reranked", "answer accuracy"]
