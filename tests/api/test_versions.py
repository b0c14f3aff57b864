"""Versions through the API: list, one version, publish (a job to poll), a version's queries, a diff."""

import pytest

from goldenset.models import PublishJob, Version
from goldenset.services import qrels_import, version_publish
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/versions/"


@pytest.fixture
def second_version(golden_set, version, manager):
    """Version 2: q3 gains a relevant page and q1's d1 is regraded from 2 to 3."""
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n", "q1 0 d1 3\n"], source_name="more")
    return version_publish(golden_set=golden_set, user=manager, note="second look")


@pytest.fixture
def reader(token, golden_set, version):
    return client_for(token("read", golden_set))


@pytest.fixture
def writer(token, golden_set, version):
    return client_for(token("write", golden_set))


def test_versions_are_listed_newest_first_with_their_hash_and_counts(reader, version, second_version):
    body = reader.get(BASE).json()
    assert body["count"] == 2
    newest = body["results"][0]
    assert (newest["number"], newest["content_hash"], newest["note"], newest["author"]) == (
        2,
        second_version.content_hash,
        "second look",
        "manager",
    )
    assert [v["number"] for v in body["results"]] == [2, 1]
    oldest = body["results"][1]
    assert (oldest["query_count"], oldest["label_count"], oldest["relevant_count"], oldest["queries_without_relevant"]) == (3, 6, 4, 1)


def test_lists_page_with_limit_and_offset(reader, version, second_version):
    page = reader.get(BASE, {"limit": 1, "offset": 1}).json()
    assert page["count"] == 2 and [v["number"] for v in page["results"]] == [1] and page["previous"]


def test_one_version_and_latest_which_redirects_to_its_number(reader, version, second_version):
    assert reader.get(BASE + "1/").json()["content_hash"] == version.content_hash
    response = reader.get(BASE + "latest/")
    assert (response.status_code, response["Location"]) == (302, BASE + "2/")


def test_latest_of_a_set_without_versions_is_404(token, golden_set):
    assert_error(client_for(token("read", golden_set)).get(BASE + "latest/"), 404, "not_found")


def test_a_manager_publishes_through_the_api_as_a_job_to_poll(writer, version, golden_set, django_capture_on_commit_callbacks):
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 1\n"], source_name="more")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = writer.post(BASE, {"note": "from the eval job"}, format="json")
    assert response.status_code == 202
    started = response.json()
    job = PublishJob.objects.get()
    url = f"/api/v1/golden-sets/{SLUG}/publish-jobs/{job.pk}/"
    assert (started["id"], started["status"], started["note"], started["url"]) == (job.pk, "queued", "from the eval job", url)
    assert (started["version"], started["progress"], started["error"]) == (None, None, "")
    assert response["Location"] == url
    assert writer.get(url).json()["status"] == "queued"

    for callback in callbacks:  # the request commits: the job is sent, and runs in-process here
        callback()
    body = writer.get(url).json()
    assert (body["status"], body["error"], body["finished_at"] is not None) == ("done", "", True)
    assert body["progress"] == {"step": "writing pages", "number": 6, "steps": 6, "done": 6, "total": 6}
    assert (body["version"]["number"], body["version"]["note"], body["version"]["author"]) == (2, "from the eval job", "manager")
    assert Version.objects.get(golden_set=golden_set, number=2).content_hash == body["version"]["content_hash"]


def test_with_tasks_run_in_process_the_answer_is_the_finished_job(writer, version, golden_set, django_capture_on_commit_callbacks):
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 1\n"], source_name="more")
    with django_capture_on_commit_callbacks(execute=True):
        response = writer.post(BASE, {"note": "v2"}, format="json")
    assert response.status_code == 202
    # The answer was made before the commit ran the job; polling once shows it done.
    assert writer.get(response["Location"]).json()["version"]["number"] == 2


def test_publishing_an_unchanged_set_is_refused_at_once_and_nothing_is_written(writer, version):
    error = assert_error(writer.post(BASE, {"note": "again"}, format="json"), 409, "conflict")
    assert error["message"] == "nothing changed since version 1 of 'tiny'; not published"
    assert Version.objects.count() == 1 and not PublishJob.objects.exists()


def test_a_second_publish_while_one_is_under_way_is_refused(writer, version, golden_set):
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 1\n"], source_name="more")
    assert writer.post(BASE, {"note": "first"}, format="json").status_code == 202  # queued: sent on a commit that never comes here
    error = assert_error(writer.post(BASE, {"note": "second"}, format="json"), 409, "conflict")
    assert error["message"].startswith(f"a publish of 'tiny' is already under way (job {PublishJob.objects.get().pk})")


def test_a_failed_job_says_why(writer, version, golden_set, django_capture_on_commit_callbacks):
    from goldenset.models import Page, Query
    from goldenset.services import judgment_record

    # A new judgment that changes no label: the request cannot tell, the job can.
    judgment_record(query=Query.objects.get(query_id="q1"), page=Page.objects.get(doc_id="d1"), grade=2, annotator=None, source="imported")
    with django_capture_on_commit_callbacks(execute=True):
        response = writer.post(BASE, {"note": "same"}, format="json")
    body = writer.get(response["Location"]).json()
    assert (body["status"], body["error"], body["version"]) == ("failed", "nothing changed since version 1 of 'tiny'; not published", None)


