"""Monitoring through the API: series and their nights, live endpoints (never with a
secret), their probes, run now and its poll, the monitoring figures, uploads that join a
series; every operation against every kind of caller, and query counts of the lists.

Data is made through the real services. Nights are real nightly runs
(monitoring.nightly.services) of endpoints registered with endpoint_add, querying a real
HTTP endpoint the test starts on 127.0.0.1 (`answering`), whose answers the test sets.
"""

import json
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.canaries import canary_add
from evaluation.models import Alert, Run
from evaluation.services import evaluation_compute, run_import
from goldenset.models import Page, Query
from monitoring.endpoints.services import endpoint_add
from monitoring.models import NightlyRun
from monitoring.nightly.services import nightly_run_execute, nightly_run_request
from monitoring.probes.services import probe_now
from tests.api import RUN, SLUG, assert_error, client_for
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"
SECRET = "s3cret-only-the-worker-may-see"
NIGHT_1 = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
NIGHT_2 = NIGHT_1 + timedelta(days=1)
# q1: d1 relevant (CR93E-3103#37 too, missed); q/2:ü: d3 relevant (d:ü/4 missed); q3: none relevant.
RANKINGS = {"q1": [("d1", 3.0), ("d2", 2.0)], "q/2:ü": [("d3", 5.0), ("d5", 1.0)], "q3": [("d5", 1.0)]}


class _Engine(BaseHTTPRequestHandler):
    """Goldset's JSON contract, answering from the test's state: a query's ranking, or 503
    with the text given for it."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state = self.server.state
        given = state["rankings"].get(body["query_id"], [])
        if isinstance(given, str):
            status, answer = 503, {"error": given}
        else:
            answer = {"results": [{"doc_id": d, "score": s} for d, s in given[: body["k"]]], "index_size": state["index_size"]}
            status = 200
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def answering():
    """A real HTTP endpoint on 127.0.0.1 (state["url"]) answering each query with its ranking
    from state["rankings"] (a str answers 503 with that text), and state["index_size"] as
    the documents searched."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    server.state = {"rankings": dict(RANKINGS), "index_size": 1234, "url": f"http://127.0.0.1:{server.server_port}/search"}
    serve_in_thread(server)
    try:
        yield server.state
    finally:
        server.shutdown()
        server.server_close()


def add_endpoint(
    golden_set, name: str, *, stage: str = "first_stage", system: str = "bm25", url: str = "http://127.0.0.1:9/search", **options
):
    return endpoint_add(golden_set=golden_set, name=name, system=system, stage=stage, preset="goldset", url=url, retries=0, **options)


@pytest.fixture
def endpoint(golden_set, version, manager, monkeypatch, answering):
    """A first-stage endpoint of the test's engine whose header names an environment variable that is set."""
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    return add_endpoint(golden_set, "bm25", url=answering["url"], headers=[["Authorization", "Bearer ${SEARCH_TOKEN}"]], user=manager)


def night_at(endpoint, slot: datetime, version) -> NightlyRun:
    """A scheduled night of `endpoint` at `slot`, run and scored on `version`."""
    night = nightly_run_execute(night_id=nightly_run_request(endpoint=endpoint, slot=slot).pk)
    assert night.status == NightlyRun.Status.DONE, night.error
    evaluation_compute(run=night.run, version=version)
    return night


@pytest.fixture
def nights(endpoint, version, answering) -> list[NightlyRun]:
    """Two nights of the endpoint; on the second, q3 failed (so it is failing: 1 of 3)."""
    first = night_at(endpoint, NIGHT_1, version)
    answering["rankings"]["q3"] = "503 Service Unavailable"
    answering["index_size"] = 1000
    second = night_at(endpoint, NIGHT_2, version)
    return [first, second]


@pytest.fixture
def probed(golden_set, endpoint, answering):
    """A canary (q1 must find CR93E-3103#37), found at rank 2 and then missed."""
    canary_add(
        golden_set=golden_set,
        query=Query.objects.get(golden_set=golden_set, query_id="q1"),
        page=Page.objects.get(corpus=golden_set.corpus, doc_id="CR93E-3103#37"),
    )
    answering["rankings"]["q1"] = [("d1", 3.0), ("CR93E-3103#37", 2.0)]
    probe_now(endpoint=endpoint)
    answering["rankings"]["q1"] = [("d1", 3.0)]
    probe_now(endpoint=endpoint)


