"""Reference answers through the API: a version's (paginated, pinned by its hash), a query's
in the version's query list, a query's own set and removed by managers; and who may do what."""

import json
from urllib.parse import quote

import pytest

from goldenset.answers import answers_import, query_reference_answer
from goldenset.models import Query
from goldenset.services import version_publish
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"
ANSWERS = [
    {"query_id": "q3", "answer": "Three", "aliases": ["3"], "key_facts": []},
    {"query_id": "q/2:ü", "answer": "Zwei", "aliases": [], "key_facts": ["German"]},
    {"query_id": "q1", "answer": "One", "aliases": [], "key_facts": []},
]
# Natural order of the ids (lib.ids): q1, q3, then q/2:ü.
ORDER = ["q1", "q3", "q/2:ü"]
ANSWER_URL = BASE + "queries/" + quote("q/2:ü") + "/answer"


@pytest.fixture
def answered(golden_set, version, manager):
    """Version 2 of the set, with the answers of ANSWERS (version 1 has none)."""
    answers_import(golden_set=golden_set, path_or_lines=[json.dumps(a) for a in ANSWERS], user=manager)
    return version_publish(golden_set=golden_set, user=manager, note="answers")


def _q2(golden_set) -> Query:
    return Query.objects.get(golden_set=golden_set, query_id="q/2:ü")


def test_a_versions_answers_come_paginated_in_natural_order_with_its_hash(answered, token, golden_set):
    client = client_for(token("read", golden_set))
    first = client.get(BASE + "versions/2/answers", {"limit": 2})
    assert first.status_code == 200 and first["ETag"] == f'"{answered.content_hash}"'
    body = first.json()
    assert body["count"] == 3 and [a["query_id"] for a in body["results"]] == ORDER[:2]
    rest = client.get(body["next"]).json()
    assert rest["results"] == [ANSWERS[1]]
    assert client.get(BASE + "versions/1/answers").json() == {"count": 0, "next": None, "previous": None, "results": []}
    latest = client.get(BASE + "versions/latest/answers")
    assert latest.status_code == 302 and latest["Location"].endswith("/versions/2/answers")


def test_the_versions_queries_carry_the_answer_it_froze(answered, token, golden_set):
    client = client_for(token("read", golden_set))
    rows = {row["query_id"]: row for row in client.get(BASE + "versions/2/queries").json()["results"]}
    assert rows["q3"]["reference_answer"] == {"answer": "Three", "aliases": ["3"], "key_facts": []}
    old = {row["query_id"]: row for row in client.get(BASE + "versions/1/queries").json()["results"]}
    assert old["q3"]["reference_answer"] is None


def test_the_diff_lists_the_answers_changed(answered, token, golden_set):
    body = client_for(token("read", golden_set)).get(BASE + "versions/1/diff/2").json()
    assert body["answers_added"] == ORDER and body["counts"]["answers_added"] == 3
    assert body["answers_changed"] == [] and body["answers_removed"] == []


def test_a_manager_sets_reads_and_removes_a_querys_answer(answered, token, golden_set):
    client = client_for(token("write", golden_set))
    put = client.put(ANSWER_URL, {"answer": "Deux", "aliases": ["zwei"]}, format="json")
    assert put.status_code == 200 and put.json() == {"answer": "Deux", "aliases": ["zwei"], "key_facts": []}
    assert client.get(ANSWER_URL).json()["answer"] == "Deux"
    assert client.delete(ANSWER_URL).status_code == 204
    assert query_reference_answer(_q2(golden_set)) is None
    assert_error(client.get(ANSWER_URL), 404, "not_found")
    assert_error(client.delete(ANSWER_URL), 404, "not_found")
    # The version keeps what it froze.
    assert client.get(BASE + "versions/2/answers").json()["results"][2]["answer"] == "Zwei"


def test_a_bad_answer_is_refused_naming_its_field_and_nothing_changes(answered, token, golden_set):
    client = client_for(token("write", golden_set))
    error = assert_error(client.put(ANSWER_URL, {"answer": " ", "aliases": ["ok"]}, format="json"), 422, "invalid")
    assert error["field"] == "answer" and error["problems"] == ["answer is empty"]
    error = assert_error(client.put(ANSWER_URL, {"answer": "x", "key_facts": ["fine", "  "]}, format="json"), 422, "invalid")
    assert error["field"] == "key_facts" and error["problems"] == ["key_facts item 2 is empty"]
    error = assert_error(client.put(ANSWER_URL, {"aliases": ["x"]}, format="json"), 400)
    assert error["field"] == "answer" or "answer" in json.dumps(error)
    assert_error(client.put(BASE + "queries/nope/answer", {"answer": "x"}, format="json"), 404, "not_found")
    assert query_reference_answer(_q2(golden_set)).answer == "Zwei"


def test_who_may_read_and_who_may_write(answered, token, golden_set, other_set, adjudicator, annotator):
    put = {"answer": "changed"}
    # Anonymous: 401 everywhere.
    anonymous = client_for()
    for response in (anonymous.get(BASE + "versions/2/answers"), anonymous.get(ANSWER_URL), anonymous.put(ANSWER_URL, put, format="json")):
        assert_error(response, 401)
    # A token of another set finds nothing here.
    other = client_for(token("write", other_set))
    for response in (other.get(BASE + "versions/2/answers"), other.put(ANSWER_URL, put, format="json"), other.delete(ANSWER_URL)):
        assert_error(response, 404, "not_found")
    # A viewer (a read token, or an adjudicator's write token) reads but may not write.
    for secret in (token("read", golden_set), token("write", owner=adjudicator)):
        viewer = client_for(secret)
        assert viewer.get(BASE + "versions/2/answers").status_code == 200
        assert viewer.get(ANSWER_URL).status_code == 200
        assert_error(viewer.put(ANSWER_URL, put, format="json"), 403, "permission_denied")
        assert_error(viewer.delete(ANSWER_URL), 403, "permission_denied")
    # Annotators judge blind: nothing to find.
    blind = client_for(token("write", owner=annotator))
    assert_error(blind.get(BASE + "versions/2/answers"), 404)
    assert_error(blind.put(ANSWER_URL, put, format="json"), 404)
    assert query_reference_answer(_q2(golden_set)).answer == "Zwei"
