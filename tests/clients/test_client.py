"""GoldsetClient against a live server: sets and versions, pinned qrels cached by ETag and
checked, runs uploaded and waited for, scores, completeness, series, and the API's errors."""

from datetime import UTC, datetime

import pytest

from evaluation.models import Evaluation, Run, Score
from goldenset.services import qrels_import, version_publish
from goldset_client import EvaluationFailed, GoldsetAPIError, GoldsetClientError, QrelsIntegrityError, WaitTimeout
from tests.api import QRELS, RUN, SLUG, make_set

QRELS_AS_DICT = {}
for (query_id, doc_id), grade in QRELS.items():
    QRELS_AS_DICT.setdefault(query_id, {})[doc_id] = grade


def test_it_lists_the_sets_and_versions_the_token_may_read(client, manager, golden_set, version, make_client, token):
    make_set("other", manager)
    assert [found["slug"] for found in client.golden_sets()] == [SLUG]  # the token is restricted to the set
    assert sorted(found["slug"] for found in make_client(token("read")).golden_sets()) == ["other", SLUG]
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    second = version_publish(golden_set=golden_set, user=manager, note="again")
    listed = client.versions(SLUG)
    assert [(v["number"], v["content_hash"]) for v in listed] == [(2, second.content_hash), (1, version.content_hash)]
    assert client.version(SLUG)["number"] == 2  # `latest`, through the API's redirect
    client.http.page_size = 1  # a page a version: the list follows `next` to the end
    assert [v["number"] for v in client.versions(SLUG)] == [2, 1]
    assert client.golden_set(SLUG)["latest_version"] == 2


@pytest.mark.parametrize("fmt", ["trec", "json", "beir", "csv"])
def test_a_pulled_version_reads_back_as_its_labels_in_every_format(client, version, fmt):
    qrels = client.qrels(SLUG, 1, format=fmt)
    assert (qrels.version, qrels.content_hash, qrels.from_cache) == (1, version.content_hash, False)
    assert qrels.to_dict() == QRELS_AS_DICT


def test_a_second_pull_is_answered_304_from_the_cache(client, version):
    first = client.qrels(SLUG, 1, expected_hash=version.content_hash)
    second = client.qrels(SLUG, 1, expected_hash=version.content_hash)
    assert not first.from_cache and second.from_cache  # from_cache is set only when the server said 304
    assert second.read_bytes() == first.read_bytes() and second.to_dict() == QRELS_AS_DICT
    # The cache is per format (one ETag covers them all): json is downloaded, then cached too.
    assert not client.qrels(SLUG, 1, format="json").from_cache
    assert client.qrels(SLUG, 1, format="json").from_cache


def test_a_tampered_cache_file_is_found_out_and_downloaded_again(client, version, caplog):
    first = client.qrels(SLUG, 1)
    original = first.read_bytes()
    assert b"q1 0 d1 2\n" in original
    first.path.write_bytes(original.replace(b"q1 0 d1 2\n", b"q1 0 d1 3\n"))  # same size, one grade changed

    with caplog.at_level("WARNING", logger="goldset_client"):
        again = client.qrels(SLUG, 1)
    assert "no longer have the sha256 recorded at download" in caplog.text
    assert not again.from_cache  # not answered from the edited file: downloaded whole
    assert again.read_bytes() == original and again.to_dict() == QRELS_AS_DICT
    assert client.qrels(SLUG, 1).from_cache  # the new copy is trusted again


def test_a_pinned_hash_that_is_not_the_versions_is_refused_and_nothing_is_cached(client, version, tmp_path):
    with pytest.raises(QrelsIntegrityError, match="not the pinned 'not-the-hash'"):
        client.qrels(SLUG, 1, expected_hash="not-the-hash")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_an_uploaded_run_is_waited_for_and_its_scores_and_completeness_read(client, golden_set, version, tmp_path):
    path = tmp_path / "bm25.run"
    path.write_text(RUN, encoding="utf-8")
    run = client.upload_run(SLUG, path, system="bm25", stage="first_stage")
    assert (run["name"], run["entry_count"], run["source_name"]) == ("bm25 first_stage", 5, "bm25.run")

    evaluation = client.wait_for_scores(SLUG, run["id"])
    stored = Evaluation.objects.get(run_id=run["id"], version=version)
    assert (evaluation["status"], evaluation["version"], evaluation["content_hash"]) == ("done", 1, version.content_hash)
    overall = dict(Score.objects.filter(evaluation=stored, slice="").values_list("metric", "value"))
    assert evaluation["scores"] == overall and overall
    assert [e["run"]["id"] for e in client.scores(SLUG, version=1)] == [run["id"]]
    assert client.scores(SLUG)[0]["scores"] == overall
    completeness = client.completeness(SLUG, run["id"], version=1)
    assert completeness[0]["slice"] == "" and completeness == evaluation["completeness"]


