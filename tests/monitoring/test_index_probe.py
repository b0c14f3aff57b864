"""The index probe against the real demo search service over HTTP: ANN recall@k overall and
per shard as an independent count finds it, two stale shards open one "index" incident that
names them, refreshing them resolves it; the schedule makes one probe per slot, only for
endpoints with an exact mode."""

import json
import urllib.request
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from evaluation.models import Alert, Incident
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from goldset.demo.generate import demo_generate
from goldset.demo.monitoring import EXACT_BODY_TEMPLATE
from goldset.demo.search import DemoSearch
from goldset.demo.search_server import demo_search_server_started
from lib.errors import GoldsetError
from monitoring.endpoints.mapping import read_ranking
from monitoring.endpoints.services import endpoint_add
from monitoring.index_probes.services import ann_recall_compute, index_probe_execute, index_probe_now
from monitoring.models import IndexProbe
from monitoring.schedules import index_probes_due
from monitoring.tasks import INDEX_PROBE_LOST_AFTER, monitoring_tick_task
from tests.api import client_for
from tests.support import factories

pytestmark = pytest.mark.django_db

QUERY_COUNT = 60
K = 100


@pytest.fixture(scope="module")
def service():
    with demo_search_server_started(search=DemoSearch()) as server:
        yield server


@pytest.fixture(scope="module")
def demo_queries():
    return [(query.id, query.text) for query in demo_generate().queries[:QUERY_COUNT]]


def shards(service, stale: int) -> dict:
    request = urllib.request.Request(service.base_url + "/admin/shards", data=json.dumps({"stale": stale}).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.load(answer)


@pytest.fixture
def indexed_set(demo_queries):
    """A set asking the demo's first queries; its labels do not matter to ANN recall."""
    made = factories.golden_set(
        "indexed",
        queries=[factories.JsonRecord(line=n, id=q, text=t, metadata={}) for n, (q, t) in enumerate(demo_queries, 1)],
        qrels={(demo_queries[0][0], "d1"): 2},
        k_first=K,
        k_final=8,
    )
    version_publish(golden_set=made, note="v1")
    return made


@pytest.fixture
def exact_endpoint(indexed_set, service):
    shards(service, 0)
    yield endpoint_add(
        golden_set=indexed_set,
        name="wiki-first",
        system="wiki",
        stage="first_stage",
        preset="goldset",
        url=service.base_url + "/first-stage/search",
        exact_body_template=EXACT_BODY_TEMPLATE,
        shard_path="shard",
        max_per_second=1000,
    )
    shards(service, 0)


def probe(endpoint) -> IndexProbe:
    return index_probe_execute(probe_id=index_probe_now(endpoint=endpoint).pk)


def independent_count(search: DemoSearch, queries, k: int) -> tuple[float, dict[str, tuple[int, int]]]:
    """ANN recall@k and {shard: (exact neighbours, returned)} counted here, from the search in
    this process: approximate answers with the shards as they are, exact ones as if fresh."""
    recalls, per_shard = [], {}
    for _query_id, text in queries:
        exact = search.search(text, k, exact=True)
        if not exact:
            continue
        approximate = {hit.doc_id for hit in search.search(text, k)}
        recalls.append(len([hit for hit in exact if hit.doc_id in approximate]) / len(exact))
        for hit in exact:
            seen, returned = per_shard.get(str(hit.shard), (0, 0))
            per_shard[str(hit.shard)] = (seen + 1, returned + (hit.doc_id in approximate))
    return sum(recalls) / len(recalls), per_shard


def test_the_probe_finds_ann_recall_overall_and_per_shard_as_an_independent_count(exact_endpoint, service, demo_queries):
    state = shards(service, 2)
    measured = probe(exact_endpoint)
    expected, per_shard = independent_count(service.search, demo_queries, K)
    assert measured.finished_at is not None and (measured.k, measured.version.number) == (K, 1)
    assert (measured.queries_asked, measured.errors) == (QUERY_COUNT, 0)
    assert measured.ann_recall == pytest.approx(expected) and expected < 1.0
    assert {shard: (f["exact"], f["returned"]) for shard, f in measured.per_shard.items()} == per_shard
    for shard, figures in measured.per_shard.items():
        assert figures["share"] == pytest.approx(per_shard[shard][1] / per_shard[shard][0])
    # Only the stale shards lose neighbours of their own (named 1 to 6, as the hits name them).
    lost = {shard for shard, (seen, returned) in per_shard.items() if returned < seen * 0.9}
    assert lost and lost <= set(state["stale_shard_names"])


def test_two_stale_shards_open_one_index_incident_naming_them_and_refreshing_resolves_it(exact_endpoint, service):
    state = shards(service, 2)
    assert state["stale_shard_names"] == ["2", "4"]
    first = probe(exact_endpoint)
    [alert] = Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL)
    assert alert.message.startswith("shards 2 and 4 return ") and "of the exact neighbours" in alert.message
    assert f"(ANN recall@{K} {first.ann_recall:.2f} overall)" in alert.message
    assert (alert.subject, alert.metric, alert.reference, alert.resolved_at) == ("wiki-first", f"ann_recall@{K}", 0.95, None)
    # The figure under the floor: the named shards' pooled share, which the message leads with.
    named = [first.per_shard[shard] for shard in ("2", "4")]
    share = sum(f["returned"] for f in named) / sum(f["exact"] for f in named)
    assert alert.value == pytest.approx(share) and share < 0.95 and f"return {share:.0%} of" in alert.message
    incident = alert.incident
    assert (incident.kind, incident.subject, incident.state) == (Incident.Kind.INDEX, "wiki-first", Incident.State.OPEN)
    assert incident.title.startswith("shards 2 and 4 return")
    # Still stale an hour later: the same alert and incident, no second one.
    probe(exact_endpoint)
    assert Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL).count() == 1 and Incident.objects.count() == 1
    shards(service, 0)
    fresh = probe(exact_endpoint)
    assert fresh.ann_recall == 1.0 and all(f["share"] == 1.0 for f in fresh.per_shard.values())
    alert.refresh_from_db()
    incident.refresh_from_db()
    assert alert.resolved_at is not None
    assert (incident.state, incident.resolved_by) == (Incident.State.RESOLVED, None) and incident.resolved_at is not None