def operations(night_id: int) -> list[tuple[str, str, int]]:
    """(method, url, status on success) of every monitoring operation, reads first."""
    return [
        ("get", BASE + "series/", 200),
        ("get", BASE + "series/bm25%20nightly/nights/", 200),
        ("get", BASE + "endpoints/", 200),
        ("get", BASE + "endpoints/bm25/", 200),
        ("get", BASE + "endpoints/bm25/probes/", 200),
        ("get", BASE + "endpoints/bm25/index-probes/", 200),
        ("get", BASE + f"endpoints/bm25/runs/{night_id}/", 200),
        ("get", BASE + "monitoring/", 200),
        ("post", BASE + "endpoints/bm25/runs/", 202),
    ]


def outcomes(client, night_id: int) -> list[int]:
    statuses = []
    for method, url, _ in operations(night_id):
        response = getattr(client, method)(url)
        if response.status_code >= 400:
            assert_error(response, response.status_code)
        statuses.append(response.status_code)
    return statuses


SUCCESS = [status for *_, status in operations(0)]
READS_ONLY = SUCCESS[:-1] + [403]


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        ("anonymous", [401] * len(SUCCESS)),
        ("token of another set", [404] * len(SUCCESS)),
        ("annotator's token", [404] * len(SUCCESS)),
        ("read token", READS_ONLY),
        ("adjudicator's write token", READS_ONLY),
        ("manager's write token", SUCCESS),
        ("manager's write token for every set", SUCCESS),
        ("manager's session", SUCCESS),
    ],
)
def test_every_monitoring_operation_answers_each_kind_of_caller_as_the_api_does(
    caller,
    expected,
    nights,
    token,
    golden_set,
    other_set,
    adjudicator,
    annotator,
    manager,
    django_capture_on_commit_callbacks,
):
    clients = {
        "anonymous": lambda: client_for(),
        "token of another set": lambda: client_for(token("write", other_set)),
        "annotator's token": lambda: client_for(token("write", owner=annotator)),
        "read token": lambda: client_for(token("read", golden_set)),
        "adjudicator's write token": lambda: client_for(token("write", owner=adjudicator)),
        "manager's write token": lambda: client_for(token("write", golden_set)),
        "manager's write token for every set": lambda: client_for(token("write")),
    }
    if caller == "manager's session":
        client = client_for()
        client.force_login(manager)
    else:
        client = clients[caller]()
    with django_capture_on_commit_callbacks(execute=False):  # run now's task is not run here
        assert outcomes(client, nights[0].pk) == expected


@pytest.fixture
def reader(token, golden_set, version):
    return client_for(token("read", golden_set))


@pytest.fixture
def writer(token, golden_set, version):
    return client_for(token("write", golden_set))


def test_series_are_listed_with_their_endpoint_run_count_and_latest_night(reader, nights, golden_set, uploaded_run):
    run_import(
        golden_set=golden_set,
        lines=RUN.splitlines(True),
        source_name="job.run",
        system="dense",
        stage="reranked",
        name="dense job",
        series="dense job nightly",
        measured_at=NIGHT_1,
    )
    body = reader.get(BASE + "series/").json()
    assert body["count"] == 2
    by_name = {row["name"]: row for row in body["results"]}
    assert list(by_name) == ["bm25 nightly", "dense job nightly"]
    monitored = by_name["bm25 nightly"]
    assert (monitored["endpoint"], monitored["system"], monitored["stage"], monitored["run_count"]) == ("bm25", "bm25", "first_stage", 2)
    latest = monitored["latest"]
    assert latest["run_id"] == nights[1].run_id and latest["measured_at"] == "2026-12-01T02:00:00Z"
    # Scored on version 1 (k_first 10, k_final 2): q1 and q/2:ü each find one of two relevant pages.
    assert (latest["version"], latest["k_first"], latest["k_final"]) == (1, 10, 2)
    assert (latest["recall_first"], latest["recall_final"]) == (0.5, 0.5)
    uploaded = by_name["dense job nightly"]
    assert (uploaded["endpoint"], uploaded["system"], uploaded["stage"], uploaded["run_count"]) == (None, "dense", "reranked", 1)
    assert uploaded["latest"]["version"] is None and uploaded["latest"]["recall_first"] is None  # not scored yet