def test_an_upload_sends_the_bytes_as_they_are_and_passes_the_format_on(client, version):
    run = client.upload_run(SLUG, RUN.encode(), system="dense", stage="reranked", name="dense v1", filename="dense.trec")
    stored = Run.objects.get(pk=run["id"])
    assert (stored.name, stored.stage, stored.source_name, stored.entry_count) == ("dense v1", "reranked", "dense.trec", 5)
    assert client.run(SLUG, run["id"])["id"] == run["id"]
    assert [r["id"] for r in client.runs(SLUG, system="dense")] == [run["id"]]


def test_a_wait_polls_with_growing_pauses_until_the_evaluation_is_done(client, version):
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    pending = Evaluation.objects.filter(run_id=run["id"])
    pending.update(status=Evaluation.Status.PENDING)  # as if a worker had not got to it yet
    pauses = []

    def worker_finishes_on_the_third_pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            pending.update(status=Evaluation.Status.RUNNING)
        if len(pauses) == 3:
            pending.update(status=Evaluation.Status.DONE)

    evaluation = client.wait_for_scores(SLUG, run["id"], poll_first=1.0, sleep=worker_finishes_on_the_third_pause)
    assert evaluation["status"] == "done" and evaluation["scores"]
    assert pauses == [1.0, 1.5, 2.25]


def test_waiting_on_a_version_the_run_will_never_be_scored_on_fails_at_once(client, manager, golden_set, version):
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    version_publish(golden_set=golden_set, user=manager, note="second")
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    with pytest.raises(GoldsetClientError, match="uploaded after version 2 was published, so it is never scored on version 1"):
        client.wait_for_scores(SLUG, run["id"], version=1)
    assert client.wait_for_scores(SLUG, run["id"])["version"] == 2


def test_a_wait_past_its_timeout_says_what_it_last_saw(client, version):
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    with pytest.raises(WaitTimeout, match="not scored on version 7 within 0 s") as raised:
        client.wait_for_scores(SLUG, run["id"], version=7, timeout=0)
    assert raised.value.last_status is None


def test_a_failed_evaluation_is_raised_with_its_reason(client, version):
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    Evaluation.objects.filter(run_id=run["id"]).update(status=Evaluation.Status.FAILED, error="the worker ran out of memory")
    with pytest.raises(EvaluationFailed, match="ran out of memory"):
        client.wait_for_scores(SLUG, run["id"])


def test_series_nights_and_monitoring_are_read(client, version):
    night = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage", series="bm25 nightly", measured_at=night)
    client.wait_for_scores(SLUG, run["id"])
    [series] = client.series(SLUG)
    assert (series["name"], series["run_count"], series["latest"]["run_id"]) == ("bm25 nightly", 1, run["id"])
    nights = client.series_nights(SLUG, "bm25 nightly", slice="lang=de")  # the space is sent URL-encoded
    [only] = nights["nights"]
    assert (nights["slice"], only["run_id"], only["version"]) == ("query:lang=de", run["id"], 1)
    assert datetime.fromisoformat(only["measured_at"].replace("Z", "+00:00")) == night
    assert only["recall_first"] == series["latest"]["recall_first"] and only["slice_scores"]
    assert [trend["name"] for trend in client.monitoring(SLUG)["series"]] == ["bm25 nightly"]


def test_a_refused_upload_raises_the_apis_status_code_message_and_problems(client, version):
    with pytest.raises(GoldsetAPIError) as raised:
        client.upload_run(SLUG, b"q1 Q0 d1 1 high sys\n", system="bm25", stage="first_stage", filename="bad.run")
    error = raised.value
    assert (error.status, error.code, error.field) == (422, "invalid", "file")
    assert error.problems == ["bad.run:1: score 'high' is not a finite number"]
    assert "nothing was stored" in error.message and "bad.run:1" in str(error)
    assert not Run.objects.exists()


