"""Qrels bring evidence spans and hops: span lines of one pair make one judgment graded the
highest of its lines, chunk ids of a chunking become spans of their documents, and a span
that does not fit its document is refused naming the line, with nothing written."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.chunkings import chunking_import
from goldenset.models import EvidenceSpan, Judgment
from goldenset.services import qrels_import, version_publish
from lib.errors import GoldsetError
from lib.evidence_formats import ChunkLine
from tests.support import factories

pytestmark = pytest.mark.django_db

TEXT = "The jet engine was first run in 1937. Frank Whittle designed it. It flew in 1941."


@pytest.fixture
def golden_set():
    pages = factories.pages("d1", "d2", "d3")
    pages[0].text = TEXT
    return factories.golden_set("tiny", pages=pages, qrels={("q1", "d2"): 1})


def jsonl(*records) -> list[str]:
    return [json.dumps(record) + "\n" for record in records]


def judgment(query_id, doc_id) -> Judgment:
    return Judgment.objects.filter(query__query_id=query_id, page__doc_id=doc_id).latest("id")


def spans_of(query_id, doc_id) -> list[tuple]:
    return list(judgment(query_id, doc_id).spans.order_by("start").values_list("start", "end", "grade", "text"))


def test_span_lines_of_a_pair_make_one_judgment_graded_the_highest_of_its_lines(golden_set):
    summary = qrels_import(
        golden_set_slug="tiny",
        lines=jsonl(
            {"query_id": "q1", "doc_id": "d1", "grade": 1, "start": 0, "end": 36},
            {"query_id": "q1", "doc_id": "d1", "grade": 2, "start": 38, "end": 63, "hop": "inventor"},
            {"query_id": "q2", "doc_id": "d3", "grade": 1, "hop": "h2"},
        ),
        source_name="q.jsonl",
        fmt="jsonl",
    )
    assert summary.judgments_created == 2
    assert judgment("q1", "d1").grade == 2 and judgment("q1", "d1").hop == "inventor"
    assert spans_of("q1", "d1") == [(0, 36, 1, TEXT[:36]), (38, 63, 2, TEXT[38:63])]
    assert judgment("q2", "d3").hop == "h2" and spans_of("q2", "d3") == []
    version = version_publish(golden_set=golden_set)
    assert (version.span_count, version.hop_count) == (2, 2)


def test_a_line_without_offsets_grades_the_document_beside_its_spans(golden_set):
    qrels_import(
        golden_set_slug="tiny",
        lines=jsonl(
            {"query_id": "q1", "doc_id": "d1", "grade": 3},
            {"query_id": "q1", "doc_id": "d1", "grade": 1, "start": 0, "end": 36},
        ),
        source_name="q.jsonl",
        fmt="jsonl",
    )
    assert judgment("q1", "d1").grade == 3 and spans_of("q1", "d1") == [(0, 36, 1, TEXT[:36])]


def test_csv_qrels_with_span_and_hop_columns(golden_set):
    text = "query_id,doc_id,relevance,start,end,hop\nq1,d1,2,38,63,who\nq1,d1,1,0,36,who\nq2,d3,1,,,\n"
    qrels_import(golden_set_slug="tiny", lines=text.splitlines(keepends=True), source_name="q.csv", fmt="csv")
    assert judgment("q1", "d1").grade == 2 and judgment("q1", "d1").hop == "who"
    assert [span[:3] for span in spans_of("q1", "d1")] == [(0, 36, 1), (38, 63, 2)]
    assert judgment("q2", "d3").grade == 1


def test_the_import_qrels_command_reads_jsonl_with_spans_and_hops(golden_set, tmp_path, capsys):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(jsonl({"query_id": "q1", "doc_id": "d1", "grade": 2, "start": 38, "end": 63, "hop": "who"})))
    call_command("import_qrels", str(path), "--golden-set", "tiny", "--format", "jsonl", verbosity=0)
    assert spans_of("q1", "d1")[0][:3] == (38, 63, 2)
    assert "evidence spans: 1, pairs with a hop: 1" in capsys.readouterr().out


def test_bad_spans_are_each_named_by_line_and_ids_and_nothing_is_written(golden_set):
    before = (Judgment.objects.count(), EvidenceSpan.objects.count())
    with pytest.raises(GoldsetError) as caught:
        qrels_import(
            golden_set_slug="tiny",
            lines=jsonl(
                {"query_id": "q1", "doc_id": "d1", "grade": 2, "start": 0, "end": 999},
                {"query_id": "q2", "doc_id": "d1", "grade": 2, "start": 10, "end": 10},
                {"query_id": "q3", "doc_id": "d1", "grade": 1, "start": 0, "end": 20},
                {"query_id": "q3", "doc_id": "d1", "grade": 1, "start": 10, "end": 30},
            ),
            source_name="q.jsonl",
            fmt="jsonl",
        )
    problems = caught.value.problems
    assert any(p.startswith("q.jsonl:1: query 'q1': span [0, 999) of 'd1' ends past the document's text (81 characters)") for p in problems)
    assert any(p.startswith("q.jsonl:2: query 'q2': span [10, 10) of 'd1' is empty or reversed") for p in problems)
    assert any(p.startswith("q.jsonl:3: query 'q3': span [10, 30) of 'd1' overlaps the span before it") for p in problems)
    assert (Judgment.objects.count(), EvidenceSpan.objects.count()) == before


def test_spans_on_unknown_documents_and_offsets_that_are_not_numbers_name_their_line(golden_set):
    with pytest.raises(GoldsetError) as caught:
        qrels_import(
            golden_set_slug="tiny",
            lines=jsonl(
                {"query_id": "q1", "doc_id": "dx", "grade": 2, "start": 0, "end": 5},
                {"query_id": "q1", "doc_id": "d1", "grade": 2, "start": "0", "end": 5},
            ),
            source_name="q.jsonl",
            fmt="jsonl",
        )
    assert caught.value.problems == [
        "q.jsonl:2: ('q1', 'd1'): span offsets must be whole numbers and its grade an integer, found start '0', end 5"
    ]
    with pytest.raises(GoldsetError) as caught:
        qrels_import(
            golden_set_slug="tiny",
            lines=jsonl({"query_id": "q1", "doc_id": "dx", "grade": 2, "start": 0, "end": 5}),
            source_name="q.jsonl",
            fmt="jsonl",
        )
    assert caught.value.problems == ["q.jsonl:1: doc id 'dx' is not in the corpus"]


def test_a_pair_given_two_hops_is_refused(golden_set):
    with pytest.raises(GoldsetError) as caught:
        qrels_import(
            golden_set_slug="tiny",
            lines=jsonl(
                {"query_id": "q1", "doc_id": "d1", "grade": 1, "hop": "a"}, {"query_id": "q1", "doc_id": "d1", "grade": 1, "hop": "b"}
            ),
            source_name="q.jsonl",
            fmt="jsonl",
        )
    assert caught.value.problems == ["q.jsonl:2: pair ('q1', 'd1') has hop 'b', but an earlier line gave it 'a'"]


def test_qrels_on_chunks_become_merged_spans_of_their_documents(golden_set):
    chunks = [
        ChunkLine(1, "c0", "d1", 0, 20),
        ChunkLine(2, "c1", "d1", 15, 40),
        ChunkLine(3, "c2", "d1", 40, 60),
        ChunkLine(4, "c3", "d1", 60, 81),
    ]
    chunking_import(corpus=golden_set.corpus, name="fixed", records=chunks)
    qrels_import(
        golden_set_slug="tiny",
        lines=["q1 0 c0 1\n", "q1 0 c1 2\n", "q1 0 c3 0\n", "q2 0 c2 1\n"],
        source_name="chunks.qrels",
        chunking="fixed",
    )
    # c0 and c1 overlap: one span, graded the higher; c3 graded 0 marks no evidence.
    assert judgment("q1", "d1").grade == 2 and [s[:3] for s in spans_of("q1", "d1")] == [(0, 40, 2)]
    assert [s[:3] for s in spans_of("q2", "d1")] == [(40, 60, 1)]


def test_qrels_on_chunks_refuse_an_unknown_chunk_or_chunking(golden_set, tmp_path):
    chunking_import(corpus=golden_set.corpus, name="fixed", records=[ChunkLine(1, "c0", "d1", 0, 20)])
    with pytest.raises(GoldsetError) as caught:
        qrels_import(golden_set_slug="tiny", lines=["q1 0 c0 1\n", "q1 0 c9 1\n"], source_name="f", chunking="fixed")
    assert caught.value.problems == ["f:2: chunk id 'c9' is not a chunk of 'fixed'"]
    path = tmp_path / "f.qrels"
    path.write_text("q1 0 c0 1\n")
    with pytest.raises(CommandError, match="corpus 'tiny' has no chunking 'other'"):
        call_command("import_qrels", str(path), "--golden-set", "tiny", "--chunking", "other", verbosity=0)
    call_command("import_qrels", str(path), "--golden-set", "tiny", "--chunking", "fixed", verbosity=0)
    assert [s[:3] for s in spans_of("q1", "d1")] == [(0, 20, 1)]


def test_trec_qrels_import_as_before(golden_set):
    summary = qrels_import(golden_set_slug="tiny", lines=["q1 0 d1 2\n", "q1 0 d1 2\n"], source_name="f")
    assert (summary.judgments_created, summary.duplicate_lines) == (1, 1)
    assert not EvidenceSpan.objects.exists() and judgment("q1", "d1").hop == ""
