"""The demo replays the seed's incident live: its search service, with two of its six shards
gone stale, makes the next nightly run raise the 3-point drop and the age-slice alert, the
next probe raise the canary alerts, and the next index probe an "index" incident naming the
two shards; refreshing the shards resolves them.

Everything talks to the demo search service over real HTTP (goldset.demo.search_server,
started in this process on a free port), as `make run` has it beside the app.
"""

import json
import urllib.request

import pytest

from evaluation.alerts.delivery import incident_messages_send_due
from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert, Incident, Run
from evaluation.services import evaluation_compute
from evaluation.settings_service import evaluation_settings_update
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.monitoring import STALE_SHARDS, demo_monitoring_load
from goldset.demo.search import DemoSearch
from goldset.demo.search_server import demo_search_server_started
from goldset.demo.services import demo_golden_set_load
from monitoring.index_probes.services import index_probe_execute, index_probe_now
from monitoring.models import Endpoint, IndexProbe, NightlyRun
from monitoring.nightly.services import nightly_run_execute, nightly_run_now
from monitoring.probes.services import probe_now
from tests.evaluation.alerts.test_webhook_signing import receiver  # noqa: F401 - a real webhook receiver
from tests.support.fixtures import kept_for_the_module

pytestmark = pytest.mark.whole_system

HEALTHY_NIGHTS = 8


@pytest.fixture(scope="module")
def service():
    # Dated as `make run` dates them: the demo's new pages are the last 30 days before today.
    with demo_search_server_started(search=DemoSearch()) as server:
        yield server


@pytest.fixture(scope="module")
def demo(request, service, django_db_setup, django_db_blocker):
    """The demo set with its endpoints on the live service and HEALTHY_NIGHTS healthy nights,
    loaded once for the module. The nights are scored here, as their on-commit tasks would
    (the module's transaction never commits)."""

    def build():
        loaded = demo_golden_set_load(seed=DEFAULT_SEED)
        watched = demo_monitoring_load(
            golden_set=loaded.golden_set,
            search=service.search,
            base_url=service.base_url,
            nights=HEALTHY_NIGHTS,
            stale_nights=0,
        )
        version = loaded.golden_set.latest_version()
        for run in Run.objects.filter(golden_set=loaded.golden_set, series__isnull=False).order_by("measured_at", "id"):
            alerts_check(evaluation=evaluation_compute(run=run, version=version))
        return loaded, watched

    yield from kept_for_the_module(request, django_db_blocker, build)


def shards(service, stale: int) -> dict:
    request = urllib.request.Request(
        service.base_url + "/admin/shards",
        data=json.dumps({"stale": stale}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.load(answer)


def test_the_demo_registers_both_stages_canaries_and_healthy_nights(demo, db):
    loaded, watched = demo
    assert [(e.name, e.stage) for e in watched.endpoints] == [
        ("wiki-search-first", "first_stage"),
        ("wiki-search-reranked", "reranked"),
    ]
    assert len(watched.canaries) == 3
    assert Run.objects.filter(series__endpoint__in=watched.endpoints).count() == 2 * HEALTHY_NIGHTS
    assert not Alert.objects.filter(kind__in=[Alert.Kind.DROP_VS_PREVIOUS_NIGHT, Alert.Kind.PROBE_MISSED]).exists()


def test_stale_shards_raise_the_drop_the_age_slice_alert_and_the_canary_alerts_and_a_refresh_resolves_them(
    demo,
    service,
    db,
    django_capture_on_commit_callbacks,
):
    loaded, watched = demo
    first, reranked = watched.endpoints
    assert shards(service, STALE_SHARDS)["stale"] == STALE_SHARDS
    try:
        with django_capture_on_commit_callbacks(execute=True):
            nights = [nightly_run_execute(night_id=nightly_run_now(endpoint=one).pk) for one in (first, reranked)]
        assert all(night.status == NightlyRun.Status.DONE for night in nights), [n.error for n in nights]
        run = nights[0].run
        alerts = {(a.kind, a.metric, a.slice): a for a in Alert.objects.filter(run=run)}
        drop = alerts[(Alert.Kind.DROP_VS_PREVIOUS_NIGHT, "recall@100", "")]
        assert drop.reference - drop.value > 0.03
        assert "dropped" in drop.message and "overnight" in drop.message
        age = alerts[(Alert.Kind.SLICE_UNDER_FLOOR, "recall@100", "page:age=0-30d")]
        assert age.value < 0.6  # the seed's 0.41; old pages stay near 0.93
        assert (Alert.Kind.SLICE_UNDER_FLOOR, "recall@100", "page:age=31-365d") not in alerts

        with django_capture_on_commit_callbacks(execute=True):
            _, outcomes = probe_now(endpoint=first)
        assert outcomes and not any(outcome.found for outcome in outcomes)
        assert Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED, resolved_at=None).count() == len(outcomes)
    finally:
        shards(service, 0)
    _, outcomes = probe_now(endpoint=first)
    assert all(outcome.found for outcome in outcomes)
    assert not Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED, resolved_at=None).exists()
    assert Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED).exclude(resolved_at=None).count() == len(outcomes)
    assert Endpoint.objects.get(pk=first.pk).series.runs.count() == HEALTHY_NIGHTS + 1


