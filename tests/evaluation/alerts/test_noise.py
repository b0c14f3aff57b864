"""Noise-aware drops: evaluation.alerts.noise against independent calculations (scipy's
ttest_rel, statsmodels' power), and the drop rules' use of it on the alerting set (20
queries, 4 of them German; k_first 3, k_final 1): a drop within noise is stored and never
sent, a slice of 4 queries is compared, an old baseline falls back to the plain threshold,
and uploaded series runs get the night rules."""

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.core import mail
from django.urls import reverse
from scipy import stats
from statsmodels.stats.power import TTestPower

from evaluation.alerts import noise
from evaluation.alerts.rules import alerts_check
from evaluation.alerts.slice_power import slice_power
from evaluation.forms import EvaluationSettingsForm
from evaluation.models import Alert, Evaluation
from evaluation.selectors import PerQuery, evaluation_per_query, evaluation_settings
from evaluation.services import run_import
from evaluation.settings_service import evaluation_settings_update
from goldenset.services import version_publish
from lib.errors import GoldsetError
from lib.runs import npz_bytes
from tests.support.factories import ALERTING_QUERIES as QUERIES
from tests.support.factories import GERMAN, alerting_run_lines
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

# --- the statistics ---------------------------------------------------------------------


def test_the_p_value_is_scipys_one_sided_paired_t_test():
    rng = np.random.default_rng(1)
    baseline = rng.random(50)
    tonight = baseline - 0.01 + rng.normal(0, 0.05, 50)
    test = noise.paired_drop_test(baseline, tonight)
    assert test.p_value == pytest.approx(stats.ttest_rel(baseline, tonight, alternative="greater").pvalue)
    assert test.drop == pytest.approx(np.mean(baseline - tonight))
    assert test.queries == 50


def test_many_zero_differences_give_the_t_tests_p_value_by_hand():
    # One query of twenty loses its page: mean 0.05, sd sqrt(0.05), t = 1 on 19 df.
    baseline, tonight = np.ones(20), np.r_[0.0, np.ones(19)]
    test = noise.paired_drop_test(baseline, tonight)
    assert (test.drop, test.sd) == pytest.approx((0.05, math.sqrt(0.05)))
    assert test.p_value == pytest.approx(stats.t.sf(1.0, df=19))


def test_every_query_moving_by_the_same_amount_is_certain_and_no_move_is_not():
    assert noise.paired_drop_test(np.full(5, 0.8), np.full(5, 0.7)).p_value == 0.0
    assert noise.paired_drop_test(np.full(5, 0.7), np.full(5, 0.8)).p_value == 1.0
    assert noise.paired_drop_test(np.full(5, 0.7), np.full(5, 0.7)).p_value == 1.0


def test_one_query_cannot_be_told_from_chance():
    test = noise.paired_drop_test(np.array([1.0]), np.array([0.0]))
    assert (test.queries, test.p_value) == (1, 1.0)
    assert noise.detectable_drop(0.3, 1, alpha=0.05, power=0.8) is None


@pytest.mark.parametrize("queries", [2, 5, 20, 30, 150, 1000])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 8, 0.001])
def test_the_detectable_drop_is_statsmodels_power_solution(queries, alpha):
    expected = TTestPower().solve_power(nobs=queries, alpha=alpha, power=0.8, alternative="larger") * 0.2
    assert noise.detectable_drop(0.2, queries, alpha=alpha, power=0.8) == pytest.approx(expected, rel=1e-4)


def test_the_closed_form_approximation_is_within_a_few_percent_from_thirty_queries():
    for queries in (30, 100, 500):
        df = queries - 1
        approximate = (stats.t.isf(0.00625, df) + stats.t.ppf(0.8, df)) * 0.2 / math.sqrt(queries)
        assert noise.detectable_drop(0.2, queries, alpha=0.00625, power=0.8) == pytest.approx(approximate, rel=0.03)


def test_a_spread_of_zero_detects_any_drop():
    assert noise.detectable_drop(0.0, 30, alpha=0.05, power=0.8) == 0.0
    assert noise.queries_needed(0.0, 0.03, alpha=0.05, power=0.8) is None


