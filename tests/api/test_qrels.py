"""GET .../versions/{n}/qrels: streamed in every format, pinned by ETag, sliced, and loaded
by the field's libraries exactly as the version holds the labels."""

import csv
import io
import json

import pytest

from goldenset.selectors import version_label_rows
from tests.api import QRELS, SLUG, assert_error, client_for
from tests.support.marks import RANX

pytestmark = pytest.mark.django_db

URL = f"/api/v1/golden-sets/{SLUG}/versions/1/qrels"


@pytest.fixture
def reader(token, golden_set, version):
    return client_for(token("read", golden_set))


def download(client, url: str = URL, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.content
    assert response.streaming, "qrels must be streamed, not built in memory"
    return b"".join(response.streaming_content).decode("utf-8")


def version_labels(version) -> dict[str, dict[str, int]]:
    """The version's labels as the database holds them, {query_id: {doc_id: grade}}."""
    labels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in version_label_rows(version):
        labels.setdefault(query_id, {})[doc_id] = grade
    return labels


def test_the_version_holds_the_labels_the_tests_compare_with(version):
    assert version_labels(version) == {q: {d: g for (q2, d), g in QRELS.items() if q2 == q} for q, _ in QRELS}


def test_trec_is_streamed_in_canonical_order_with_the_content_hash_as_etag(reader, version):
    response = reader.get(URL)
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["ETag"] == f'"{version.content_hash}"'
    assert f"{SLUG}-v1.qrels" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines == [f"{q} 0 {d} {g}" for q, d, g in version_label_rows(version)]
    assert lines[:3] == ["q1 0 CR93E-3103#37 3", "q1 0 d1 2", "q1 0 d2 0"]


@pytest.mark.parametrize(
    ("fmt", "content_type"),
    [("json", "application/json"), ("beir", "text/tab-separated-values"), ("csv", "text/csv")],
)
def test_every_format_carries_every_label(reader, version, fmt, content_type):
    response = reader.get(URL, {"format": fmt})
    assert response["Content-Type"] == f"{content_type}; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    if fmt == "json":
        assert json.loads(text) == version_labels(version)
    elif fmt == "beir":
        lines = text.splitlines()
        assert lines[0] == "query-id\tcorpus-id\tscore"
        assert {tuple(line.split("\t")) for line in lines[1:]} == {(q, d, str(g)) for (q, d), g in QRELS.items()}
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
        assert {(r["query_id"], r["doc_id"], int(r["relevance"])) for r in rows} == {(q, d, g) for (q, d), g in QRELS.items()}


def test_an_unknown_format_is_refused_naming_the_field(reader):
    error = assert_error(reader.get(URL, {"format": "xml"}), 400, "invalid")
    assert error["field"] == "format"


def test_if_none_match_with_the_content_hash_answers_304_without_a_body(reader, version):
    etag = f'"{version.content_hash}"'
    response = reader.get(URL, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304 and response["ETag"] == etag and not response.content
    assert reader.get(URL, HTTP_IF_NONE_MATCH='"an-older-hash"').status_code == 200


def test_latest_redirects_to_the_numbered_url_keeping_the_query(reader, version):
    response = reader.get(f"/api/v1/golden-sets/{SLUG}/versions/latest/qrels", {"format": "json", "slice": "lang=de"})
    assert response.status_code == 302
    assert response["Location"] == f"{URL}?format=json&slice=lang%3Dde"
    assert response["Cache-Control"] == "no-cache"


def test_a_version_that_does_not_exist_is_404(reader):
    assert_error(reader.get(f"/api/v1/golden-sets/{SLUG}/versions/7/qrels"), 404, "not_found")
    assert_error(reader.get(f"/api/v1/golden-sets/{SLUG}/versions/99999999999999999999999/qrels"), 404, "not_found")


@pytest.mark.parametrize("name", ["lang=de", "query:lang=de"])
def test_a_query_slice_keeps_the_labels_of_its_queries(reader, name):
    assert download(reader, slice=name).splitlines() == ["q/2:ü 0 d3 1", "q/2:ü 0 d:ü/4 2"]


def test_a_page_slice_keeps_the_labels_of_its_pages(reader):
    assert download(reader, slice="page:kind=faq").splitlines() == ["q1 0 CR93E-3103#37 3", "q/2:ü 0 d:ü/4 2"]
    assert download(reader, slice="kind=faq") == download(reader, slice="page:kind=faq")


def test_a_slice_value_no_query_has_gives_empty_qrels(reader):
    assert download(reader, slice="lang=fr") == ""
    assert download(reader, slice="lang=fr", format="json") == "{}\n"


@pytest.mark.parametrize(
    ("name", "status", "message"),
    # Malformed is 400 (the schema's pattern); well formed but not this version's is 422.
    [
        ("lang", 400, "is not of the form FIELD=VALUE"),
        ("topic=x", 422, "'topic' is not a slice field of version 1"),
        ("page:lang=de", 422, "'lang' is not a slice field"),
        ("=de", 400, "is not of the form"),
    ],
)
def test_a_slice_the_version_does_not_have_is_refused_naming_the_field(reader, name, status, message):
    error = assert_error(reader.get(URL, {"slice": name}), status, "invalid")
    assert error["field"] == "slice" and message in error["message"]


def test_the_export_reads_the_database_in_a_fixed_number_of_queries(reader, django_assert_max_num_queries):
    response = reader.get(URL)
    with django_assert_max_num_queries(3):
        b"".join(response.streaming_content)


# --- the field's libraries ---------------------------------------------------------------


@RANX
def test_ranx_loads_the_trec_and_json_exports_as_the_version_holds_them(reader, version, tmp_path):
    # One test: ranx compiles its numba dicts on first use (seconds per process).
    from ranx import Qrels

    path = tmp_path / "v1.qrels"
    path.write_text(download(reader), encoding="utf-8")
    from_trec = Qrels.from_file(str(path), kind="trec").to_dict()
    from_json = Qrels.from_dict(json.loads(download(reader, format="json"))).to_dict()
    expected = version_labels(version)
    assert {q: dict(d) for q, d in from_trec.items()} == expected
    assert {q: dict(d) for q, d in from_json.items()} == expected


def test_pytrec_eval_loads_the_trec_and_json_exports_as_the_version_holds_them(reader, version):
    import pytrec_eval

    expected = version_labels(version)
    assert pytrec_eval.parse_qrel(io.StringIO(download(reader))) == expected
    from_json = json.loads(download(reader, format="json"))
    assert from_json == expected
    # pytrec_eval takes the JSON form as its qrel argument as it is.
    evaluator = pytrec_eval.RelevanceEvaluator(from_json, {"recall"})
    assert set(evaluator.evaluate({"q1": {"d1": 1.0}})) == {"q1"}


def test_ir_measures_loads_the_trec_and_json_exports_as_the_version_holds_them(reader, version):
    import ir_measures

    expected = version_labels(version)
    from_trec: dict = {}
    for qrel in ir_measures.read_trec_qrels(download(reader)):
        from_trec.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert from_trec == expected
    from_json: dict = {}
    for qrel in ir_measures.util.QrelsConverter(json.loads(download(reader, format="json"))).as_namedtuple_iter():
        from_json.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert from_json == expected
