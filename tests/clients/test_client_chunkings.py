"""GoldsetClient against a live server: a chunking uploaded and read back, a document with its
chunks, labels with spans and hops imported, and a version's evidence pulled as jsonl and json."""

import pytest

from goldenset.models import Page
from goldenset.services import version_publish
from goldset_client import GoldsetAPIError
from tests.api import SLUG

CHUNKS = [
    {"chunk_id": "d1#0", "doc_id": "d1", "start": 0, "end": 4, "text": "text"},
    {"chunk_id": "d1#1", "doc_id": "d1", "start": 5, "end": 10},
]


def test_a_chunking_goes_up_and_reads_back(client):
    assert client.upload_chunks(SLUG, "fixed", CHUNKS)["chunks"] == 2
    assert [(c["name"], c["chunk_count"]) for c in client.chunkings(SLUG)] == [("fixed", 2)]
    assert client.chunks(SLUG, "fixed") == [{k: v for k, v in chunk.items() if k != "text"} for chunk in CHUNKS]
    document = client.document(SLUG, "d1", chunking="fixed")
    assert document["text"] == "text of d1" and [c["chunk_id"] for c in document["chunks"]["fixed"]] == ["d1#0", "d1#1"]
    with pytest.raises(GoldsetAPIError) as caught:
        client.upload_chunks(SLUG, "bad", [{"chunk_id": "x", "doc_id": "nope", "start": 0, "end": 1}])
    assert caught.value.problems == ["chunks:1: chunk 'x': doc id 'nope' is not in corpus 'tiny'"]


def test_labels_with_spans_and_hops_go_in_and_come_back_in_jsonl_and_json(client, golden_set, manager):
    Page.objects.filter(doc_id="d5").update(duplicate_of=Page.objects.get(doc_id="d1"))
    client.import_labels(SLUG, [{"query_id": "q3", "doc_id": "d2", "grade": 2, "start": 0, "end": 4, "hop": "first"}])
    client.upload_chunks(SLUG, "fixed", CHUNKS)
    client.import_labels(SLUG, [{"query_id": "q3", "doc_id": "d1#1", "grade": 1}], chunking="fixed")
    version_publish(golden_set=golden_set, user=manager)
    for fmt in ("jsonl", "json"):
        qrels = client.qrels(SLUG, 2, format=fmt)
        labels = qrels.labels()
        assert labels["q3"]["d2"] == {"grade": 2, "hop": "first", "spans": [{"start": 0, "end": 4, "grade": 2}]}
        assert labels["q3"]["d1"] == {"grade": 1, "spans": [{"start": 5, "end": 10, "grade": 1}]}
        assert qrels.to_dict()["q3"] == {"d1": 1, "d2": 2}
        assert qrels.duplicates() == {"d5": "d1"}
