"""Canary probes against a real engine server: a miss opens one alert per canary and
endpoint, however many probes miss after it; finding the page again resolves it."""

import pytest
from django.core.management import call_command

from evaluation.canaries import canary_add
from evaluation.models import Alert
from goldenset.models import Page, Query
from monitoring.models import Probe, ProbeRound
from monitoring.probes.services import probe_now, probe_round_execute
from tests.monitoring.conftest import text_of
from tests.monitoring.endpoints.engines import ranking_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def canary(watched_set):
    """The page the engine ranks 5th for q1: found in the top k_first = 10."""
    fifth = ranking_for(text_of("q1"), 5)[-1][0]
    return canary_add(
        golden_set=watched_set,
        query=Query.objects.get(golden_set=watched_set, query_id="q1"),
        page=Page.objects.get(corpus=watched_set.corpus, doc_id=fifth),
        note="the newest runbook",
    )


def open_alerts():
    return Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED, resolved_at=None)


def test_a_found_canary_is_recorded_with_its_rank_and_raises_nothing(endpoint, canary):
    probe_round, [outcome] = probe_now(endpoint=endpoint)
    assert (outcome.rank, outcome.found, outcome.error) == (5, True, "")
    [probe] = Probe.objects.filter(round=probe_round)
    assert (probe.rank, probe.k, probe.found) == (5, 10, True) and probe.latency_ms is not None
    assert (ProbeRound.objects.get(pk=probe_round.pk).canaries, ProbeRound.objects.get(pk=probe_round.pk).missed) == (1, 0)
    assert not Alert.objects.exists()


def test_a_miss_opens_one_alert_until_the_canary_is_found_again(endpoint, canary, engines, django_capture_on_commit_callbacks):
    engines.faults = {text_of("q1"): "500"}  # the probe gets no answer: a miss
    with django_capture_on_commit_callbacks(execute=True):
        _, [first] = probe_now(endpoint=endpoint)
        probe_now(endpoint=endpoint)
    assert not first.found and "HTTP 500" in first.error
    [alert] = open_alerts()
    assert (alert.canary, alert.subject, alert.run, alert.version.number) == (canary, "prod-first", None, 1)
    assert f"page {canary.page.doc_id} for query q1" in alert.message
    engines.faults = {}
    _, [found] = probe_now(endpoint=endpoint)
    assert found.found
    assert not open_alerts().exists()
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None
    # A later miss is a new incident: a new alert.
    engines.faults = {text_of("q1"): "500"}
    probe_now(endpoint=endpoint)
    assert open_alerts().count() == 1 and Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED).count() == 2


def test_a_round_is_written_once_whatever_delivers_its_task_twice(endpoint, canary):
    probe_round, _ = probe_now(endpoint=endpoint)
    assert probe_round_execute(round_id=probe_round.pk) == []
    assert Probe.objects.filter(round=probe_round).count() == 1


def test_canary_probe_prints_the_rank_or_missed_per_canary_and_endpoint(endpoint, canary, engines, capsys):
    call_command("canary_probe", "watched")
    assert f"prod-first: query q1 page {canary.page.doc_id}: rank 5" in capsys.readouterr().out
    engines.faults = {text_of("q1"): "malformed"}
    call_command("canary_probe", "watched", "--endpoint", "prod-first")
    out = capsys.readouterr().out
    assert "missed" in out and "1 canary probe(s) missed" in out


def test_canary_add_marks_a_canary_that_the_next_probe_asks_for(endpoint, capsys):
    fifth = ranking_for(text_of("q2"), 5)[-1][0]
    call_command("canary_add", "watched", "--query", "q2", "--page", fifth, "--note", "runbook of 2026-11-20")
    assert f"page {fifth} for query q2 in watched" in capsys.readouterr().out
    call_command("canary_probe", "watched")
    assert f"prod-first: query q2 page {fifth}: rank 5" in capsys.readouterr().out


def test_canary_add_refuses_a_page_outside_the_corpus(watched_set):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="has no page 'nope'"):
        call_command("canary_add", "watched", "--query", "q1", "--page", "nope")