@pytest.mark.parametrize(("sd", "drop"), [(0.2, 0.03), (0.1, 0.03), (0.35, 0.05), (0.05, 0.03)])
def test_the_queries_needed_are_the_fewest_that_detect_the_drop(sd, drop):
    alpha = 0.05 / 10
    needed = noise.queries_needed(sd, drop, alpha=alpha, power=0.8)
    assert noise.detectable_drop(sd, needed, alpha=alpha, power=0.8) <= drop
    if needed > 2:
        assert noise.detectable_drop(sd, needed - 1, alpha=alpha, power=0.8) > drop
    oracle = TTestPower().solve_power(effect_size=drop / sd, alpha=alpha, power=0.8, alternative="larger")
    assert needed == math.ceil(oracle - 1e-6)


def test_bonferroni_divides_alpha_among_a_nights_comparisons():
    assert noise.comparisons(4, 2) == 8
    assert noise.corrected_alpha(0.05, 8) == pytest.approx(0.00625)
    assert noise.corrected_alpha(0.05, 0) == 0.05


# --- the per-query blob -----------------------------------------------------------------


def test_an_evaluation_stored_before_slices_were_kept_reads_with_none(golden_set):
    old = npz_bytes(
        {
            "query_ids": np.frombuffer(b"q1\nq2", dtype=np.uint8),
            "answered": np.array([True, True]),
            "relevant_counts": np.array([1, 1]),
            "metric:recall@3": np.array([1.0, 0.5]),
        }
    )
    per_query = PerQuery.from_bytes(old)
    assert per_query.slices == {}
    assert per_query.slice_values("query:lang=de", "recall@3") is None
    assert per_query.slice_values("", "recall@3")[0] == ("q1", "q2")


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set")
def test_every_slices_queries_are_stored_with_the_evaluation(golden_set):
    version = version_publish(golden_set=golden_set, note="v1")
    per_query = evaluation_per_query(evaluate(upload(golden_set, "monday", ranks={"q17": 4}), version))
    ids, values = per_query.slice_values("query:lang=de", "recall@3")
    assert ids == tuple(GERMAN)
    assert values.tolist() == [0.0, 1.0, 1.0, 1.0]
    assert PerQuery.from_bytes(per_query.to_bytes()).slice_values("query:lang=de", "recall@3")[0] == tuple(GERMAN)


# --- the drop rules ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set")
def test_a_drop_within_noise_is_stored_and_never_sent(golden_set, django_capture_on_commit_callbacks):
    evaluation_settings_update(golden_set=golden_set, user=None, alert_emails=["oncall@example.com"])
    with django_capture_on_commit_callbacks(execute=True):
        version_publish(golden_set=golden_set, note="v1")
        upload(golden_set, "monday")
    with django_capture_on_commit_callbacks(execute=True):
        tuesday = upload(golden_set, "tuesday", ranks={"q1": 2})  # one query of twenty: 5 points
    alert = Alert.objects.get(run=tuesday)
    assert (alert.kind, alert.within_noise, alert.queries_compared) == (Alert.Kind.DROP_VS_RUN, True, 20)
    assert "within noise: p = 0.16, this slice detects drops of" in alert.message
    assert alert.detectable_points > 5
    assert (mail.outbox, alert.incident, alert.incident_message, list(alert.webhook_deliveries.all())) == ([], None, None, [])


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set")
def test_a_baseline_without_per_query_values_falls_back_to_the_plain_threshold_and_says_so(golden_set):
    version = version_publish(golden_set=golden_set, note="v1")
    monday = evaluate(upload(golden_set, "monday"), version)
    Evaluation.objects.filter(pk=monday.pk).update(per_query=None)  # as evaluations stored long ago
    [alert] = alerts_check(evaluation=evaluate(upload(golden_set, "tuesday", ranks={"q1": 2}), version))
    assert not alert.within_noise and alert.p_value is None
    assert alert.message.endswith("no per-query values stored for the baseline (an older evaluation), so the plain threshold decided")