def test_the_index_probe_names_the_two_stale_shards_and_a_refresh_resolves_its_incident(demo, service, db):
    loaded, watched = demo
    first, reranked = watched.endpoints
    assert (bool(first.exact_body_template), first.shard_path) == (True, "shard")
    assert (reranked.exact_body_template, reranked.shard_path) == ("", "")
    # The load's own probes, all healthy: fresh shards answer exactly what brute force does.
    assert list(IndexProbe.objects.filter(endpoint=first).values_list("ann_recall", flat=True)) == [1.0, 1.0, 1.0]
    assert shards(service, STALE_SHARDS)["stale_shard_names"] == ["2", "4"]
    try:
        stale = index_probe_execute(probe_id=index_probe_now(endpoint=first).pk)
    finally:
        shards(service, 0)
    [alert] = Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL, resolved_at=None)
    assert alert.message.startswith("shards 2 and 4 return ") and f"(ANN recall@100 {stale.ann_recall:.2f} overall)" in alert.message
    under = {shard for shard, f in stale.per_shard.items() if f["share"] < first.index_recall_floor}
    assert under == {"2", "4"}
    assert (alert.incident.kind, alert.incident.subject, alert.incident.state) == ("index", first.name, Incident.State.OPEN)
    fresh = index_probe_execute(probe_id=index_probe_now(endpoint=first).pk)
    assert fresh.ann_recall == 1.0
    assert Incident.objects.get(pk=alert.incident_id).state == Incident.State.RESOLVED
    assert not Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL, resolved_at=None).exists()


def test_one_bad_night_of_the_demo_sends_one_signed_message_per_endpoint_listing_every_alert(
    demo,
    service,
    db,
    django_capture_on_commit_callbacks,
    receiver,  # noqa: F811
):
    """Issue 27's acceptance: the stale-shard night used to send one webhook message per
    metric and slice (32 of them); now each endpoint's night is one incident and one message."""
    from standardwebhooks.webhooks import Webhook

    loaded, watched = demo
    # The healthy nights' alerts (a slice under its floor from the first night on) were sent
    # long ago in a demo that runs: the beat's sender closes their messages, to nobody.
    incident_messages_send_due()
    settings = evaluation_settings_update(golden_set=loaded.golden_set, user=None, webhook_url=receiver.url)
    assert shards(service, STALE_SHARDS)["stale"] == STALE_SHARDS
    try:
        with django_capture_on_commit_callbacks(execute=True):
            nights = [nightly_run_execute(night_id=nightly_run_now(endpoint=one).pk) for one in watched.endpoints]
    finally:
        shards(service, 0)
    sent = Alert.objects.filter(run__in=[night.run for night in nights], within_noise=False)
    assert sent.count() > len(watched.endpoints)  # many alerts...
    endpoints_alerted = {alert.run.series.name for alert in sent}
    assert len(receiver.received) == len(endpoints_alerted) == 2  # ...one message per endpoint
    listed = set()
    for request in receiver.received:
        payload = Webhook(settings.webhook_secret).verify(request.body, request.headers)  # signed as before
        incident = Incident.objects.get(pk=payload["incident"]["id"])
        assert payload["incident"]["subject"] == incident.subject and incident.subject in endpoints_alerted
        listed |= {alert["id"] for alert in payload["alerts"]}
    assert listed == set(sent.values_list("id", flat=True))
    canary = next(a for r in receiver.received for a in json.loads(r.body)["alerts"] if a["kind"] == "canary_missed")
    assert "nights before, oldest first" in canary["message"]  # each missed canary's ranks on the last nights

    # The next probe's misses join the first endpoint's incident as its next message,
    # naming each canary's query and page and its ranks on the probes before.
    first = watched.endpoints[0]
    [night_message] = [json.loads(r.body) for r in receiver.received if json.loads(r.body)["incident"]["subject"] == first.series.name]
    assert shards(service, STALE_SHARDS)["stale"] == STALE_SHARDS
    try:
        with django_capture_on_commit_callbacks(execute=True):
            probe_now(endpoint=first)
    finally:
        shards(service, 0)
    probe = json.loads(receiver.received[-1].body)
    assert len(receiver.received) == 3
    assert (probe["incident"]["id"], probe["message"]) == (night_message["incident"]["id"], night_message["message"] + 1)
    assert {a["kind"] for a in probe["alerts"]} == {"probe_missed"} and len(probe["alerts"]) == len(watched.canaries)
    for alert in probe["alerts"]:
        assert alert["canary"]["query_id"] in alert["message"] and alert["canary"]["doc_id"] in alert["message"]
        assert "oldest first" in alert["message"]