def test_a_series_name_with_a_space_is_taken_url_encoded_and_its_nights_come_oldest_first(reader, nights):
    body = reader.get(BASE + "series/bm25%20nightly/nights/").json()
    assert (body["series"], body["slice"]) == ("bm25 nightly", "")
    first, second = body["nights"]
    assert [first["run_id"], second["run_id"]] == [nights[0].run_id, nights[1].run_id]
    assert first["name"] == "bm25 nightly 2026-11-30 02:00"
    assert set(first) == {
        "run_id",
        "name",
        "measured_at",
        "version",
        "k_first",
        "k_final",
        "recall_first",
        "recall_final",
        "failed_query_count",
        "failing",
        "index_size",
        "slice_scores",
    }
    assert (first["failed_query_count"], first["failing"], first["index_size"], first["slice_scores"]) == (0, False, 1234, {})
    # q3 failed on the second night: one query of three, over the set's failing share (5%).
    assert (second["failed_query_count"], second["failing"], second["index_size"]) == (1, True, 1000)
    assert [n["run_id"] for n in reader.get(BASE + "series/bm25%20nightly/nights/", {"limit": 1}).json()["nights"]] == [nights[1].run_id]


def test_nights_add_the_scores_of_the_slice_asked_for_and_refuse_one_the_version_lacks(reader, nights):
    body = reader.get(BASE + "series/bm25%20nightly/nights/", {"slice": "lang=de"}).json()
    assert body["slice"] == "query:lang=de"
    assert body["nights"][0]["slice_scores"]["recall@10"] == 0.5
    error = assert_error(reader.get(BASE + "series/bm25%20nightly/nights/", {"slice": "colour=red"}), 422, "invalid")
    assert error["field"] == "slice" and "'colour' is not a slice field of version 1" in error["message"]
    assert assert_error(reader.get(BASE + "series/bm25%20nightly/nights/", {"slice": "lang"}), 400)["field"] == "slice"
    assert assert_error(reader.get(BASE + "series/bm25%20nightly/nights/", {"limit": 0}), 400)["field"] == "limit"


def test_a_parameter_these_reads_do_not_take_is_refused_naming_it_not_ignored(reader, nights):
    for path in ("series/bm25%20nightly/nights/", "endpoints/bm25/probes/", "monitoring/"):
        error = assert_error(reader.get(BASE + path, {"limt": 5}), 400, "invalid")
        assert error["field"] == "limt" and "is not a parameter of this operation" in error["message"]
    assert reader.get(BASE + "monitoring/", {"format": "json"}).status_code == 200  # DRF's own


def test_an_unknown_series_endpoint_or_night_is_404_in_the_error_shape(reader, nights, other_set, answering, version):
    assert_error(reader.get(BASE + "series/no%20such/nights/"), 404, "not_found")
    assert_error(reader.get(BASE + "endpoints/nope/"), 404, "not_found")
    assert_error(reader.get(BASE + "endpoints/nope/probes/"), 404, "not_found")
    assert_error(reader.get(BASE + "endpoints/bm25/runs/99999999/"), 404, "not_found")
    assert_error(reader.get(BASE + "endpoints/not%20a%20name/"), 404, "not_found")
    elsewhere = add_endpoint(other_set, "elsewhere")
    night = nightly_run_request(endpoint=elsewhere, slot=NIGHT_1)
    assert_error(reader.get(BASE + f"endpoints/bm25/runs/{night.pk}/"), 404, "not_found")


# --- uploads that join a series ----------------------------------------------------------


def upload(client, name: str, **fields):
    data = {"file": SimpleUploadedFile(f"{name}.run", RUN.encode()), "system": "dense", "stage": "reranked", "name": name, **fields}
    return client.post(BASE + "runs/", data, format="multipart")


