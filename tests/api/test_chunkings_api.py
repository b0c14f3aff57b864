"""The chunkings of a set's corpus through the API: list, upload (manager only), a chunking's
chunks paged, a document with its chunks; labels with spans and hops sent as JSON items or on
chunk ids; and who may do each."""

import json

import pytest

from goldenset.chunkings import chunking_import
from goldenset.models import Chunking, EvidenceSpan, Judgment
from lib.evidence_formats import ChunkLine
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"
# The factories' pages read "text of d1" (10 characters).
CHUNKS = "".join(
    json.dumps(chunk) + "\n"
    for chunk in (
        {"chunk_id": "d1#0", "doc_id": "d1", "start": 0, "end": 4, "text": "text"},
        {"chunk_id": "d1#1", "doc_id": "d1", "start": 5, "end": 10},
        {"chunk_id": "d2#0", "doc_id": "d2", "start": 0, "end": 10},
    )
)


@pytest.fixture
def chunked(golden_set):
    chunking_import(corpus=golden_set.corpus, name="halves", records=[ChunkLine(1, "d1#a", "d1", 0, 4), ChunkLine(2, "d1#b", "d1", 5, 10)])
    return golden_set


def reads():
    return [BASE + "chunkings/", BASE + "chunkings/halves/chunks/", BASE + "document/?doc_id=d1"]


def upload(client, body: str = CHUNKS, name: str = "fixed"):
    return client.post(BASE + f"chunkings/?name={name}", body, content_type="text/plain")


def test_a_reader_lists_chunkings_pages_chunks_and_reads_a_document(chunked, token):
    client = client_for(token("read", chunked))
    listed = client.get(BASE + "chunkings/").json()
    assert [(c["name"], c["chunk_count"], c["document_count"]) for c in listed] == [("halves", 2, 1)]
    page = client.get(BASE + "chunkings/halves/chunks/", {"limit": 1}).json()
    assert page["count"] == 2 and page["results"] == [{"chunk_id": "d1#a", "doc_id": "d1", "start": 0, "end": 4}]
    document = client.get(BASE + "document/", {"doc_id": "d1"}).json()
    assert document["text"] == "text of d1" and document["duplicate_of"] is None
    assert document["chunks"] == {
        "halves": [{"chunk_id": "d1#a", "doc_id": "d1", "start": 0, "end": 4}, {"chunk_id": "d1#b", "doc_id": "d1", "start": 5, "end": 10}]
    }
    assert_error(client.get(BASE + "chunkings/other/chunks/"), 404)
    assert_error(client.get(BASE + "document/", {"doc_id": "nope"}), 404)
    assert_error(client.get(BASE + "document/"), 400)


def test_a_manager_uploads_a_chunking_all_or_nothing(golden_set, token):
    client = client_for(token("write", golden_set))
    response = upload(client)
    assert response.status_code == 201, response.content
    assert response.json() == {"corpus": SLUG, "chunking": "fixed", "chunks": 3, "documents": 2, "replaced": False}
    assert_error(upload(client), 409, "conflict")
    bad = '{"chunk_id": "x", "doc_id": "d1", "start": 0, "end": 99}\n{"chunk_id": "y", "doc_id": "zz", "start": 0, "end": 1}\n'
    error = assert_error(upload(client, bad, name="bad"), 422)
    assert error["problems"] == [
        "chunks:1: chunk 'x': end 99 is past the end of document 'd1' (10 characters)",
        "chunks:2: chunk 'y': doc id 'zz' is not in corpus 'tiny'",
    ]
    assert not Chunking.objects.filter(name="bad").exists()


@pytest.mark.parametrize("who", ["anonymous", "stranger", "annotator", "adjudicator", "manager", "read_token"])
def test_who_may_read_and_upload_chunkings(chunked, who, request, token):
    user = None if who in ("anonymous", "read_token") else request.getfixturevalue(who)
    if who == "anonymous":
        client = client_for()
    elif who == "read_token":
        client = client_for(token("read", chunked))
    else:
        client = client_for()
        client.force_authenticate(user)
    read_status = {"anonymous": 401, "stranger": 404, "annotator": 404, "adjudicator": 200, "manager": 200, "read_token": 200}[who]
    write_status = {"anonymous": 401, "stranger": 404, "annotator": 404, "adjudicator": 403, "manager": 201, "read_token": 403}[who]
    for url in reads():
        response = client.get(url)
        assert response.status_code == read_status, (url, response.content)
        if read_status >= 400:
            assert_error(response, read_status)
    response = upload(client)
    assert response.status_code == write_status, response.content
    if write_status >= 400:
        assert_error(response, write_status)
        assert not Chunking.objects.filter(name="fixed").exists()


def test_labels_sent_as_json_items_may_mark_spans_and_hops(golden_set, token):
    client = client_for(token("write", golden_set))
    labels = [
        {"query_id": "q3", "doc_id": "d1", "grade": 2, "start": 0, "end": 4, "hop": "a"},
        {"query_id": "q3", "doc_id": "d1", "grade": 1, "start": 5, "end": 10},
    ]
    response = client.post(BASE + "judgments/", {"labels": labels}, format="json")
    assert response.status_code == 201, response.content
    judgment = Judgment.objects.filter(query__query_id="q3", page__doc_id="d1").latest("id")
    assert (judgment.grade, judgment.hop) == (2, "a")
    assert list(judgment.spans.order_by("start").values_list("start", "end", "grade")) == [(0, 4, 2), (5, 10, 1)]
    error = assert_error(
        client.post(
            BASE + "judgments/", {"labels": [{"query_id": "q3", "doc_id": "d2", "grade": 1, "start": 0, "end": 50}]}, format="json"
        ),
        422,
    )
    assert error["problems"][0].startswith("labels[0]: query 'q3': span [0, 50) of 'd2' ends past the document's text")


def test_labels_on_chunk_ids_become_spans(chunked, token):
    client = client_for(token("write", chunked))
    response = client.post(BASE + "judgments/?chunking=halves", "q3 0 d1#b 2\n", content_type="text/plain")
    assert response.status_code == 201, response.content
    assert list(EvidenceSpan.objects.values_list("start", "end", "grade")) == [(5, 10, 2)]
    response = client.post(
        BASE + "judgments/", {"labels": [{"query_id": "q3", "doc_id": "d1#a", "grade": 1}], "chunking": "halves"}, format="json"
    )
    assert response.status_code == 201, response.content


def test_the_version_qrels_serve_spans_and_hops_in_jsonl(golden_set, token, manager):
    from goldenset.services import version_publish

    client = client_for(token("write", golden_set))
    labels = [{"query_id": "q3", "doc_id": "d1", "grade": 2, "start": 0, "end": 4, "hop": "a"}]
    client.post(BASE + "judgments/", {"labels": labels}, format="json")
    version_publish(golden_set=golden_set, user=manager)
    response = client.get(BASE + "versions/1/qrels", {"format": "jsonl"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert {"query_id": "q3", "doc_id": "d1", "grade": 2, "hop": "a", "spans": [{"start": 0, "end": 4, "grade": 2}]} in lines
