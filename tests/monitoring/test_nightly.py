"""Nightly runs against a real HTTP engine: the run they store, the faults they record, and
one run per night whatever asks for it. The engine is a real server on 127.0.0.1
(tests.monitoring.endpoints.engines), never a mocked client."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Alert, Evaluation, Run, Score
from evaluation.services import run_import
from monitoring.endpoints.services import endpoint_add
from monitoring.models import NightlyRun, ProbeRound
from monitoring.nightly.services import nightly_run_execute, nightly_run_now, nightly_run_request
from monitoring.schedules import schedules_due
from monitoring.tasks import monitoring_tick_task
from tests.monitoring.conftest import QUERY_IDS, text_of
from tests.monitoring.endpoints.engines import ranking_for

pytestmark = pytest.mark.django_db


def run_night(endpoint, capture, *, slot=None) -> NightlyRun:
    """One night, its run scored and checked for alerts by the tasks its commit sends."""
    with capture(execute=True):
        night = nightly_run_request(endpoint=endpoint, slot=slot) if slot else nightly_run_now(endpoint=endpoint)
        return nightly_run_execute(night_id=night.pk)


def scores(run: Run) -> list[tuple[str, str, float]]:
    return sorted(Score.objects.filter(evaluation__run=run).values_list("slice", "metric", "value"))


def test_a_nightly_run_stores_the_answers_as_a_run_that_scores_like_its_trec_file(endpoint, django_capture_on_commit_callbacks):
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    assert night.status == NightlyRun.Status.DONE, night.error
    run = night.run
    assert (run.series, run.measured_at, run.stage, run.query_count, run.failed_query_count) == (
        endpoint.series,
        night.slot,
        "first_stage",
        10,
        0,
    )
    assert (night.queries_total, night.queries_done, night.failed_count) == (10, 10, 0)
    assert night.latency_p50_ms is not None and night.seconds is not None
    assert run.index_size == 40  # the engine's index_size, read from its answers

    lines = [
        f"{query_id} Q0 {doc} {rank} {score} prod\n"
        for query_id in QUERY_IDS
        for rank, (doc, score) in enumerate(ranking_for(text_of(query_id), 10), start=1)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        uploaded = run_import(golden_set=endpoint.golden_set, lines=lines, source_name="same.trec", system="file", stage="first_stage")
    assert scores(run) == scores(uploaded)
    assert dict((m, v) for s, m, v in scores(run) if not s)["recall@10"] == 1.0


def test_a_reranked_endpoint_is_asked_at_k_final(watched_set, engines, django_capture_on_commit_callbacks):
    reranked = endpoint_add(
        golden_set=watched_set, name="prod-rerank", system="prod", stage="reranked", preset="goldset", url=engines.base + "/goldset"
    )
    night = run_night(reranked, django_capture_on_commit_callbacks)
    assert {request["body"]["k"] for request in engines.seen} == {3}
    assert night.run.entry_count == 30


def test_a_reranked_night_that_loses_over_10_points_of_its_first_stage_that_night_raises_rerank_loss(
    endpoint,
    engines,
    django_capture_on_commit_callbacks,
):
    reranked = endpoint_add(
        golden_set=endpoint.golden_set,
        name="prod-rerank",
        system="prod",
        stage="reranked",
        preset="goldset",
        url=engines.base + "/reranked",
    )
    first_night, second_night = datetime(2026, 12, 1, 2, tzinfo=UTC), datetime(2026, 12, 2, 2, tzinfo=UTC)
    for one in (endpoint, reranked):
        run_night(one, django_capture_on_commit_callbacks, slot=first_night)
    assert not Alert.objects.filter(kind=Alert.Kind.RERANK_LOSS).exists()
    engines.demoted = {text_of(query_id) for query_id in ("q1", "q2", "q3")}  # 3 of 10 queries lose both relevant pages
    nights = [run_night(one, django_capture_on_commit_callbacks, slot=second_night) for one in (endpoint, reranked)]
    [loss] = Alert.objects.filter(kind=Alert.Kind.RERANK_LOSS)
    assert loss.run == nights[1].run and (loss.reference, loss.value) == (1.0, pytest.approx(0.7))
    assert "rerank loss of prod" in loss.message and "30.0 points (over 10)" in loss.message
    assert f'first_stage run "{nights[0].run.name}"' in loss.message  # the first stage of the same night


def test_a_drop_after_the_index_grew_says_so_with_the_sizes_its_count_url_answered(
    watched_set,
    engines,
    django_capture_on_commit_callbacks,
):
    searched = endpoint_add(
        golden_set=watched_set,
        name="os-first",
        system="os",
        stage="first_stage",
        preset="opensearch",
        url=engines.base + "/wiki/_search",
        count_url=engines.base + "/wiki/_count",
    )
    engines.index_size = 1_200_000
    first = run_night(searched, django_capture_on_commit_callbacks, slot=datetime(2026, 12, 1, 2, tzinfo=UTC))
    engines.index_size = 1_500_000
    engines.demoted = {text_of(query_id) for query_id in ("q1", "q2", "q3")}
    second = run_night(searched, django_capture_on_commit_callbacks, slot=datetime(2026, 12, 2, 2, tzinfo=UTC))
    assert (first.run.index_size, second.run.index_size) == (1_200_000, 1_500_000)
    drop = Alert.objects.get(kind=Alert.Kind.DROP_VS_PREVIOUS_NIGHT, run=second.run, metric="recall@10", slice="")
    assert "dropped 30.0 points overnight" in drop.message
    # Three queries of ten are within noise at the night's corrected alpha; the note stands.
    assert "; after the index grew from 1.2M to 1.5M documents" in drop.message


def test_queries_answering_500_or_malformed_json_are_recorded_counted_and_flagged(
    endpoint,
    engines,
    django_capture_on_commit_callbacks,
):
    engines.faults = {text_of("q3"): "500", text_of("q7"): "malformed"}
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    run = night.run
    assert (night.status, night.failed_count, run.failed_query_count, run.query_count) == (NightlyRun.Status.DONE, 2, 2, 8)
    failures = dict(run.failures.values_list("query_id", "error"))
    assert set(failures) == {"q3", "q7"}
    assert "HTTP 500" in failures["q3"] and "2 attempts" in failures["q3"]
    assert "not JSON" in failures["q7"]
    # 2 of 10 is over the 5% failing share: "endpoint failing", and no recall alert for it.
    kinds = set(Alert.objects.filter(golden_set=endpoint.golden_set).values_list("kind", flat=True))
    assert kinds == {Alert.Kind.ENDPOINT_FAILING}
    failing = Alert.objects.get(kind=Alert.Kind.ENDPOINT_FAILING)
    assert failing.run == run and failing.subject == "prod-first"
    assert "failed 2 of 10 queries (20%)" in failing.message
    # The failed queries are unanswered in the scores: recall 0.8, and said so.
    assert Evaluation.objects.get(run=run).unanswered_count == 2


def test_a_night_with_failed_queries_says_so_on_the_run_list_the_run_page_and_the_results(
    endpoint,
    engines,
    client,
    make_user,
    django_capture_on_commit_callbacks,
):
    engines.faults = {text_of("q3"): "500", text_of("q7"): "malformed"}
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    client.force_login(make_user("staff", is_staff=True))
    slug = endpoint.golden_set.slug
    pages = {
        "runs": client.get(reverse("runs", args=[slug])).content.decode(),
        "results": client.get(reverse("results", args=[slug])).content.decode(),
        "run": client.get(reverse("run", args=[slug, night.run.pk])).content.decode(),
    }
    for name, html in pages.items():
        assert "2 queries failed" in html or "2 queries got no answer from the endpoint" in html, name
    assert "<code>q3</code>: HTTP 500" in pages["run"] and "<code>q7</code>: answer is not JSON" in pages["run"]


def test_an_endpoint_that_is_down_raises_endpoint_failing_and_no_recall_alert(watched_set, django_capture_on_commit_callbacks):
    down = endpoint_add(
        golden_set=watched_set,
        name="down",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url="http://127.0.0.1:9/goldset",
        timeout_seconds=0.5,
        retries=0,
    )
    night = run_night(down, django_capture_on_commit_callbacks)
    assert night.status == NightlyRun.Status.FAILED and night.run is None
    assert "no query was answered" in night.error
    [alert] = Alert.objects.filter(golden_set=watched_set)
    assert (alert.kind, alert.run, alert.subject) == (Alert.Kind.ENDPOINT_FAILING, None, "down")
    assert "failed 10 of 10 queries" in alert.message and "no run was stored" in alert.message
    assert not Run.objects.filter(golden_set=watched_set).exists()


def test_a_query_slower_than_the_timeout_is_recorded_as_its_error(endpoint, engines, django_capture_on_commit_callbacks):
    engines.faults = {text_of("q5"): "slow"}
    engines.slow_seconds = 2.0  # the endpoint's timeout is 0.5 s
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    [(query_id, error)] = night.run.failures.values_list("query_id", "error")
    assert query_id == "q5" and "no answer within 0.5 s" in error


def test_one_slot_makes_one_run_however_often_it_is_asked(endpoint, django_capture_on_commit_callbacks):
    slot = datetime(2026, 12, 1, 2, tzinfo=UTC)
    first = nightly_run_request(endpoint=endpoint, slot=slot)
    assert nightly_run_request(endpoint=endpoint, slot=slot) is None  # a second tick, a second beat
    with django_capture_on_commit_callbacks(execute=True):
        done = nightly_run_execute(night_id=first.pk)
        again = nightly_run_execute(night_id=first.pk)  # a redelivered task
    assert done.status == again.status == NightlyRun.Status.DONE and again.run_id == done.run_id
    assert Run.objects.filter(series=endpoint.series).count() == 1


def test_a_night_whose_store_hits_a_database_error_is_retried_to_one_complete_run(
    endpoint, engines, monkeypatch, django_capture_on_commit_callbacks
):
    """The task's retry (autoretry on OperationalError) claims the night again: the failed
    attempt handed it back to pending instead of leaving it held by its own worker."""
    from celery.exceptions import Retry
    from django.db import OperationalError

    from monitoring.nightly import services
    from monitoring.tasks import nightly_run_task

    real_store, calls = services.run_from_entries, []

    def store_once_lost(**kwargs):
        calls.append(kwargs["name"])
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real_store(**kwargs)

    monkeypatch.setattr(services, "run_from_entries", store_once_lost)
    night = nightly_run_request(endpoint=endpoint, slot=datetime(2026, 12, 1, 2, tzinfo=UTC))
    with pytest.raises(Retry):  # the task asks for its retry...
        nightly_run_task.apply(args=[night.pk], throw=True)
    night.refresh_from_db()
    assert (night.status, night.worker, night.run) == (NightlyRun.Status.PENDING, "", None)  # ...and left the night to it
    with django_capture_on_commit_callbacks(execute=True):
        nightly_run_task.apply(args=[night.pk], retries=1)  # the retry's delivery
    night.refresh_from_db()
    assert (night.status, night.attempts, len(calls)) == (NightlyRun.Status.DONE, 2, 2)
    assert Run.objects.filter(series=endpoint.series).count() == 1 and night.run.query_count == 10
    assert len(engines.seen) == 20  # asked twice over: the first attempt's answers were never stored


def test_the_tick_makes_the_due_slots_once_and_only_after_the_endpoint_was_registered(endpoint):
    # A fixed registration time: the expected slots must not depend on the hour the suite runs at
    # (registered at 22:xx, "a day and 3 hours later" is 01:xx, before that night's 02:00).
    registered = datetime(2026, 12, 1, 12, 7, tzinfo=UTC)
    type(endpoint).objects.filter(pk=endpoint.pk).update(created_at=registered)
    nights, rounds = schedules_due(now=registered + timedelta(minutes=1))
    # Registered at noon: that morning's 02:00 is before it and is not run.
    assert nights == [] and rounds == []
    later = registered + timedelta(days=1, hours=3)  # 2 December, 15:07
    nights, rounds = schedules_due(now=later)
    assert [n.slot for n in nights] == [datetime(2026, 12, 2, 2, tzinfo=UTC)]
    assert [r.slot for r in rounds] == [datetime(2026, 12, 2, 15, 5, tzinfo=UTC)]
    assert schedules_due(now=later) == ([], [])
    nights, next_rounds = schedules_due(now=later + timedelta(minutes=5))
    assert nights == [] and [r.slot for r in next_rounds] == [datetime(2026, 12, 2, 15, 10, tzinfo=UTC)]


def test_the_tick_task_starts_what_fell_due(endpoint, django_capture_on_commit_callbacks):
    endpoint.run_schedule = "* * * * *"  # every minute, so that a slot falls due now
    endpoint.save()
    NightlyRun.objects.all().delete()
    type(endpoint).objects.filter(pk=endpoint.pk).update(created_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        monitoring_tick_task.delay()
    night = NightlyRun.objects.get(endpoint=endpoint)
    assert night.status == NightlyRun.Status.DONE and night.run.series == endpoint.series
    assert ProbeRound.objects.filter(endpoint=endpoint).count() == 1


def test_a_night_lost_with_its_message_is_sent_again_by_the_tick(endpoint, django_capture_on_commit_callbacks):
    night = nightly_run_request(endpoint=endpoint, slot=datetime(2026, 12, 1, 2, tzinfo=UTC))
    NightlyRun.objects.filter(pk=night.pk).update(enqueued_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        monitoring_tick_task.delay()
    night.refresh_from_db()
    assert night.status == NightlyRun.Status.DONE


def test_on_the_embedded_default_the_web_process_runs_the_schedules_itself(endpoint, transactional_db, settings):
    """No broker, no beat: goldset.wsgi starts beat_in_process, which sends beat's schedule
    from a thread of the process; here with the tick every 0.2 s and a schedule that falls
    due every minute."""
    import threading

    from goldset.celery import beat_in_process

    endpoint.run_schedule = "* * * * *"
    endpoint.save()
    type(endpoint).objects.filter(pk=endpoint.pk).update(created_at=timezone.now() - timedelta(hours=1))
    settings.CELERY_BEAT_SCHEDULE = {"tick": {"task": "monitoring.tasks.monitoring_tick_task", "schedule": 0.2}}
    stop = threading.Event()
    thread = beat_in_process(poll_seconds=0.05, stop=stop)
    try:
        deadline = timezone.now() + timedelta(seconds=30)
        while not NightlyRun.objects.filter(endpoint=endpoint, status=NightlyRun.Status.DONE).exists():
            assert timezone.now() < deadline, "no night was made by the in-process beat"
            stop.wait(0.1)
    finally:
        stop.set()
        thread.join(timeout=30)
    night = NightlyRun.objects.get(endpoint=endpoint)
    assert night.run.series == endpoint.series and night.trigger == NightlyRun.Trigger.SCHEDULE


def test_a_night_is_scored_on_the_version_it_asked_and_on_every_later_one(endpoint, django_capture_on_commit_callbacks, monkeypatch):
    """A version published while the night asks its endpoint: the night asked version 1's
    queries, so it is scored on version 1, and on version 2 as every run is; the sweeper
    finds nothing missing afterwards."""
    from goldenset.models import Query
    from goldenset.services import version_publish
    from monitoring.nightly import services as nightly

    asking = nightly._fetch

    def publish_meanwhile(*args, **kwargs):
        answered = asking(*args, **kwargs)
        Query.objects.filter(golden_set=endpoint.golden_set, query_id="q10").update(retired_at=timezone.now())
        version_publish(golden_set=endpoint.golden_set, note="while the night asked")
        return answered

    monkeypatch.setattr(nightly, "_fetch", publish_meanwhile)
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    assert night.status == NightlyRun.Status.DONE, night.error
    assert night.version.number == 1
    scored = Evaluation.objects.filter(run=night.run).values_list("version__number", "status")
    assert sorted(scored) == [(1, "done"), (2, "done")]
    from evaluation.services import evaluations_missing_create

    assert evaluations_missing_create() == 0


def test_an_endpoint_of_a_chunking_stores_its_nights_as_runs_of_it_scored_at_both_levels(endpoint, django_capture_on_commit_callbacks):
    """Issue 25 item 3: an endpoint names its chunking, as an uploaded run does. Here the
    chunking cuts each document whole, so the engine's doc ids are its chunk ids and the
    chunk level equals the document level."""
    from evaluation.level_figures import evaluation_levels
    from goldenset.models import Page
    from lib.errors import GoldsetError
    from monitoring.endpoints.services import endpoint_update
    from tests.support import chunks

    corpus = endpoint.golden_set.corpus
    whole = chunks.chunking(
        endpoint.golden_set,
        "whole",
        {doc_id: (doc_id, 0, len(text)) for doc_id, text in Page.objects.filter(corpus=corpus).values_list("doc_id", "text")},
    )
    with pytest.raises(GoldsetError, match="no chunking 'halves'"):
        endpoint_update(endpoint=endpoint, chunking="halves")
    endpoint = endpoint_update(endpoint=endpoint, chunking="whole")
    night = run_night(endpoint, django_capture_on_commit_callbacks)
    assert night.status == NightlyRun.Status.DONE, night.error
    assert night.run.chunking == whole
    evaluation = Evaluation.objects.get(run=night.run)
    document, chunk = evaluation_levels(evaluation)
    assert (document.name, chunk.name, chunk.chunking) == ("document", "chunk", "whole")
    assert chunk.scores["recall@10"] == document.scores["recall@10"] == 1.0
    assert chunk.scores["evidence_recall@10"] == 1.0