def test_two_uploads_in_one_series_are_its_nights_in_the_order_they_measured(writer, reader):
    later = upload(writer, "dense 12-01", series="dense job", measured_at="2026-12-01T02:00:00Z")
    earlier = upload(writer, "dense 11-30", series="dense job", measured_at="2026-11-30T02:00:00+00:00")
    assert later.status_code == earlier.status_code == 201, later.content
    body = earlier.json()
    assert (body["series"], body["measured_at"], body["failed_query_count"], body["index_size"], body["entries_dropped"]) == (
        "dense job",
        "2026-11-30T02:00:00Z",
        0,
        None,
        False,
    )
    nights = reader.get(BASE + "series/dense%20job/nights/").json()["nights"]
    assert [n["name"] for n in nights] == ["dense 11-30", "dense 12-01"]
    assert reader.get(BASE + f"runs/{later.json()['id']}/").json()["series"] == "dense job"


def test_an_upload_with_a_series_and_no_moment_is_measured_now(writer):
    before = datetime.now(UTC).replace(microsecond=0)
    body = upload(writer, "dense now", series="dense job").json()
    assert datetime.fromisoformat(body["measured_at"]) >= before


def test_a_bad_measured_at_is_refused_naming_it_and_nothing_is_stored(writer):
    error = assert_error(upload(writer, "dense bad", series="dense job", measured_at="last tuesday"), 400, "invalid")
    assert error["field"] == "measured_at"
    error = assert_error(upload(writer, "dense alone", measured_at="2026-12-01T02:00:00Z"), 422, "invalid")
    assert error["field"] == "measured_at" and "give series too" in error["message"]
    assert not Run.objects.filter(system="dense").exists()


def test_the_runs_list_shows_series_fields_and_filters_by_series(writer, reader, uploaded_run):
    upload(writer, "dense 12-01", series="dense job", measured_at="2026-12-01T02:00:00Z")
    runs = reader.get(BASE + "runs/").json()["results"]
    assert [(r["name"], r["series"]) for r in runs] == [("dense 12-01", "dense job"), ("bm25 first_stage", None)]
    assert runs[1]["measured_at"] is None and runs[1]["entries_dropped"] is False
    assert [r["name"] for r in reader.get(BASE + "runs/", {"series": "dense job"}).json()["results"]] == ["dense 12-01"]
    assert reader.get(BASE + "runs/", {"series": "no such"}).json()["count"] == 0
    assert assert_error(reader.get(BASE + "runs/", {"series": ""}), 400)["field"] == "series"


# --- endpoints ----------------------------------------------------------------------------


def test_an_endpoint_is_shown_as_registered_with_its_last_night_and_next_run(reader, nights, answering):
    body = reader.get(BASE + "endpoints/bm25/").json()
    assert (body["name"], body["system"], body["stage"], body["preset"], body["series"]) == (
        "bm25",
        "bm25",
        "first_stage",
        "goldset",
        "bm25 nightly",
    )
    assert (body["url"], body["enabled"], body["run_schedule"]) == (answering["url"], True, "0 2 * * *")
    assert body["headers"] == [{"name": "Authorization", "value": "Bearer ${SEARCH_TOKEN}"}]
    assert {
        "method",
        "body_template",
        "params_template",
        "hits_path",
        "doc_id_path",
        "score_path",
        "count_url",
        "timeout_seconds",
        "retries",
        "max_in_flight",
        "max_per_second",
        "probe_schedule",
    } <= set(body)
    assert (body["exact_body_template"], body["shard_path"], body["index_probe_schedule"], body["index_recall_floor"]) == (
        "",
        "",
        "15 * * * *",
        0.95,
    )
    last = body["last_night"]
    assert (last["id"], last["status"], last["slot"], last["run_id"], last["failed_count"]) == (
        nights[1].pk,
        "done",
        "2026-12-01T02:00:00Z",
        nights[1].run_id,
        1,
    )
    assert last["url"] == BASE + f"endpoints/bm25/runs/{nights[1].pk}/"
    assert body["running"] is None
    assert body["next_run_at"].endswith("T02:00:00Z") and body["next_probe_at"] is not None
    assert reader.get(BASE + "endpoints/").json()["results"] == [body]


