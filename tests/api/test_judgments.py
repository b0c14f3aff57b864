"""POST .../judgments/: existing labels imported in bulk, as JSON or TREC text, all or nothing."""

import pytest

from goldenset.models import Judgment, Page, Query
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

URL = f"/api/v1/golden-sets/{SLUG}/judgments/"


@pytest.fixture
def writer(token, golden_set):
    return client_for(token("write", golden_set))


def test_json_labels_become_imported_judgments(writer, manager):
    labels = [{"query_id": "q3", "doc_id": "d1", "grade": 2}, {"query_id": "q/2:ü", "doc_id": "CR93E-3103#37", "grade": 0}]
    response = writer.post(URL, {"labels": labels}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["judgments_created"] == 2 and response.json()["grades"] == {"0": 1, "2": 1}
    made = Judgment.objects.filter(query__query_id="q3", page__doc_id="d1").get()
    assert (made.grade, made.source) == (2, Judgment.Source.IMPORTED)


def test_a_trec_text_body_is_imported_too(writer):
    response = writer.post(URL, "# from the old tool\nq3 0 d2 1\nq3 0 d3 0\n", content_type="text/plain")
    assert response.status_code == 201, response.content
    assert response.json()["judgments_created"] == 2


def test_unknown_ids_are_refused_all_listed_and_nothing_is_written(writer):
    before = Judgment.objects.count()
    labels = [
        {"query_id": "q1", "doc_id": "d1", "grade": 1},
        {"query_id": "q9", "doc_id": "d1", "grade": 1},
        {"query_id": "q1", "doc_id": "nowhere", "grade": 1},
    ]
    error = assert_error(writer.post(URL, {"labels": labels}, format="json"), 422, "invalid")
    assert error["problems"] == [
        "labels[1]: query id 'q9' is not in the golden set",
        "labels[2]: doc id 'nowhere' is not in the corpus",
    ]
    assert error["field"] == "labels"
    assert Judgment.objects.count() == before


def test_create_missing_makes_id_only_queries_and_pages(writer):
    response = writer.post(URL, {"labels": [{"query_id": "q9", "doc_id": "new/page#1", "grade": 1}], "create_missing": True}, format="json")
    assert response.status_code == 201
    assert Query.objects.get(query_id="q9").has_text is False and Page.objects.get(doc_id="new/page#1").has_text is False


def test_create_missing_with_a_text_body_is_a_query_parameter(writer):
    response = writer.post(URL + "?create_missing=true", "q9 0 d1 1\n", content_type="text/plain")
    assert response.status_code == 201 and response.json()["queries_created"] == 1


def test_a_bad_trec_line_is_named_by_its_line_number(writer):
    error = assert_error(writer.post(URL, "q1 0 d1 1\nq1 0 d2 high\nq1 0 d3 99999999999\n", content_type="text/plain"), 422)
    assert error["problems"] == ["qrels:2: grade 'high' is not an integer", "qrels:3: grade 99999999999 is outside -32768..32767"]


@pytest.mark.parametrize(
    ("label", "status", "problem"),
    # 400: the item does not fit the schema; 422: it does, but its id cannot be stored.
    [
        ({"query_id": "q 1", "doc_id": "d1", "grade": 1}, 422, "labels[0].query_id: query id 'q 1' contains whitespace"),
        ({"query_id": "q1", "doc_id": "d1", "grade": 10**9}, 400, "labels[0].grade: Ensure this value is less than or equal to 32767."),
        ({"query_id": "q1", "doc_id": "d1", "grade": "x"}, 400, "labels[0].grade: A valid integer is required."),
        ({"query_id": "q1", "doc_id": "d1\x00", "grade": 1}, 400, "labels[0].doc_id: Null characters are not allowed."),
        ({"query_id": "q1", "grade": 1}, 400, "labels[0].doc_id: This field is required."),
    ],
)
def test_a_bad_label_is_named_by_its_index_and_field(writer, label, status, problem):
    error = assert_error(writer.post(URL, {"labels": [label]}, format="json"), status, "invalid")
    assert error["problems"][0].startswith(problem)
    assert error["field"] == problem.split(":")[0]


def test_an_empty_body_is_refused(writer):
    assert_error(writer.post(URL, {"labels": []}, format="json"), 400, "invalid")
    assert_error(writer.post(URL, "# nothing\n", content_type="text/plain"), 422, "invalid")


def test_a_body_that_is_not_utf8_or_not_json_is_a_parse_error(writer):
    assert_error(writer.post(URL, b"q1 0 d1 \xff\n", content_type="text/plain"), 400, "parse_error")
    assert_error(writer.post(URL, b"{not json", content_type="application/json"), 400, "parse_error")