def test_publishing_schedules_the_rescoring_of_every_run(writer, run, django_capture_on_commit_callbacks):
    from evaluation.models import Evaluation

    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 1\n"], source_name="more")
    with django_capture_on_commit_callbacks(execute=True):
        assert writer.post(BASE, {"note": "v2"}, format="json").status_code == 202
    assert Evaluation.objects.get(run=run, version__number=2).status == Evaluation.Status.DONE


# --- who may start and poll a publish ------------------------------------------------------


@pytest.fixture
def job_url(golden_set, version, manager):
    from goldenset.publishing import version_publish_request
    from goldenset.tasks import publish_job_task

    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 1\n"], source_name="more")
    job = version_publish_request(golden_set=golden_set, user=manager, note="", job_task=publish_job_task)
    PublishJob.objects.filter(pk=job.pk).update(status=PublishJob.Status.DONE)  # finished: the next may start
    return f"/api/v1/golden-sets/{SLUG}/publish-jobs/{job.pk}/"


@pytest.mark.parametrize(
    "who, poll, start",
    [
        ("manager write", 200, 202),
        ("manager read", 200, 403),
        ("adjudicator write", 200, 403),
        ("annotator write", 404, 404),
        ("other set's write", 404, 404),
        ("anonymous", 401, 401),
    ],
)
def test_read_tokens_poll_and_only_managers_write_tokens_start(
    job_url, token, golden_set, other_set, adjudicator, annotator, who, poll, start
):
    secret = {
        "manager write": lambda: token("write", golden_set),
        "manager read": lambda: token("read", golden_set),
        "adjudicator write": lambda: token("write", owner=adjudicator),
        "annotator write": lambda: token("write", owner=annotator),
        "other set's write": lambda: token("write", other_set),
        "anonymous": lambda: None,
    }[who]()
    client = client_for(secret)
    response = client.get(job_url)
    assert response.status_code == poll
    if poll != 200:
        assert_error(response, poll)
    response = client.post(BASE, {"note": "more"}, format="json")
    assert response.status_code == start
    if start != 202:
        assert_error(response, start)


def test_an_unknown_job_is_404(reader):
    error = assert_error(reader.get(f"/api/v1/golden-sets/{SLUG}/publish-jobs/999999/"), 404, "not_found")
    assert "no publish job 999999" in error["message"]


def test_the_queries_of_a_version_come_in_natural_order_with_their_slice_metadata(reader, version):
    body = reader.get(BASE + "1/queries").json()
    assert body["count"] == 3
    assert [(q["query_id"], q["metadata"], q["label_count"], q["relevant_count"]) for q in body["results"]] == [
        ("q1", {"lang": "en"}, 3, 2),
        ("q3", {"lang": "en"}, 1, 0),
        ("q/2:ü", {"lang": "de"}, 2, 2),
    ]


def test_the_queries_of_a_slice(reader, version):
    body = reader.get(BASE + "1/queries", {"slice": "lang=de"}).json()
    assert [q["query_id"] for q in body["results"]] == ["q/2:ü"]
    error = assert_error(reader.get(BASE + "1/queries", {"slice": "page:kind=faq"}), 400, "invalid")
    assert error["field"] == "slice"


def test_a_page_of_queries_costs_the_same_few_database_queries_however_many_rows(reader, version, django_assert_max_num_queries):
    with django_assert_max_num_queries(10):
        assert reader.get(BASE + "1/queries", {"limit": 2}).status_code == 200


def test_the_diff_lists_what_changed_from_one_version_to_another(reader, version, second_version):
    body = reader.get(BASE + "1/diff/2").json()
    assert (body["from_version"], body["to_version"]) == (1, 2)
    assert (body["from_hash"], body["to_hash"]) == (version.content_hash, second_version.content_hash)
    assert body["pairs_added"] == [{"query_id": "q3", "doc_id": "d1", "grade": 2}]
    assert body["pairs_regraded"] == [{"query_id": "q1", "doc_id": "d1", "old_grade": 2, "new_grade": 3}]
    assert body["counts"] == {
        "queries_added": 0,
        "queries_removed": 0,
        "pairs_added": 1,
        "pairs_removed": 0,
        "pairs_regraded": 1,
        "answers_added": 0,
        "answers_changed": 0,
        "answers_removed": 0,
    }
    assert body["truncated"] is False
    backwards = reader.get(BASE + "2/diff/1").json()
    assert backwards["pairs_removed"] == [{"query_id": "q3", "doc_id": "d1", "grade": 2}]


def test_a_diff_with_a_limit_says_it_was_truncated_and_keeps_the_counts(reader, version, second_version):
    body = reader.get(BASE + "1/diff/2", {"limit": 0}).json()
    assert body["pairs_added"] == [] and body["counts"]["pairs_added"] == 1 and body["truncated"] is True


def test_a_diff_against_latest_redirects_to_the_numbers(reader, version, second_version):
    response = reader.get(BASE + "latest/diff/1")
    assert (response.status_code, response["Location"]) == (302, BASE + "2/diff/1")


def test_lists_cost_the_same_few_queries_however_many_rows(reader, golden_set, manager, django_assert_max_num_queries):
    for number in range(2, 6):
        qrels_import(golden_set_slug=SLUG, lines=[f"q3 0 d1 {number % 4}\n"], source_name="more")
        version_publish(golden_set=golden_set, user=manager, note=f"v{number}")
    for url in ("/api/v1/golden-sets/", BASE):
        with django_assert_max_num_queries(6):
            assert reader.get(url).status_code == 200
