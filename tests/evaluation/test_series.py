"""Series runs: nights that score like their files, night alerts that compare like with like,
re-scoring of the recent nights only, and retention that keeps every score."""

from datetime import UTC, datetime, timedelta

import pytest

from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert, Evaluation, Run, RunData, Score
from evaluation.retention import series_entries_thin
from evaluation.services import (
    evaluation_compute,
    evaluations_missing_create,
    evaluations_schedule,
    run_from_rankings,
    run_import,
    series_for,
)
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import Page, Query
from goldenset.services import judgment_record, version_publish
from tests.support import factories

QUERIES = [f"q{n}" for n in range(1, 11)]
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        "nightly",
        qrels={(f"q{n}", f"d{n}{side}"): 1 for n in range(1, 11) for side in "ab"},
        pages=factories.pages(*[f"d{n}{side}" for n in range(1, 11) for side in "ab"], *[f"x{n}" for n in range(1, 21)]),
        queries=factories.queries(*QUERIES, lang="en"),
        k_first=10,
        k_final=3,
        query_slice_fields=["lang"],
    ),
]
NIGHT_ONE = datetime(2026, 11, 1, 2, tzinfo=UTC)


@pytest.fixture
def golden_set(golden_set):
    """The marker's set, published as v1."""
    version_publish(golden_set=golden_set, note="v1")
    return golden_set


def rankings(found_both: int) -> list[tuple[str, list[tuple[str, float]]]]:
    """Every query ranks its page a first; the first `found_both` queries rank page b second."""
    result = []
    for n, query_id in enumerate(QUERIES, start=1):
        docs = [f"d{n}a"] + ([f"d{n}b"] if n <= found_both else []) + [f"x{i}" for i in range(1, 9)]
        result.append((query_id, [(doc, 10.0 - rank) for rank, doc in enumerate(docs)]))
    return result


def night(golden_set, number: int, found_both: int, *, failures=(), index_size=None, series_name="prod nightly") -> Run:
    """A night of the series, scored on the latest version and checked for alerts, as the
    task its upload sends on commit would (the test's transaction never commits)."""
    series = series_for(golden_set=golden_set, name=series_name)
    run = run_from_rankings(
        golden_set=golden_set,
        rankings=rankings(found_both),
        source_name="http://search/",
        system="prod",
        stage="first_stage",
        name=f"{series_name} {number}",
        series=series,
        measured_at=NIGHT_ONE + timedelta(days=number),
        failures=failures,
        index_size=index_size,
    )
    score(run)
    return run


def publish_changed(golden_set, annotator):
    """A new version: one more label (a publish refuses when nothing changed)."""
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    judgment_record(query=query, page=Page.objects.get(doc_id="x8"), grade=0, annotator=annotator)
    return version_publish(golden_set=golden_set, note="one more label")


def score(run: Run) -> None:
    alerts_check(evaluation=evaluation_compute(run=run, version=run.golden_set.latest_version()))


def test_a_night_scores_exactly_as_the_same_rankings_uploaded_as_a_trec_file(golden_set):
    from_endpoint = night(golden_set, 1, found_both=4)
    lines = [f"{q} Q0 {doc} {rank} {score} prod\n" for q, ranking in rankings(4) for rank, (doc, score) in enumerate(ranking, 1)]
    uploaded = run_import(golden_set=golden_set, lines=lines, source_name="prod.trec", system="prod", stage="first_stage", name="file")
    score(uploaded)

    def scores(run):
        evaluation = Evaluation.objects.get(run=run)
        return sorted(Score.objects.filter(evaluation=evaluation).values_list("slice", "metric", "value"))

    assert scores(from_endpoint) == scores(uploaded)
    assert dict((m, v) for _, m, v in scores(from_endpoint))["recall@10"] == pytest.approx(0.7)


def test_a_drop_against_the_previous_night_is_raised_with_the_index_growth(golden_set):
    for number in range(1, 8):
        night(golden_set, number, found_both=10, index_size=1_200_000)
    dropped = night(golden_set, 8, found_both=4, index_size=1_500_000)
    kinds = {a.kind: a for a in Alert.objects.filter(run=dropped, slice="", metric="recall@10")}
    overnight = kinds[Alert.Kind.DROP_VS_PREVIOUS_NIGHT]
    assert (overnight.value, overnight.reference) == (pytest.approx(0.7), pytest.approx(1.0))
    assert "dropped 30.0 points overnight" in overnight.message
    assert "after the index grew from 1.2M to 1.5M documents" in overnight.message
    # The same drop is not said twice: the median alert is for a slow slide.
    assert Alert.Kind.DROP_VS_MEDIAN not in kinds
    # Night rules replace the upload-order rule for series runs: no DROP_VS_RUN twin.
    assert not Alert.objects.filter(kind=Alert.Kind.DROP_VS_RUN).exists()


def test_a_slow_slide_under_the_7_night_median_is_raised_where_no_night_dropped_much(golden_set):
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=6.0)
    for number, found in enumerate([10, 10, 10, 10, 9], start=1):
        night(golden_set, number, found_both=found)  # 1.0 four nights, then 0.95: 5 points, under 6
    assert not Alert.objects.exists()
    slid = night(golden_set, 6, found_both=8)  # 0.90: 5 under last night, 10 under the median of 1.0
    [alert] = Alert.objects.filter(run=slid, slice="", metric="recall@10")
    assert (alert.kind, alert.value, alert.reference) == (Alert.Kind.DROP_VS_MEDIAN, pytest.approx(0.9), pytest.approx(1.0))
    assert "10.0 points under its 5-night median" in alert.message