def test_the_apis_refusals_of_access_and_unknown_names_are_raised_as_sent(make_client, token, golden_set, version):
    reader = make_client(token("read", golden_set))
    with pytest.raises(GoldsetAPIError) as raised:
        reader.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    assert (raised.value.status, raised.value.code) == (403, "permission_denied")
    with pytest.raises(GoldsetAPIError) as raised:
        reader.versions("no-such-set")
    assert (raised.value.status, raised.value.code, raised.value.message) == (404, "not_found", "no such golden set")
    with pytest.raises(GoldsetAPIError) as raised:
        make_client("gs_not-a-token").golden_sets()
    assert (raised.value.status, raised.value.code, raised.value.message) == (401, "authentication_failed", "unknown API token")


# --- publishing --------------------------------------------------------------------------------


def test_publish_waits_for_the_job_and_returns_the_version_to_pin(client, golden_set, version):
    from goldenset.models import Version

    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    job = client.publish(SLUG, note="from the eval job")
    stored = Version.objects.get(golden_set=golden_set, number=2)
    assert (job["status"], job["error"], job["version"]["number"]) == ("done", "", 2)
    assert (job["version"]["content_hash"], job["version"]["note"]) == (stored.content_hash, "from the eval job")


def test_publish_polls_a_queued_job_until_its_worker_is_done(client, golden_set, version, monkeypatch):
    """The server's answer leaves the job queued (its message goes nowhere here); the worker's
    own function runs it while the client waits between two polls of the live server."""
    from api.views import versions as version_views
    from goldenset.models import PublishJob
    from goldenset.publishing import publish_job_run

    class Nowhere:
        """A publish task whose messages go nowhere (sent on commit by job_send_on_commit)."""

        name = "nowhere"

        def delay(self, job_id):
            pass

    monkeypatch.setattr(version_views, "publish_job_task", Nowhere())
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    pauses = []

    def worker_runs_meanwhile(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            publish_job_run(PublishJob.objects.get().pk)

    job = client.publish(SLUG, note="queued first", poll_first=0.5, sleep=worker_runs_meanwhile)
    assert pauses == [0.5, 0.75] and (job["status"], job["version"]["number"]) == ("done", 2)


def test_publish_says_why_a_job_failed_and_refuses_an_unchanged_set_at_once(client, golden_set, version):
    from goldenset.models import Page, Query
    from goldenset.services import judgment_record
    from goldset_client import PublishFailed

    with pytest.raises(GoldsetAPIError) as refused:
        client.publish(SLUG, note="again")
    assert (refused.value.status, refused.value.code) == (409, "conflict")
    assert "nothing changed since version 1" in refused.value.message
    # A judgment that changes no label: the request cannot tell, the job can.
    judgment_record(query=Query.objects.get(query_id="q1"), page=Page.objects.get(doc_id="d1"), grade=2, annotator=None, source="imported")
    with pytest.raises(PublishFailed) as failed:
        client.publish(SLUG, note="same")
    assert failed.value.error == "nothing changed since version 1 of 'tiny'; not published"


def test_publish_gives_up_waiting_after_the_timeout_and_names_the_job_to_follow(client, golden_set, version, monkeypatch):
    from api.views import versions as version_views

    class Nowhere:
        """A publish task whose messages go nowhere (sent on commit by job_send_on_commit)."""

        name = "nowhere"

        def delay(self, job_id):
            pass

    monkeypatch.setattr(version_views, "publish_job_task", Nowhere())
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    with pytest.raises(WaitTimeout) as timed_out:
        client.publish(SLUG, timeout=0.0, sleep=lambda seconds: None)
    assert timed_out.value.last_status == "queued" and "publish-jobs/" in str(timed_out.value)


def test_qrels_of_latest_resolve_the_number_and_a_bad_version_is_a_client_error(client, version):
    """Issue 30 item 12: qrels(slug, "latest") raised a bare ValueError."""
    from goldset_client.errors import GoldsetClientError

    latest = client.qrels(SLUG, "latest")
    assert latest.content_hash == version.content_hash and latest.to_dict() == client.qrels(SLUG, version.number).to_dict()
    # `v3` could be a tag's name (issue 29): the server is asked, and its 404 names it.
    with pytest.raises(GoldsetClientError, match="no version or tag 'v3'"):
        client.qrels(SLUG, "v3")


def test_the_clients_types_hold_every_field_the_api_sends():
    """Issue 30 item 12: Run and EvaluationRun missed 11 fields the API sends."""
    from typing import get_type_hints

    from api.serializers import EvaluationRunSerializer, RunOutputSerializer
    from goldset_client import types

    assert set(get_type_hints(types.Run)) == set(RunOutputSerializer().fields)
    assert set(get_type_hints(types.EvaluationRun)) == set(EvaluationRunSerializer().fields)