def test_a_fresh_index_raises_nothing(exact_endpoint):
    measured = probe(exact_endpoint)
    assert measured.ann_recall == 1.0 and measured.queries_compared > 0
    assert not Alert.objects.exists() and not Incident.objects.exists()


def test_a_probe_whose_answers_fail_stores_why_and_judges_nothing(exact_endpoint):
    exact_endpoint.url = exact_endpoint.url.replace("/first-stage/", "/nowhere/")
    exact_endpoint.save(update_fields=["url"])
    measured = probe(exact_endpoint)
    assert measured.ann_recall is None and measured.errors == QUERY_COUNT and "HTTP 404" in measured.error
    assert not Alert.objects.exists()


def test_a_finished_probe_is_not_run_again(exact_endpoint, service):
    done = probe(exact_endpoint)
    shards(service, 2)
    again = index_probe_execute(probe_id=done.pk)
    assert again.ann_recall == done.ann_recall == 1.0 and not Alert.objects.exists()


def test_the_schedule_makes_one_probe_per_slot_for_endpoints_with_an_exact_mode(exact_endpoint, indexed_set, service):
    plain = endpoint_add(
        golden_set=indexed_set,
        name="wiki-plain",
        system="wiki",
        stage="first_stage",
        preset="goldset",
        url=service.base_url + "/first-stage/search",
    )
    later = timezone.now() + timedelta(hours=2)
    [made] = index_probes_due(now=later)
    assert made.endpoint == exact_endpoint and made.slot.minute == 15 and made.slot <= later
    assert index_probes_due(now=later) == []  # the same slot again: nothing new
    assert not IndexProbe.objects.filter(endpoint=plain).exists()


def test_an_endpoint_without_exact_mode_cannot_be_probed_by_hand(indexed_set, service):
    plain = endpoint_add(
        golden_set=indexed_set, name="wiki-plain", system="wiki", stage="first_stage", preset="goldset", url=service.base_url + "/x"
    )
    with pytest.raises(GoldsetError, match="no exact request"):
        index_probe_now(endpoint=plain)


def test_ann_recall_averages_queries_and_pools_shards():
    answers = [
        (["a", "b", "x"], ["a", "b", "c"], {"a": "1", "b": "2", "c": "2"}),  # 2 of 3
        (["d"], ["d", "e"], {"d": "1", "e": "2"}),  # 1 of 2
        (["z"], [], {}),  # no exact neighbour: not compared
    ]
    measured = ann_recall_compute(answers, 3)
    assert measured.queries_compared == 2 and measured.ann_recall == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert measured.per_shard == {
        "1": {"exact": 2, "returned": 2, "share": 1.0},
        "2": {"exact": 3, "returned": 1, "share": pytest.approx(1 / 3)},
    }
    # Only the top k counts, on both sides.
    assert ann_recall_compute([(["x", "a"], ["a", "b"], None)], 1).ann_recall == 0.0