def test_a_slice_under_the_floor_is_raised_the_night_it_falls_there_not_every_night_after(golden_set):
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=100.0)  # drops aside
    night(golden_set, 1, found_both=10)
    # recall@10 of 0.5 on every query: under the 0.75 floor in every slice and overall.
    fallen = [night(golden_set, n, found_both=0) for n in (2, 3, 4)]
    floors = Alert.objects.filter(kind=Alert.Kind.SLICE_UNDER_FLOOR)
    assert floors.exists() and set(floors.values_list("run", flat=True)) == {fallen[0].pk}
    night(golden_set, 5, found_both=10)
    again = night(golden_set, 6, found_both=0)  # back under after a healthy night: a new incident
    assert floors.filter(run=again).exists()


def test_a_drop_of_exactly_the_threshold_raises_nothing_and_a_night_alone_compares_with_nothing(golden_set):
    night(golden_set, 1, found_both=10)
    assert not Alert.objects.exists()
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=5.0)
    night(golden_set, 2, found_both=9)  # 5.0 points under: not over
    assert not Alert.objects.filter(kind=Alert.Kind.DROP_VS_PREVIOUS_NIGHT).exists()


def test_a_night_with_too_many_failed_queries_raises_no_recall_alert_and_is_no_baseline(golden_set):
    for number in range(1, 4):
        night(golden_set, number, found_both=10)
    failing = night(golden_set, 4, found_both=0, failures=[("q9", "HTTP 500 after 3 attempts", 500)] * 1)
    assert failing.failed_query_count == 1 and failing.failed_share == pytest.approx(1 / 11)
    assert not Alert.objects.filter(run=failing).exists()
    # The next healthy night compares with night 3, not with the failing night 4.
    healthy = night(golden_set, 5, found_both=10)
    assert not Alert.objects.filter(run=healthy).exists()


def test_the_failures_of_a_night_are_recorded_with_their_errors(golden_set):
    run = night(golden_set, 1, found_both=10, failures=[("q9", "no answer within 10.0 s (3 attempts)", None)])
    assert list(run.failures.values_list("query_id", "error", "status")) == [("q9", "no answer within 10.0 s (3 attempts)", None)]


def test_a_night_is_compared_on_its_own_version_whatever_order_the_scores_finish_in(golden_set, make_user):
    """A publish re-scores the recent nights in any order: a night scored before the nights
    it is compared with is checked again from theirs (the rule looks both ways)."""
    runs = [night(golden_set, n, found_both=10) for n in range(1, 5)] + [night(golden_set, 5, found_both=4)]
    v2 = publish_changed(golden_set, make_user("judge"))
    Alert.objects.all().delete()
    for run in reversed(runs):  # the dropped night first
        alerts_check(evaluation=evaluation_compute(run=run, version=v2))
    assert Alert.objects.filter(run=runs[-1], version=v2, kind=Alert.Kind.DROP_VS_PREVIOUS_NIGHT, slice="").exists()


def test_a_new_version_rescores_only_the_recent_nights_of_a_series(golden_set, make_user):
    evaluation_settings_update(golden_set=golden_set, user=None, series_rescore_nights=3)
    runs = [night(golden_set, n, found_both=10) for n in range(1, 7)]
    plain = factories.run(golden_set, "adhoc", {"q1": ["d1a"]})
    v2 = publish_changed(golden_set, make_user("judge"))
    rescored = {evaluation.run_id for evaluation in evaluations_schedule(version=v2)}
    assert rescored == {run.pk for run in runs[-3:]} | {plain.pk}


def test_the_sweeper_makes_no_evaluation_of_a_night_past_rescoring(golden_set, make_user):
    evaluation_settings_update(golden_set=golden_set, user=None, series_rescore_nights=2)
    runs = [night(golden_set, n, found_both=10) for n in range(1, 5)]
    v2 = publish_changed(golden_set, make_user("judge"))  # its fan-out task never ran: the sweeper finds the pairs
    evaluations_missing_create()
    assert set(Evaluation.objects.filter(version=v2).values_list("run_id", flat=True)) == {runs[-2].pk, runs[-1].pk}


def test_retention_keeps_every_score_and_one_night_a_week_whole(golden_set, make_user):
    evaluation_settings_update(golden_set=golden_set, user=None, series_keep_days=30)
    runs = [night(golden_set, n, found_both=10) for n in range(0, 21)]  # 2026-11-01 .. 2026-11-21
    scores_before = Score.objects.count()
    dropped = series_entries_thin(now=NIGHT_ONE + timedelta(days=45))  # nights before 2026-11-15 are old
    old = [run for run in runs if run.measured_at < NIGHT_ONE + timedelta(days=15)]
    kept = [run for run in old if RunData.objects.filter(run=run).exists()]
    # One a week: 2026-11-01 is a Sunday (its ISO week's last day), then the Mondays 11-02 and 11-09.
    assert [run.measured_at.date().isoformat() for run in kept] == ["2026-11-01", "2026-11-02", "2026-11-09"]
    assert dropped == len(old) - len(kept)
    assert Score.objects.count() == scores_before
    assert series_entries_thin(now=NIGHT_ONE + timedelta(days=45)) == 0  # nothing twice
    v2 = publish_changed(golden_set, make_user("judge"))
    assert {e.run_id for e in evaluations_schedule(version=v2)}.isdisjoint(run.pk for run in old if run not in kept)


def test_the_leaderboard_shows_a_series_by_its_latest_night(golden_set, client, make_user):
    from evaluation.reports.results import results_report

    runs = [night(golden_set, n, found_both=10) for n in range(1, 4)]
    report = results_report(golden_set, golden_set.latest_version())
    assert [result.run.pk for result in report.results] == [runs[-1].pk]
