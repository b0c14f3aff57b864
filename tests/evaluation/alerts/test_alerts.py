"""Alerts: each rule at its threshold and idempotence (their delivery: test_incident_messages.py).

The data is made through the real services: a set of 20 queries (16 in English, 4 in
German, one relevant page each), k_first = 3 and k_final = 1, so one query moving its
relevant page out of the top k moves an overall recall by exactly 5 points. Tests that do
not say otherwise evaluate by calling the services; the test transaction's on-commit
callbacks (the evaluation tasks) are dropped unless a test captures and runs them.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from scipy import stats as scipy_stats

from evaluation.alerts.delivery import delivery_backoff_seconds
from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert
from evaluation.services import evaluation_fail
from evaluation.settings_service import evaluation_settings_update
from evaluation.tasks import evaluate_run_task
from goldenset.models import Membership
from goldenset.services import membership_grant, qrels_import, version_publish
from tests.support.factories import ALERTING_QUERIES as QUERIES
from tests.support.factories import GERMAN
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set(factory="alerting_set")]


def kinds(alerts) -> list[tuple[str, str, str]]:
    return [(alert.kind, alert.metric, alert.slice) for alert in alerts]


@pytest.fixture
def v1(golden_set):
    return version_publish(golden_set=golden_set, note="first labels")


# --- drop against the system's previous run ---------------------------------------------


def test_a_drop_of_five_points_against_the_previous_run_raises_one_alert(golden_set, v1):
    evaluate(upload(golden_set, "monday"), v1)
    tuesday = upload(golden_set, "tuesday", ranks={"q1": 2})  # recall@1 1.00 -> 0.95; recall@3 stays 1.00
    alerts = alerts_check(evaluation=evaluate(tuesday, v1))

    assert kinds(alerts) == [(Alert.Kind.DROP_VS_RUN, "recall@1", "")]
    alert = alerts[0]
    assert (alert.run, alert.version, alert.golden_set) == (tuesday, v1, golden_set)
    assert (alert.value, alert.reference) == pytest.approx((0.95, 1.0))
    # One query of 20 losing its page is a drop past the threshold a paired test cannot tell
    # from chance: the alert is stored and shown, marked within noise, with the test's figures.
    assert alert.message == (
        'recall@1 of bm25 first_stage (run "tuesday") on alerting v1 dropped 5.0 points against the previous run "monday" (1.000 → 0.950)'
        "; within noise: p = 0.16, this slice detects drops of 14.8 points or more (not sent)"
    )
    assert (alert.within_noise, alert.queries_compared) == (True, 20)
    # Differences: one 1.0 and nineteen 0.0, mean 0.05, sd sqrt(0.05), so t = 1.0 on 19 df.
    assert alert.p_value == pytest.approx(scipy_stats.t.sf(1.0, df=19))


def test_a_drop_of_exactly_the_threshold_raises_nothing_and_just_over_it_one_alert(golden_set, v1):
    evaluate(upload(golden_set, "monday"), v1)
    tuesday = evaluate(upload(golden_set, "tuesday", ranks={"q1": 2}), v1)
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=5.0)
    assert alerts_check(evaluation=tuesday) == []
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=4.9)
    assert kinds(alerts_check(evaluation=tuesday)) == [(Alert.Kind.DROP_VS_RUN, "recall@1", "")]


def test_float_noise_does_not_turn_a_drop_equal_to_the_threshold_into_an_alert(golden_set, v1):
    # 0.80 - 0.70 is 0.10000000000000009 in floating point: not "more than 10 points".
    evaluate(upload(golden_set, "monday", ranks={q: 2 for q in QUERIES[:4]}), v1)
    tuesday = evaluate(upload(golden_set, "tuesday", ranks={q: 2 for q in QUERIES[:6]}), v1)
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=10.0)
    assert alerts_check(evaluation=tuesday) == []


def test_the_drop_against_the_previous_run_is_found_when_the_older_run_finishes_last(golden_set, v1):
    monday, tuesday = upload(golden_set, "monday"), upload(golden_set, "tuesday", ranks={"q1": 2})
    assert alerts_check(evaluation=evaluate(tuesday, v1)) == []  # monday not scored yet: nothing to compare
    alerts = alerts_check(evaluation=evaluate(monday, v1))
    assert [(a.run, a.kind) for a in alerts] == [(tuesday, Alert.Kind.DROP_VS_RUN)]


def test_runs_of_another_stage_or_system_are_not_the_previous_run(golden_set, v1):
    evaluate(upload(golden_set, "monday", system="dense"), v1)
    evaluate(upload(golden_set, "monday reranked", stage="reranked"), v1)
    tuesday = upload(golden_set, "tuesday", ranks={"q1": 2})
    assert alerts_check(evaluation=evaluate(tuesday, v1)) == []


# --- drop against the previous version --------------------------------------------------


def publish_more_relevant_pages(golden_set):
    """v2: q1 and q2 gain a second relevant page, x1, which every run ranks second."""
    qrels_import(golden_set_slug=golden_set.slug, lines=["q1 0 x1 1\n", "q2 0 x1 1\n"], source_name="more.qrels")
    return version_publish(golden_set=golden_set, note="x1 is relevant too")


def test_a_drop_against_the_previous_version_names_both_versions_and_the_label_change(golden_set, v1):
    run = upload(golden_set, "nightly")
    evaluate(run, v1)
    v2 = publish_more_relevant_pages(golden_set)  # recall@1 1.00 -> 0.95; recall@3 stays 1.00
    alerts = alerts_check(evaluation=evaluate(run, v2))

    assert kinds(alerts) == [(Alert.Kind.DROP_VS_VERSION, "recall@1", "")]
    assert (alerts[0].run, alerts[0].version) == (run, v2)
    assert (alerts[0].value, alerts[0].reference) == pytest.approx((0.95, 1.0))
    assert alerts[0].message == (
        'recall@1 of bm25 first_stage (run "nightly") on alerting v2 dropped 5.0 points against v1 '
        "(1.000 → 0.950); the labels changed between versions"
        "; within noise: p = 0.081, this slice detects drops of 10.2 points or more (not sent)"
    )


def test_a_drop_against_the_previous_version_at_the_threshold_raises_nothing(golden_set, v1):
    run = upload(golden_set, "nightly")
    evaluate(run, v1)
    v2 = publish_more_relevant_pages(golden_set)
    evaluation_settings_update(golden_set=golden_set, user=None, alert_drop_points=5.0)
    assert alerts_check(evaluation=evaluate(run, v2)) == []


def test_the_drop_against_the_previous_version_is_found_when_the_old_version_is_scored_last(golden_set, v1):
    run = upload(golden_set, "nightly")
    v2 = publish_more_relevant_pages(golden_set)
    assert alerts_check(evaluation=evaluate(run, v2)) == []
    alerts = alerts_check(evaluation=evaluate(run, v1))
    assert [(a.version, a.kind) for a in alerts] == [(v2, Alert.Kind.DROP_VS_VERSION)]


# --- slices under the floor -------------------------------------------------------------


def test_a_slice_under_the_floor_raises_one_alert(golden_set, v1):
    run = upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4})  # German recall@3: 0.50
    alerts = alerts_check(evaluation=evaluate(run, v1))

    assert kinds(alerts) == [(Alert.Kind.SLICE_UNDER_FLOOR, "recall@3", "query:lang=de")]
    assert (alerts[0].value, alerts[0].reference) == pytest.approx((0.5, 0.75))
    assert alerts[0].message == (
        'recall@3 of bm25 first_stage (run "nightly") on alerting v1 is 0.500 in slice query:lang=de (4 queries), under the floor of 0.750'
    )


def test_a_slice_at_the_floor_raises_nothing(golden_set, v1):
    run = evaluate(upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4}), v1)
    evaluation_settings_update(golden_set=golden_set, user=None, alert_slice_floor=0.5)
    assert alerts_check(evaluation=run) == []
    evaluation_settings_update(golden_set=golden_set, user=None, alert_slice_floor=0.501)
    assert len(alerts_check(evaluation=run)) == 1


def test_slices_of_a_reranked_run_are_held_to_the_floor_at_k_final(golden_set, v1):
    # German pages at rank 2: recall@3 is perfect, recall@1 (what the prompt sees) is 0.
    run = upload(golden_set, "reranked", stage="reranked", ranks=dict.fromkeys(GERMAN, 2))
    alerts = alerts_check(evaluation=evaluate(run, v1))
    assert kinds(alerts) == [(Alert.Kind.SLICE_UNDER_FLOOR, "recall@1", "query:lang=de")]


# --- rerank loss ------------------------------------------------------------------------


def test_rerank_loss_over_the_threshold_raises_one_alert_on_the_reranked_run(golden_set, v1):
    evaluate(upload(golden_set, "hybrid first", system="hybrid"), v1)  # recall@3 1.00
    reranked = upload(golden_set, "hybrid reranked", system="hybrid", stage="reranked", ranks=dict.fromkeys(["q1", "q2", "q3"], 2))
    alerts = alerts_check(evaluation=evaluate(reranked, v1))  # recall@1 0.85: 15 points lost

    assert kinds(alerts) == [(Alert.Kind.RERANK_LOSS, "recall@1", "")]
    assert alerts[0].run == reranked
    assert (alerts[0].value, alerts[0].reference) == pytest.approx((0.85, 1.0))
    assert alerts[0].message == (
        'rerank loss of hybrid on alerting v1 is 15.0 points (over 10): recall@3 of first_stage run "hybrid first" '
        'is 1.000, recall@1 of reranked run "hybrid reranked" is 0.850'
    )


def test_rerank_loss_at_the_threshold_raises_nothing(golden_set, v1):
    evaluate(upload(golden_set, "hybrid first", system="hybrid"), v1)
    reranked = upload(golden_set, "hybrid reranked", system="hybrid", stage="reranked", ranks=dict.fromkeys(["q1", "q2", "q3"], 2))
    evaluation_settings_update(golden_set=golden_set, user=None, alert_rerank_loss_points=15.0)
    assert alerts_check(evaluation=evaluate(reranked, v1)) == []


def test_rerank_loss_is_found_when_the_first_stage_run_finishes_last(golden_set, v1):
    first = upload(golden_set, "hybrid first", system="hybrid")
    reranked = upload(golden_set, "hybrid reranked", system="hybrid", stage="reranked", ranks=dict.fromkeys(["q1", "q2", "q3"], 2))
    assert alerts_check(evaluation=evaluate(reranked, v1)) == []
    alerts = alerts_check(evaluation=evaluate(first, v1))
    assert [(a.run, a.kind) for a in alerts] == [(reranked, Alert.Kind.RERANK_LOSS)]


def test_a_reranked_run_is_paired_with_the_first_stage_run_uploaded_just_before_it(golden_set, v1):
    # Monday's reranker lost 15 points against Monday's first stage, not against Tuesday's worse one.
    first_monday = upload(golden_set, "first monday", system="hybrid")
    reranked_monday = upload(golden_set, "reranked monday", system="hybrid", stage="reranked", ranks=dict.fromkeys(["q1", "q2", "q3"], 2))
    first_tuesday = upload(golden_set, "first tuesday", system="hybrid", ranks=dict.fromkeys(["q1", "q2", "q3"], 4))
    evaluate(first_tuesday, v1)
    assert alerts_check(evaluation=evaluate(reranked_monday, v1)) == []
    alerts = alerts_check(evaluation=evaluate(first_monday, v1))
    losses = [(a.run, a.reference) for a in alerts if a.kind == Alert.Kind.RERANK_LOSS]
    assert losses == [(reranked_monday, 1.0)]
    # Tuesday's first stage is the one that got worse, and that alert is its own.
    assert {(a.run, a.kind) for a in alerts if a.kind != Alert.Kind.RERANK_LOSS} == {(first_tuesday, Alert.Kind.DROP_VS_RUN)}


# --- idempotence ------------------------------------------------------------------------


def test_checking_again_adds_nothing(golden_set, v1):
    evaluate(upload(golden_set, "monday"), v1)
    tuesday = evaluate(upload(golden_set, "tuesday", ranks={"q1": 2, "q17": 4, "q18": 4}), v1)
    first = alerts_check(evaluation=tuesday)
    assert len(first) == 3  # recall@1 and recall@3 dropped, the German slice is under the floor
    assert alerts_check(evaluation=tuesday) == []
    assert Alert.objects.count() == 3


def test_an_evaluation_that_is_not_done_raises_nothing(golden_set, v1):
    run = upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4})
    evaluation = evaluate(run, v1)
    evaluation_fail(run_id=run.id, version_id=v1.id, error="worker lost")
    assert alerts_check(evaluation=evaluation) == []


def test_a_redelivered_evaluation_task_raises_and_mails_each_alert_once(golden_set, v1, owner, django_capture_on_commit_callbacks):
    owner.email = "owner@example.com"
    owner.save()
    membership_grant(user=owner, golden_set=golden_set, role=Membership.Role.MANAGER)
    run = upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4})
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            evaluate_run_task(run.id, v1.id)
    assert Alert.objects.count() == 1
    assert len(mail.outbox) == 1


# --- delivery (tests/evaluation/alerts/test_incident_messages.py) -----------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_retries_back_off_exponentially():
    assert [delivery_backoff_seconds(n) for n in range(5)] == [60, 120, 240, 480, 960]


# --- the worker knows the task ----------------------------------------------------------


def test_a_worker_registers_the_delivery_task_at_start_even_without_system_checks():
    # A worker builds its table of known tasks once, at start, from the modules it imports
    # then; a delivery task it does not know would be dropped as "unregistered".
    # CELERY_SKIP_CHECKS stops the URL checks from importing evaluation.alerts by the by.
    script = (
        "import django; django.setup()\n"
        "from goldset.celery import app\n"
        "app.loader.import_default_modules()\n"
        "print('evaluation.alerts.alert_deliver_task' in app.tasks)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "goldset.settings", "CELERY_SKIP_CHECKS": "1"},
    )
    assert found.stdout.strip().splitlines()[-1:] == ["True"], found.stderr
