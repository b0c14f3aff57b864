"""A chunking comes in whole or not at all: every bad chunk is named by its line and chunk
id, and Goldset can cut the documents itself (chunk_documents, import_beir --chunking)."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.chunkings import chunk_documents, chunking_cut, chunking_delete, chunking_import
from goldenset.models import Chunk, Chunking
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.evidence_formats import ChunkLine, read_chunk_lines
from tests.goldenset.test_import_beir import write_beir
from tests.support import factories

pytestmark = pytest.mark.django_db

TEXT = "The jet engine was first run in 1937. Frank Whittle designed it. It flew in 1941."


@pytest.fixture
def golden_set():
    pages = factories.pages("d1", "d2", "d3")
    pages[0].text = TEXT
    return factories.golden_set("tiny", pages=pages, qrels={("q1", "d1"): 2})


def chunk_file(tmp_path, records) -> str:
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


def test_import_chunks_writes_the_chunks_and_counts_them(golden_set, tmp_path, capsys):
    path = chunk_file(
        tmp_path,
        [
            {"chunk_id": "d1#0", "doc_id": "d1", "start": 0, "end": 37, "text": TEXT[:37]},
            {"chunk_id": "d1#1", "doc_id": "d1", "start": 30, "end": len(TEXT)},
            {"chunk_id": "d2#0", "doc_id": "d2", "start": 0, "end": 5},
        ],
    )
    call_command("import_chunks", path, "--corpus", "tiny", "--chunking", "fixed-40", verbosity=0)
    chunking = Chunking.objects.get(corpus=golden_set.corpus, name="fixed-40")
    assert (chunking.chunk_count, chunking.document_count) == (3, 2)
    assert list(chunking.chunks.order_by("chunk_id").values_list("chunk_id", "page__doc_id", "start", "end")) == [
        ("d1#0", "d1", 0, 37),
        ("d1#1", "d1", 30, len(TEXT)),
        ("d2#0", "d2", 0, 5),
    ]
    assert "chunks: 3" in capsys.readouterr().out


def test_bad_chunks_are_each_named_by_line_and_id_and_nothing_is_written(golden_set, tmp_path):
    path = chunk_file(
        tmp_path,
        [
            {"chunk_id": "a", "doc_id": "d1", "start": 0, "end": 10},
            {"chunk_id": "b", "doc_id": "nope", "start": 0, "end": 10},
            {"chunk_id": "c", "doc_id": "d1", "start": 10, "end": 10},
            {"chunk_id": "d", "doc_id": "d1", "start": 20, "end": 5},
            {"chunk_id": "e", "doc_id": "d1", "start": 0, "end": 999},
            {"chunk_id": "a", "doc_id": "d1", "start": 1, "end": 2},
            {"chunk_id": "f", "doc_id": "d1", "start": 0, "end": 3, "text": "Jet"},
            {"chunk_id": "g", "doc_id": "d1", "start": "0", "end": 3},
            {"chunk_id": "h", "doc_id": "d1", "start": -1, "end": 3},
            "not json",
        ],
    )
    with pytest.raises(CommandError) as caught:
        call_command("import_chunks", path, "--corpus", "tiny", "--chunking", "c1", verbosity=0)
    message = str(caught.value)
    for expected in (
        "chunks.jsonl:2: chunk 'b': doc id 'nope' is not in corpus 'tiny'",
        "chunks.jsonl:3: chunk 'c' is empty or reversed",
        "chunks.jsonl:4: chunk 'd' is empty or reversed",
        "chunks.jsonl:5: chunk 'e': end 999 is past the end of document 'd1' (81 characters)",
        "chunks.jsonl:6: chunk 'a' is given twice (first on line 1)",
        "chunks.jsonl:7: chunk 'f': its text is not the text of 'd1' at [0, 3)",
        "chunks.jsonl:8: chunk 'g': start and end must be whole numbers",
        "chunks.jsonl:9: chunk 'h': start -1 is before the document's text",
        "chunks.jsonl:10: not valid JSON",
    ):
        assert expected in message
    assert not Chunking.objects.exists() and not Chunk.objects.exists()


def test_the_name_documents_is_reserved_and_a_taken_name_needs_replace(golden_set):
    records = [ChunkLine(1, "x", "d1", 0, 5)]
    with pytest.raises(GoldsetError, match="reserved"):
        chunking_import(corpus=golden_set.corpus, name="documents", records=records)
    chunking_import(corpus=golden_set.corpus, name="c1", records=records)
    with pytest.raises(ConflictError, match="has a chunking 'c1' already"):
        chunking_import(corpus=golden_set.corpus, name="c1", records=records)
    summary = chunking_import(corpus=golden_set.corpus, name="c1", records=[ChunkLine(1, "y", "d2", 0, 4)], replace=True)
    assert summary.replaced and list(Chunk.objects.values_list("chunk_id", flat=True)) == ["y"]
    chunking_delete(chunking=Chunking.objects.get(name="c1"))
    assert not Chunk.objects.exists()


def test_an_unknown_corpus_is_refused(golden_set, tmp_path):
    path = chunk_file(tmp_path, [{"chunk_id": "a", "doc_id": "d1", "start": 0, "end": 1}])
    with pytest.raises(CommandError, match="no corpus 'other'"):
        call_command("import_chunks", path, "--corpus", "other", "--chunking", "c1", verbosity=0)


def test_a_missing_field_names_its_line():
    problems = ProblemCollector()
    assert list(read_chunk_lines(['{"chunk_id": "a", "doc_id": "d", "start": 0}\n'], "f", problems)) == []
    assert problems.problems == ["f:1: field 'end' is missing"]


def test_chunk_documents_ends_chunks_at_sentences_and_overlaps_them():
    text = " ".join(f"Sentence number {n} is here." for n in range(20))
    chunks = list(chunk_documents([("doc", text)], 100, 20))
    assert [chunk.chunk_id for chunk in chunks[:3]] == ["doc#0", "doc#1", "doc#2"]
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for chunk in chunks:
        assert 0 < chunk.end - chunk.start <= 100
        assert not text[chunk.start].isspace() and not text[chunk.end - 1].isspace()
    for before, after in zip(chunks, chunks[1:]):
        assert after.start < before.end  # they overlap
        assert after.start > before.start
    assert all(chunk.end == len(text) or text[chunk.end].isspace() for chunk in chunks)  # never inside a word
    assert sum(text[chunk.end - 1] == "." for chunk in chunks) >= len(chunks) - 1  # at a sentence's end where one was near
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_chunk_documents_cuts_a_text_without_boundaries_at_the_size_and_skips_blank_documents():
    chunks = list(chunk_documents([("a", "x" * 250), ("b", "   "), ("c", "")], 100, 0))
    assert [(c.chunk_id, c.start, c.end) for c in chunks] == [("a#0", 0, 100), ("a#1", 100, 200), ("a#2", 200, 250)]


def test_chunk_documents_refuses_an_overlap_past_half_the_size():
    with pytest.raises(GoldsetError, match="overlap 60"):
        list(chunk_documents([("a", "x")], 100, 60))


def test_chunking_cut_chunks_every_document_with_text(golden_set):
    summary = chunking_cut(corpus=golden_set.corpus, name="fixed-40", chunk_chars=40, overlap=10)
    chunking = Chunking.objects.get(name="fixed-40")
    assert summary.documents == 3 == chunking.document_count
    assert chunking.chunk_count == Chunk.objects.filter(chunking=chunking).count() > 3


def test_import_beir_cuts_a_chunking_as_it_imports(tmp_path):
    corpus = [{"_id": "a", "title": "A", "text": TEXT}, {"_id": "b", "title": "B", "text": "short"}]
    folder = write_beir(tmp_path / "set", corpus, [{"_id": "q", "text": "who"}], "q\ta\t1\n")
    call_command("import_beir", str(folder), "--slug", "s", "--chunking", "fixed-40", "--chunk-chars", "40", "--overlap", "8", verbosity=0)
    chunks = list(Chunk.objects.filter(chunking__name="fixed-40").order_by("page__doc_id", "start").values_list("chunk_id", "start", "end"))
    assert chunks[0] == ("a#0", 0, 37) and chunks[-1] == ("b#0", 0, 5)


def test_import_beir_with_a_bad_chunk_size_writes_nothing(tmp_path):
    folder = write_beir(tmp_path / "set", [{"_id": "a", "text": TEXT}], [{"_id": "q", "text": "who"}], "q\ta\t1\n")
    with pytest.raises(CommandError, match="overlap 30"):
        call_command("import_beir", str(folder), "--slug", "s", "--chunking", "c", "--chunk-chars", "40", "--overlap", "30", verbosity=0)
    with pytest.raises(CommandError, match="go together"):
        call_command("import_beir", str(folder), "--slug", "s", "--chunking", "c", verbosity=0)
    from goldenset.models import Corpus

    assert not Corpus.objects.exists()


def test_the_golden_set_page_lists_the_corpus_chunkings_with_their_counts(golden_set, client, owner):
    from django.urls import reverse

    from goldenset.services import membership_grant

    chunking_cut(corpus=golden_set.corpus, name="fixed-40", chunk_chars=40)
    membership_grant(user=owner, golden_set=golden_set, role="manager")
    client.force_login(owner)
    body = client.get(reverse("golden_set", kwargs={"slug": "tiny"})).content.decode()
    chunking = Chunking.objects.get(name="fixed-40")
    assert f"fixed-40</span>: {chunking.chunk_count} chunks of 3 documents" in body
