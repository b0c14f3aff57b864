"""Drawing a golden set's queries from a query log with known weights (traffic.sampling).

The log's LoggedQuery rows are made directly (the importer is traffic.logs'): 40 distinct
queries "query N" with a Zipf-like count 1000 // N and a language field (en for N under 25,
de else); the tiny set holds three queries "question qN", one of which the log also holds.
"""

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from goldenset.models import Query
from lib.errors import GoldsetError
from tests.support import factories
from traffic import designs
from traffic.models import DrawnQuery, LoggedQuery, QueryDraw, QueryLog
from traffic.normalizing import query_merge_key
from traffic.sampling import draw_queries, draw_top_up, queries_to_detect

pytestmark = pytest.mark.django_db

QUERIES = 40


def make_log(golden_set, name="prod", queries=QUERIES, texts=None):
    log = QueryLog.objects.create(golden_set=golden_set, name=name, fields=["lang"], query_count=queries)
    texts = texts or [f"Query  {n}" for n in range(1, queries + 1)]
    rows = [
        LoggedQuery(log=log, normalized=query_merge_key(text), text=text, count=1000 // n, fields={"lang": "en" if n < 25 else "de"})
        for n, text in enumerate(texts, start=1)
    ]
    LoggedQuery.objects.bulk_create(rows)
    log.event_count = sum(row.count for row in rows)
    log.save()
    return log


@pytest.fixture
def golden_set():
    golden_set = factories.golden_set()
    make_log(golden_set)
    return golden_set


def drawn(golden_set):
    return Query.objects.filter(golden_set=golden_set, inclusion_probability__isnull=False)


# --- the designs -------------------------------------------------------------------------


def test_pps_probabilities_sum_to_the_size_and_take_the_largest_for_certain():
    counts = np.array([1000, 500, 10, 10, 10, 5, 5, 1, 1, 1], dtype=float)
    pi = designs.pps_probabilities(counts, 4)
    assert pi.sum() == pytest.approx(4)
    assert pi[0] == pi[1] == 1.0
    assert pi[2] == pytest.approx(2 * 10 / 43)


@pytest.mark.parametrize("design", ["srs", "stratified", "pps"])
def test_each_units_frequency_over_many_seeds_matches_its_inclusion_probability(design):
    counts = np.array([400, 200, 90, 60, 50, 40, 30, 20, 20, 10, 10, 5, 5, 3, 2, 1, 1, 1], dtype=float)
    strata = designs.traffic_strata(counts)
    size, rounds = 6, 4000
    hits = np.zeros(len(counts))
    for seed in range(rounds):
        rng = np.random.default_rng(seed)
        if design == "srs":
            result = designs.srs_draw(len(counts), size, rng)
        elif design == "pps":
            result = designs.pps_draw(counts, size, rng)
        else:
            result, _ = designs.stratified_draw(strata, size, rng, counts=counts)
        assert len(result.chosen) == len(set(result.chosen.tolist())) == size
        assert result.pi.sum() == pytest.approx(size)
        hits[result.chosen] += 1
    # Within 4 binomial standard errors of pi, unit by unit.
    spread = 4 * np.sqrt(result.pi * (1 - result.pi) / rounds) + 1e-9
    assert np.all(np.abs(hits / rounds - result.pi) <= spread)


def test_head_torso_and_tail_are_cut_at_half_and_four_fifths_of_the_events():
    assert designs.traffic_strata(np.array([50, 20, 10, 10, 5, 5])) == ["head", "torso", "torso", "tail", "tail", "tail"]


def test_allocation_gives_each_stratum_one_then_the_rest_in_proportion():
    assert designs.allocate(10, [80, 15, 5], [80, 15, 5]) == [8, 1, 1]
    assert designs.allocate(10, [1, 1], [2, 50]) == [2, 8]


# --- drawing into the set ------------------------------------------------------------


def test_a_simple_random_draw_adds_its_queries_with_pi_n_over_big_n(golden_set):
    draw = draw_queries(golden_set=golden_set, log_name="prod", size=10, design="srs", seed=7)
    assert draw.added_count + draw.marked_count == 10
    assert drawn(golden_set).count() == 10
    assert {q.inclusion_probability for q in drawn(golden_set)} == {10 / QUERIES}
    query = drawn(golden_set).first()
    logged = LoggedQuery.objects.get(log__name="prod", normalized=query_merge_key(query.text))
    assert query.traffic_count == logged.count and query.metadata == {"lang": logged.fields["lang"]}
    assert query.query_id.startswith("log-") and DrawnQuery.objects.filter(draw=draw).count() == 10
    assert draw.strata == {"": {"population": QUERIES, "drawn": 10, "events": sum(1000 // n for n in range(1, QUERIES + 1))}}


def test_the_same_seed_draws_the_same_queries_and_another_seed_others(golden_set):
    first = draw_queries(golden_set=golden_set, log_name="prod", size=8, design="pps", seed=3)
    again = draw_queries(golden_set=golden_set, log_name="prod", size=8, design="pps", seed=3)
    other = draw_queries(golden_set=golden_set, log_name="prod", size=8, design="pps", seed=4)

    def picked(draw):
        return sorted(DrawnQuery.objects.filter(draw=draw).values_list("logged_query_id", flat=True))

    assert picked(first) == picked(again) != picked(other)
    assert again.added_count == 0 and again.marked_count == 8
    # The set's weighted sample is the latest draw's.
    assert sorted(drawn(golden_set).values_list("pk", flat=True)) == sorted(
        DrawnQuery.objects.filter(draw=other).values_list("query_id", flat=True)
    )


def test_a_query_the_set_holds_already_is_marked_drawn_not_added_twice():
    golden_set = factories.golden_set()
    held = Query.objects.get(golden_set=golden_set, query_id="q1")
    make_log(golden_set, queries=3, texts=["  QUESTION   q1 ", "other one", "third"])
    draw = draw_queries(golden_set=golden_set, log_name="prod", size=3, design="srs", seed=1)
    assert (draw.added_count, draw.marked_count) == (2, 1)
    held.refresh_from_db()
    assert held.inclusion_probability == 1.0 and held.traffic_count == 1000 and held.query_id == "q1"
    assert Query.objects.filter(golden_set=golden_set).count() == 5


def test_a_stratified_draw_by_field_keeps_each_querys_stratum_and_n_h_over_big_n_h(golden_set):
    draw = draw_queries(golden_set=golden_set, log_name="prod", size=10, design="stratified", strata_field="lang", seed=5)
    assert draw.strata == {
        "de": {"population": 16, "drawn": 4, "events": sum(1000 // n for n in range(25, 41))},
        "en": {"population": 24, "drawn": 6, "events": sum(1000 // n for n in range(1, 25))},
    }
    for query in drawn(golden_set):
        assert query.stratum == query.metadata["lang"]
        assert query.inclusion_probability == pytest.approx({"de": 4 / 16, "en": 6 / 24}[query.stratum])


def test_a_stratified_draw_by_traffic_can_allocate_by_events(golden_set):
    draw = draw_queries(
        golden_set=golden_set, log_name="prod", size=12, design="stratified", strata_field="traffic", allocation="events", seed=5
    )
    assert set(draw.strata) == {"head", "torso", "tail"}
    assert sum(row["drawn"] for row in draw.strata.values()) == 12
    assert draw.target == {"allocation": "events"}
    sums = {}
    for query in drawn(golden_set):
        sums[query.stratum] = sums.get(query.stratum, 0) + 1 / query.inclusion_probability
    assert sums == {name: pytest.approx(row["population"]) for name, row in draw.strata.items() if row["drawn"]}


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"log_name": "nope"}, "log"),
        ({"strata_field": "country"}, "strata"),
        ({"design": "cluster"}, "design"),
        ({"size": QUERIES + 1}, "size"),
        ({"size": 0}, "size"),
        ({"seed": -1}, "seed"),
        ({"allocation": "equal"}, "allocation"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(golden_set, arguments, field):
    given = {"log_name": "prod", "size": 5, "design": "stratified", "strata_field": "lang", "seed": 1, **arguments}
    with pytest.raises(GoldsetError) as caught:
        draw_queries(golden_set=golden_set, **given)
    assert caught.value.field == field and field in str(caught.value)
    assert not QueryDraw.objects.exists() and Query.objects.filter(golden_set=golden_set).count() == 3


# --- top-ups ------------------------------------------------------------------------


def test_a_top_up_draws_more_of_a_stratum_and_sets_n_h_total_over_big_n_h(golden_set):
    base = draw_queries(golden_set=golden_set, log_name="prod", size=10, design="stratified", strata_field="lang", seed=5)
    before = set(DrawnQuery.objects.filter(draw=base, stratum="de").values_list("logged_query_id", flat=True))
    top_up = draw_top_up(golden_set=golden_set, log_name="prod", stratum="de", to=10, seed=9)
    added = set(DrawnQuery.objects.filter(draw=top_up).values_list("logged_query_id", flat=True))
    assert top_up.size == 6 and len(added) == 6 and not added & before
    assert top_up.target == {"stratum": "de", "queries": 10}
    german = drawn(golden_set).filter(stratum="de")
    assert german.count() == 10 and {q.inclusion_probability for q in german} == {10 / 16}
    assert {q.inclusion_probability for q in drawn(golden_set).filter(stratum="en")} == {6 / 24}


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"stratum": "fr", "to": 5}, "top_up"),
        ({"stratum": "de", "to": 3}, "to"),
        ({"stratum": "de", "to": 17}, "to"),
        ({"stratum": "de"}, "to"),
    ],
)
def test_a_bad_top_up_is_refused_and_changes_nothing(golden_set, arguments, field):
    draw_queries(golden_set=golden_set, log_name="prod", size=10, design="stratified", strata_field="lang", seed=5)
    with pytest.raises(GoldsetError) as caught:
        draw_top_up(golden_set=golden_set, log_name="prod", seed=1, **arguments)
    assert caught.value.field == field
    assert QueryDraw.objects.count() == 1 and drawn(golden_set).count() == 10


def test_a_pps_draw_is_not_topped_up(golden_set):
    draw_queries(golden_set=golden_set, log_name="prod", size=5, design="pps", seed=5)
    with pytest.raises(GoldsetError, match="PPS"):
        draw_top_up(golden_set=golden_set, log_name="prod", stratum="", to=8, seed=1)


# --- the command --------------------------------------------------------------------


def test_the_command_draws_and_says_what_it_did(golden_set):
    out = io.StringIO()
    call_command(
        "sample_queries",
        "tiny",
        "--from-log",
        "prod",
        "--size",
        "6",
        "--design",
        "stratified",
        "--strata",
        "traffic",
        "--seed",
        "2",
        stdout=out,
    )
    assert "drew 6 queries" in out.getvalue() and "head:" in out.getvalue()
    call_command("sample_queries", "tiny", "--from-log", "prod", "--top-up", "tail", "--to", "5", "--seed", "3", stdout=out)
    assert drawn(golden_set).filter(stratum="tail").count() == 5


def test_the_command_refuses_an_unknown_log_by_name(golden_set):
    with pytest.raises(CommandError, match="no query log 'nope'"):
        call_command("sample_queries", "tiny", "--from-log", "nope", "--size", "6", "--design", "srs", "--seed", "2")


def test_a_top_up_to_a_detectable_drop_draws_as_many_as_the_noise_rule_needs(owner):
    golden_set = factories.sliced_set(manager=owner, queries=30, langs=2)
    # The set's 30 questions and 30 others, half in each language: a draw marks the set's.
    texts = [f"question {n}" for n in range(1, 31)] + [f"other {n}" for n in range(1, 31)]
    log = QueryLog.objects.create(golden_set=golden_set, name="prod", fields=["lang"])
    LoggedQuery.objects.bulk_create(
        LoggedQuery(log=log, normalized=query_merge_key(text), text=text, count=10 + n, fields={"lang": f"l{n % 2}"})
        for n, text in enumerate(texts)
    )
    draw_queries(golden_set=golden_set, log_name="prod", size=30, design="stratified", strata_field="lang", seed=3)
    needed = queries_to_detect(golden_set, "l0", 60)
    held = drawn(golden_set).filter(stratum="l0").count()
    assert held < needed <= 30
    top_up = draw_top_up(golden_set=golden_set, log_name="prod", stratum="l0", to_detect=60, seed=2)
    assert top_up.target == {"stratum": "l0", "queries": needed, "detectable_points": 60}
    assert drawn(golden_set).filter(stratum="l0").count() == needed
    assert {q.inclusion_probability for q in drawn(golden_set).filter(stratum="l0")} == {needed / 30}


def test_a_top_up_to_a_detectable_drop_needs_an_evaluation(golden_set):
    draw_queries(golden_set=golden_set, log_name="prod", size=10, design="stratified", strata_field="lang", seed=5)
    with pytest.raises(GoldsetError, match="no finished evaluation") as caught:
        draw_top_up(golden_set=golden_set, log_name="prod", stratum="de", to_detect=5, seed=1)
    assert caught.value.field == "to_detect"
