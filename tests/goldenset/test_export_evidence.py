"""A version's JSON and JSON lines exports carry each label's hop and spans and the duplicate
groups, and the export of a version with none of them is the same, byte for byte, as before
they existed; a JSON lines export imports back to the same evidence."""

import io
import json
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command

from goldenset.models import EvidenceSpan, Page
from goldenset.services import judgment_record, membership_grant, qrels_import, version_publish
from goldenset.spans import Span
from lib.errors import ConflictError

pytestmark = pytest.mark.django_db

TEXT = "The jet engine was first run in 1937. Frank Whittle designed it. It flew in 1941."


def export(fmt: str, slug: str = "tiny") -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "out"
        call_command("export_qrels", slug, "--format", fmt, "--output", str(path), stderr=io.StringIO())
        return path.read_text(encoding="utf-8")


def test_a_version_without_evidence_exports_as_before_byte_for_byte(golden_set):
    version_publish(golden_set=golden_set)
    assert export("json") == '{"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}\n'
    assert export("jsonl") == (
        '{"query_id": "q1", "doc_id": "d1", "grade": 2}\n'
        '{"query_id": "q1", "doc_id": "d2", "grade": 0}\n'
        '{"query_id": "q2", "doc_id": "d3", "grade": 1}\n'
    )
    assert export("trec") == "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"


@pytest.fixture
def evidence_set(golden_set, make_user):
    Page.objects.filter(doc_id="d4").update(text=TEXT)
    # d5 is a duplicate of d1 (what goldenset.duplicates would find).
    Page.objects.filter(doc_id="d5").update(duplicate_of=Page.objects.get(doc_id="d1"))
    query, page = golden_set.queries.get(query_id="q3"), Page.objects.get(doc_id="d4")
    judgment_record(query=query, page=page, grade=2, annotator=make_user("ann"), spans=[Span(38, 63), Span(0, 36, 1)], hop="inventor")
    version_publish(golden_set=golden_set)
    return golden_set


def test_the_jsonl_export_carries_hops_spans_and_duplicate_groups(evidence_set):
    lines = [json.loads(line) for line in export("jsonl").splitlines()]
    assert lines[:3] == [
        {"query_id": "q1", "doc_id": "d1", "grade": 2},
        {"query_id": "q1", "doc_id": "d2", "grade": 0},
        {"query_id": "q2", "doc_id": "d3", "grade": 1},
    ]
    assert lines[3] == {
        "query_id": "q3",
        "doc_id": "d4",
        "grade": 2,
        "hop": "inventor",
        "spans": [{"start": 0, "end": 36, "grade": 1}, {"start": 38, "end": 63, "grade": 2}],
    }
    assert lines[4:] == [{"doc_id": "d5", "duplicate_of": "d1"}]


def test_the_json_export_wraps_the_qrels_with_their_evidence(evidence_set):
    document = json.loads(export("json"))
    assert document == {
        "qrels": {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 2}},
        "hops": {"q3": {"d4": "inventor"}},
        "spans": {"q3": {"d4": [{"start": 0, "end": 36, "grade": 1}, {"start": 38, "end": 63, "grade": 2}]}},
        "duplicates": {"d5": "d1"},
    }
    # The other forms carry grades only, as before.
    assert export("trec").splitlines()[-1] == "q3 0 d4 2"


def test_a_jsonl_export_imports_back_to_the_same_spans_and_hops(evidence_set):
    before = EvidenceSpan.objects.count()
    qrels_import(golden_set_slug="tiny", lines=export("jsonl").splitlines(keepends=True), source_name="v1.jsonl", fmt="jsonl")
    assert EvidenceSpan.objects.count() == before + 2
    # The labels, hops and spans read back are the version's own: a publish finds nothing new.
    with pytest.raises(ConflictError, match="nothing changed"):
        version_publish(golden_set=evidence_set)


def test_the_api_and_the_page_serve_the_same_evidence_exports(evidence_set, client, make_user):
    reader = make_user("reader")
    membership_grant(user=reader, golden_set=evidence_set, role="adjudicator")
    client.force_login(reader)
    for fmt in ("json", "jsonl"):
        response = client.get(f"/sets/tiny/versions/1/qrels.{fmt}")
        assert response.status_code == 200
        assert b"".join(response.streaming_content).decode() == export(fmt)