def test_an_adjudicator_reads_an_endpoint_without_its_request_as_the_pages_show_it(token, adjudicator, nights, answering):
    """Hardening #31 item 8: adjudicators read URLs, headers and bodies through the API while
    the monitoring pages, managers' only for an endpoint's request, hide them."""
    client = client_for(token("read", owner=adjudicator))
    body = client.get(BASE + "endpoints/bm25/").json()
    hidden = ("url", "method", "body_template", "params_template", "headers", "count_url", "exact_body_template", "exact_params_template")
    assert {name: body[name] for name in hidden} == dict.fromkeys(hidden)
    assert (body["name"], body["system"], body["last_night"]["id"]) == ("bm25", "bm25", nights[1].pk)  # the nights stay
    assert client.get(BASE + "endpoints/").json()["results"] == [body]
    assert answering["url"].encode() not in client.get(BASE + "endpoints/").content


def test_no_answer_holds_a_secret_from_the_environment(reader, nights, probed, writer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        answers = [writer.post(BASE + "endpoints/bm25/runs/")] + [
            reader.get(BASE + path)
            for path in (
                "series/",
                "series/bm25%20nightly/nights/",
                "endpoints/",
                "endpoints/bm25/",
                "endpoints/bm25/probes/",
                f"endpoints/bm25/runs/{nights[0].pk}/",
                "monitoring/",
                "runs/",
                f"runs/{nights[0].run_id}/",
            )
        ]
    for response in answers:
        assert response.status_code in (200, 202), response.content
        assert SECRET.encode() not in response.content
    assert b"${SEARCH_TOKEN}" in answers[4].content


def test_probe_rounds_come_newest_first_with_each_canarys_rank(reader, probed):
    body = reader.get(BASE + "endpoints/bm25/probes/").json()
    assert body["endpoint"] == "bm25"
    missed, found = body["rounds"]
    assert (missed["trigger"], missed["canaries"], missed["missed"]) == ("manual", 1, 1)
    assert missed["slot"] > found["slot"]
    [probe] = found["probes"]
    assert (probe["query_id"], probe["doc_id"], probe["rank"], probe["k"], probe["found"], probe["error"]) == (
        "q1",
        "CR93E-3103#37",
        2,
        10,
        True,
        "",
    )
    assert (missed["probes"][0]["rank"], missed["probes"][0]["found"]) == (None, False)
    assert len(reader.get(BASE + "endpoints/bm25/probes/", {"limit": 1}).json()["rounds"]) == 1


def test_the_monitoring_figures_hold_each_series_rerank_loss_probes_and_open_alerts(reader, nights, probed, golden_set, version, answering):
    reranked = add_endpoint(golden_set, "bm25-rerank", stage="reranked", url=answering["url"])
    answering["rankings"] = {**RANKINGS, "q1": [("d2", 3.0), ("d1", 2.0)], "q/2:ü": [("d5", 5.0), ("d3", 1.0)]}
    night_at(reranked, NIGHT_2, version)  # the same night as the first stage's second, losing nothing in the top 2
    body = reader.get(BASE + "monitoring/", {"slice": "lang=de"}).json()
    assert (body["version"], body["slice"]) == (1, "query:lang=de")
    assert body["thresholds"] == {"drop_points": 3.0, "slice_floor": 0.75, "rerank_loss_points": 10.0}
    trends = {trend["name"]: trend for trend in body["series"]}
    assert trends["bm25 nightly"]["latest"]["run_id"] == nights[1].run_id
    assert trends["bm25 nightly"]["latest"]["slice_scores"]["recall@10"] == 0.5
    assert trends["bm25 nightly"]["last_night"]["id"] == nights[1].pk
    assert (trends["bm25-rerank nightly"]["stage"], trends["bm25-rerank nightly"]["endpoint"]) == ("reranked", "bm25-rerank")
    [rerank] = body["rerank"]
    assert (rerank["system"], rerank["measured_at"], rerank["version"]) == ("bm25", "2026-12-01T02:00:00Z", 1)
    assert (rerank["recall_first"], rerank["recall_final"], rerank["loss_points"]) == (0.5, 0.5, 0.0)
    assert [(p["endpoint"], p["canaries"], p["rounds"], p["latest_missed"]) for p in body["probes"]] == [("bm25", 1, 2, 1)]
    kinds = sorted(alert["kind"] for alert in body["open_alerts"])
    assert kinds == [Alert.Kind.ENDPOINT_FAILING, Alert.Kind.PROBE_MISSED]


def test_run_now_answers_202_with_the_night_to_poll_and_sends_its_task_on_commit(
    writer, reader, endpoint, django_capture_on_commit_callbacks
):
    """The task is captured, not run (execute=False): running it would query the endpoint
    through the HTTP client; the nightly services' own tests cover that."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = writer.post(BASE + "endpoints/bm25/runs/")
    assert response.status_code == 202, response.content
    night = NightlyRun.objects.get(endpoint=endpoint)
    assert (night.trigger, night.status, night.enqueued_at is not None) == ("manual", "pending", True)
    assert len(callbacks) == 1
    body = response.json()
    assert (body["id"], body["status"], body["run_id"], body["queries_done"], body["queries_total"]) == (night.pk, "pending", None, 0, 0)
    assert response["Location"] == body["url"] == BASE + f"endpoints/bm25/runs/{night.pk}/"
    assert reader.get(body["url"]).json() == body
    assert reader.get(BASE + "endpoints/bm25/").json()["running"]["id"] == night.pk


def test_run_now_while_a_night_of_the_endpoint_is_pending_answers_409_naming_it_and_starts_nothing(
    writer,
    endpoint,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = writer.post(BASE + "endpoints/bm25/runs/")
        second = writer.post(BASE + "endpoints/bm25/runs/")
    assert first.status_code == 202 and len(callbacks) == 1
    assert_error(second, 409)
    assert f"(id {first.json()['id']}) is pending" in second.json()["error"]["message"]
    assert NightlyRun.objects.filter(endpoint=endpoint).count() == 1


def test_polling_a_night_shows_its_progress_run_and_error(reader, nights, endpoint, answering, version):
    body = reader.get(BASE + f"endpoints/bm25/runs/{nights[1].pk}/").json()
    assert (body["status"], body["queries_done"], body["queries_total"], body["failed_count"]) == ("done", 3, 3, 1)
    assert (body["run_id"], body["version"], body["error"], body["trigger"]) == (nights[1].run_id, 1, "", "schedule")
    answering["rankings"] = {query_id: "connection refused" for query_id in RANKINGS}
    failed = nightly_run_execute(night_id=nightly_run_request(endpoint=endpoint, slot=NIGHT_2 + timedelta(days=1)).pk)
    body = reader.get(BASE + f"endpoints/bm25/runs/{failed.pk}/").json()
    assert (body["status"], body["run_id"]) == ("failed", None) and "HTTP 503" in body["error"]


# --- query counts -------------------------------------------------------------------------


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_lists_cost_the_same_queries_however_many_series_endpoints_nights_and_probes(
    reader,
    nights,
    probed,
    golden_set,
    version,
    answering,
):
    urls = ["series/", "endpoints/", "series/bm25%20nightly/nights/", "endpoints/bm25/probes/", "monitoring/"]
    reader.get(BASE)  # the token's first use of the minute stamps last_used_at: not counted
    before = {url: queries_for(reader, BASE + url) for url in urls}
    for number in range(3):
        more = add_endpoint(golden_set, f"more{number}", system=f"sys{number}", url=answering["url"])
        night_at(more, NIGHT_1, version)
        nightly_run_request(endpoint=more, slot=NIGHT_2)  # one pending as well
        probe_now(endpoint=more)
    night_at(nights[0].endpoint, NIGHT_2 + timedelta(days=1), version)
    probe_now(endpoint=nights[0].endpoint)
    after = {url: queries_for(reader, BASE + url) for url in urls}
    assert after == before
    # monitoring/ reads the most: the nights' figures, and since issue 27 the runs under the
    # Judged@k floor said once and each slice's detectable drop (the per-query blobs, one read).
    assert max(after.values()) <= 26