def upload_night(golden_set, number: int, ranks: dict | None = None):
    """A night uploaded as `import_run --series --measured-at` does, scored and checked."""
    run = run_import(
        golden_set=golden_set,
        lines=alerting_run_lines(ranks),
        source_name=f"night{number}.run",
        system="bm25",
        stage="first_stage",
        name=f"night {number}",
        series="bm25 nightly",
        measured_at=datetime(2026, 11, 1, 2, tzinfo=UTC) + timedelta(days=number),
    )
    return alerts_check(evaluation=evaluate(run, run.golden_set.versions.get()))


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set")
def test_an_uploaded_series_run_gets_the_night_rules_and_a_slice_of_four_queries_is_compared(golden_set):
    version_publish(golden_set=golden_set, note="v1")
    assert upload_night(golden_set, 1) == []
    # Every German query loses its page (4 queries, under min_queries_per_slice = 30): a
    # drop no chance explains; the English queries did not move.
    alerts = upload_night(golden_set, 2, ranks={q: 4 for q in GERMAN})
    by_where = {(a.kind, a.metric, a.slice): a for a in alerts}
    german = by_where[(Alert.Kind.DROP_VS_PREVIOUS_NIGHT, "recall@3", "query:lang=de")]
    assert (german.within_noise, german.p_value, german.queries_compared) == (False, 0.0, 4)
    # Overall, 4 of 20 queries: 20 points, and significant at 0.05 over the night's 8 comparisons.
    overall = by_where[(Alert.Kind.DROP_VS_PREVIOUS_NIGHT, "recall@3", "")]
    assert overall.p_value == pytest.approx(stats.ttest_rel(np.ones(20), np.r_[np.ones(16), np.zeros(4)], alternative="greater").pvalue)
    assert overall.within_noise == (overall.p_value > 0.05 / 8)


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set")
def test_the_pages_detectable_drop_of_an_uploaded_run_assumes_two_independent_runs(golden_set):
    version = version_publish(golden_set=golden_set, note="v1")
    evaluation = evaluate(upload(golden_set, "monday", ranks={q: 4 for q in QUERIES[:5]}), version)
    shown = slice_power(evaluation)
    values = np.r_[np.zeros(5), np.ones(15)]
    alpha = 0.05 / (2 * (2 + 2))  # two recalls overall, two language slices, two baselines
    expected = TTestPower().solve_power(nobs=20, alpha=alpha, power=0.8, alternative="larger") * values.std(ddof=1) * math.sqrt(2)
    assert shown[""].paired is False
    assert shown[""].detectable_points == pytest.approx(expected * 100, rel=1e-4)
    assert shown[""].underpowered and shown[""].needed > 20
    assert shown["query:lang=de"].queries == 4


# --- the settings -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("field", "value"), [("alert_alpha", 0), ("alert_alpha", 5), ("alert_power", 1), ("alert_power", 80)])
def test_alpha_and_power_outside_zero_to_one_are_refused_naming_the_field(golden_set, field, value):
    with pytest.raises(GoldsetError) as refused:
        evaluation_settings_update(golden_set=golden_set, user=None, **{field: value})
    assert refused.value.field == field
    assert any(f"{field} is a fraction strictly between 0 and 1" in problem for problem in refused.value.problems)


@pytest.mark.django_db
@pytest.mark.golden_set(factory="alerting_set", manager="owner")
def test_a_manager_sets_alpha_and_power_on_the_settings_page(client, owner, golden_set):
    client.force_login(owner)
    url = reverse("evaluation_settings", args=[golden_set.slug])
    data = {k: v for k, v in EvaluationSettingsForm.initial_from(evaluation_settings(golden_set)).items() if v is not None}
    client.post(url, {**data, "alert_alpha": "0.01", "alert_power": "0.9"})
    saved = evaluation_settings(golden_set)
    assert (saved.alert_alpha, saved.alert_power) == (0.01, 0.9)
    page = client.post(url, {**data, "alert_alpha": "5"}).content.decode()
    assert "alert_alpha is a fraction strictly between 0 and 1 (0.05, not 5), got 5" in page
    assert evaluation_settings(golden_set).alert_alpha == 0.01