def test_the_tick_runs_the_index_probe_that_fell_due_and_sends_a_lost_one_again(
    exact_endpoint, service, django_capture_on_commit_callbacks
):
    type(exact_endpoint).objects.filter(pk=exact_endpoint.pk).update(
        index_probe_schedule="* * * * *", created_at=timezone.now() - timedelta(hours=1)
    )
    lost = index_probe_now(endpoint=exact_endpoint)  # its message lost: never run
    IndexProbe.objects.filter(pk=lost.pk).update(created_at=timezone.now() - INDEX_PROBE_LOST_AFTER - timedelta(minutes=1))
    shards(service, 2)
    with django_capture_on_commit_callbacks(execute=True):
        monitoring_tick_task.delay()
    probes = IndexProbe.objects.filter(endpoint=exact_endpoint)
    assert probes.count() == 2 and all(p.finished_at is not None and p.ann_recall < 1.0 for p in probes)
    assert Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL).count() == 1


def test_a_shard_path_reads_each_hits_shard_for_the_ranking():
    answer = {
        "hits": [
            {"_id": "a", "_score": 3.0, "_shard": "[n1][wiki][0]"},
            {"_id": "b", "_score": 2.0, "meta": {"shard": 4}},
            {"_id": "a", "_score": 1.5, "_shard": "[n1][wiki][9]"},  # a duplicate: the first counts
            {"_id": "c", "_score": 1.0},
        ]
    }
    read = read_ranking(answer, 10, hits_path="hits", doc_id_path="_id", score_path="_score", shard_path="_shard")
    assert [doc_id for doc_id, _ in read.ranking] == ["a", "b", "c"]
    assert read.shards == {"a": "[n1][wiki][0]"}
    nested = read_ranking(answer, 10, hits_path="hits", doc_id_path="_id", score_path="_score", shard_path="meta.shard")
    assert nested.shards == {"b": "4"}
    assert read_ranking(answer, 10, hits_path="hits", doc_id_path="_id").shards is None


def test_the_index_probe_command_prints_ann_recall_per_shard_and_the_alert_that_names_them(exact_endpoint, service, capsys):
    shards(service, 2)
    call_command("index_probe", "indexed")
    out = capsys.readouterr().out
    assert f"wiki-first: ANN recall@{K} " in out and f"over {QUERY_COUNT} of {QUERY_COUNT} queries (v1, floor 0.95)" in out
    assert "  shard 4: " in out and "exact neighbours returned" in out
    assert "  open index alert: shards 2 and 4 return " in out
    shards(service, 0)
    call_command("index_probe", "indexed", "--endpoint", "wiki-first")
    out = capsys.readouterr().out
    assert f"wiki-first: ANN recall@{K} 1.000" in out and "no open index alert" in out


def test_the_index_probe_command_says_when_no_endpoint_has_an_exact_request(indexed_set):
    with pytest.raises(CommandError, match="no endpoint with an exact request"):
        call_command("index_probe", "indexed")


def test_the_api_lists_the_index_probes_newest_first_with_their_shards(exact_endpoint, indexed_set, service, make_user):
    reader = make_user("reader")
    membership_grant(user=reader, golden_set=indexed_set, role=Membership.Role.ADJUDICATOR)
    shards(service, 2)
    stale = probe(exact_endpoint)
    shards(service, 0)
    probe(exact_endpoint)
    client = client_for()
    client.force_login(reader)
    body = client.get("/api/v1/golden-sets/indexed/endpoints/wiki-first/index-probes/").json()
    assert (body["endpoint"], body["index_recall_floor"]) == ("wiki-first", 0.95)
    fresh, older = body["probes"]
    assert (fresh["ann_recall"], fresh["k"], fresh["version"], fresh["trigger"]) == (1.0, K, 1, "manual")
    assert older["ann_recall"] == stale.ann_recall and older["per_shard"] == stale.per_shard
    assert older["per_shard"]["4"]["share"] < 0.95
    assert len(client.get("/api/v1/golden-sets/indexed/endpoints/wiki-first/index-probes/", {"limit": 1}).json()["probes"]) == 1
    stranger = client_for()
    stranger.force_login(make_user("stranger"))
    assert stranger.get("/api/v1/golden-sets/indexed/endpoints/wiki-first/index-probes/").status_code == 404
