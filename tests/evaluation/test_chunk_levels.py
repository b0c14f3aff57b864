"""The rules of the two levels (SEMANTICS.md, "Documents, chunkings and levels"), each on a
case small enough to work out by hand."""

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import chunk_inputs
from evaluation.level_figures import evaluation_levels
from evaluation.models import Evaluation, Run, Score
from evaluation.services import evaluation_compute, run_import
from goldenset.models import Chunk, Chunking, Page, Query
from goldenset.services import judgment_record, version_publish
from goldenset.spans import Span
from lib import levels
from lib.errors import GoldsetError
from lib.formats import JsonRecord
from lib.runs import RankedRun


def _text(n: int) -> str:
    """300 characters of words of their own: documents that are no duplicates of one another."""
    words = " ".join(f"w{n}x{i}" for i in range(100))
    return words[:300]


PAGES = [JsonRecord(line=n, id=d, title=d, text=_text(n), metadata={}) for n, d in enumerate(["d1", "d2", "d3", "d4"], 1)]
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set("levels", manager="owner", pages=PAGES, qrels={("q2", "d2"): 1}, k_first=2, k_final=1),
]
CUTS = {"d1": [(0, 100), (100, 200), (200, 300)], "d2": [(0, 150), (150, 300)], "d3": [(0, 300)], "d4": [(0, 300)]}


def ranked(query_docs: dict[str, list[tuple[int, float]]]) -> RankedRun:
    keys = [key for docs in query_docs.values() for key, _ in docs]
    scores = [score for docs in query_docs.values() for _, score in docs]
    offsets = np.concatenate(([0], np.cumsum([len(docs) for docs in query_docs.values()])))
    return RankedRun(
        query_ids=tuple(query_docs),
        offsets=offsets.astype(np.int64),
        doc_keys=np.asarray(keys, np.int64),
        scores=np.asarray(scores, np.float64),
        external_doc_ids=(),
        depth=1000,
        dropped_by_depth=0,
    )


# --- the arithmetic ---------------------------------------------------------------------


def test_a_document_stands_at_its_first_chunk_and_its_later_chunks_are_dropped():
    run = ranked({"q1": [(11, 9.0), (21, 8.0), (12, 7.0), (31, 6.0)]})
    documents = np.asarray([1, 2, 1, 3])
    found = levels.documents_in_order(run, documents, ranks=documents, rank_count=4)
    assert found.doc_keys.tolist() == [1, 2, 3]
    assert found.scores.tolist() == [9.0, 8.0, 6.0]
    assert found.offsets.tolist() == [0, 3]


def test_documents_tied_on_their_best_score_are_ordered_by_doc_id_descending():
    # Chunk 11 of document A (doc id rank 0) comes before chunk 21 of B (rank 1) in the
    # chunk run; at document level the tie is trec_eval's: doc id descending, B first.
    run = ranked({"q1": [(11, 5.0), (21, 5.0), (12, 4.0)], "q2": [(21, 1.0)]})
    found = levels.documents_in_order(run, np.asarray([100, 200, 100, 200]), ranks=np.asarray([0, 1, 0, 1]), rank_count=2)
    assert found.doc_keys.tolist() == [200, 100, 200]
    assert found.offsets.tolist() == [0, 2, 3]


@pytest.mark.parametrize("tied", [3, 40])  # sorted in place, and past SORTED_IN_PLACE_UP_TO by a sort
def test_short_and_long_ties_are_ordered_alike_by_doc_id_descending(tied):
    rng = np.random.default_rng(tied)
    ranks = rng.permutation(tied + 2)  # each entry a document of its own, in a shuffled doc id order
    run = ranked({"q1": [(int(r) + 1, 5.0) for r in ranks[:tied]] + [(int(r) + 1, 4.0) for r in ranks[tied:]]})
    found = levels.documents_in_order(run, run.doc_keys, ranks=run.doc_keys - 1, rank_count=tied + 2)
    expected = sorted(run.doc_keys[:tied].tolist(), reverse=True) + sorted(run.doc_keys[tied:].tolist(), reverse=True)
    assert found.doc_keys.tolist() == expected


def test_a_chunk_carries_the_best_span_it_overlaps_enough_and_0_otherwise():
    chunks = levels.ChunkTable(
        keys=np.arange(1, 6),
        pages=np.asarray([7, 7, 7, 8, 8]),
        starts=np.asarray([0, 100, 200, 0, 150]),
        ends=np.asarray([100, 200, 300, 150, 300]),
    )
    projection = levels.project_labels(
        label_queries=np.asarray([0, 1]),
        label_pages=np.asarray([7, 8]),
        label_grades=np.asarray([3, 2]),
        # q0's spans on page 7: [90, 300) graded 3 meets chunk 1 by 10 characters (neither
        # 100 nor half of 300), chunk 2 by 100 and chunk 3 by 100; [20, 60) graded 1 lies in chunk 1.
        span_queries=np.asarray([0, 0]),
        span_pages=np.asarray([7, 7]),
        span_starts=np.asarray([20, 90]),
        span_ends=np.asarray([60, 300]),
        span_grades=np.asarray([1, 3]),
        chunks=chunks,
        min_chars=100,
        min_share=0.5,
    )
    found = {(int(q), int(chunks.keys[c])): int(g) for q, c, g in zip(projection.label_rows, projection.chunk_rows, projection.grades)}
    # [90, 300) is 210 long: chunk 1 holds 10 of it (no), chunks 2 and 3 hold 100 each (yes).
    # q1's label has no span: each chunk of page 8 carries the document's grade.
    assert found == {(0, 1): 1, (0, 2): 3, (0, 3): 3, (1, 4): 2, (1, 5): 2}


def test_a_span_shorter_than_the_characters_counts_by_its_share():
    chunks = levels.ChunkTable(keys=np.asarray([1, 2]), pages=np.asarray([7, 7]), starts=np.asarray([0, 50]), ends=np.asarray([50, 100]))
    projection = levels.project_labels(
        label_queries=np.asarray([0]),
        label_pages=np.asarray([7]),
        label_grades=np.asarray([2]),
        span_queries=np.asarray([0]),
        span_pages=np.asarray([7]),
        span_starts=np.asarray([20]),
        span_ends=np.asarray([60]),  # 40 long: chunk 1 holds 30 (share 0.75), chunk 2 holds 10 (0.25)
        span_grades=np.asarray([2]),
        chunks=chunks,
        min_chars=100,
        min_share=0.5,
    )
    assert projection.grades.tolist() == [2, 0]


def test_evidence_recall_counts_each_covered_character_once():
    # One query, evidence [100, 200) of page 7; its top 3 chunks: [50, 150) and [120, 180)
    # of page 7 (overlapping: 100..180 covered once, 80 characters) and page 8's [0, 500).
    chunks = levels.ChunkTable(
        keys=np.asarray([1, 2, 3]), pages=np.asarray([7, 7, 8]), starts=np.asarray([50, 120, 0]), ends=np.asarray([150, 180, 500])
    )
    top = levels.top_chunks_cover(
        starts=np.asarray([0]),
        ends=np.asarray([3]),
        entry_rows=np.asarray([0, 1, 2]),
        entry_label=np.asarray([0, 0, -1]),  # page 8 is not labelled for the query
        chunks=chunks,
        evidence_offsets=np.asarray([0, 1]),
        evidence_pages=np.asarray([7]),
        evidence_starts=np.asarray([100]),
        evidence_ends=np.asarray([200]),
        ks=[3, 1],
        prompt_k=2,
    )
    # ks in the order asked: the top 3 cover 80, the top 1 ([50, 150)) covers 50.
    assert top.covered.tolist() == [[80], [50]]
    # The prompt gets the first two chunks whole, their overlap twice: 100 + 60.
    assert top.characters.tolist() == [160]


def test_evidence_covered_by_many_chunks_of_one_page_counts_each_character_once():
    # 30 chunks of page 7, past SORTED_IN_PLACE_UP_TO, in a shuffled order: [10 i, 10 i + 15)
    # for i = 0..29, which together cover [0, 305); the evidence is [0, 400).
    order = np.random.default_rng(5).permutation(30)
    chunks = levels.ChunkTable(keys=np.arange(30), pages=np.full(30, 7), starts=order * 10, ends=order * 10 + 15)
    top = levels.top_chunks_cover(
        starts=np.asarray([0]),
        ends=np.asarray([30]),
        entry_rows=np.arange(30),
        entry_label=np.zeros(30, dtype=np.int64),
        chunks=chunks,
        evidence_offsets=np.asarray([0, 1]),
        evidence_pages=np.asarray([7]),
        evidence_starts=np.asarray([0]),
        evidence_ends=np.asarray([400]),
        ks=[30],
        prompt_k=30,
    )
    assert top.covered.tolist() == [[305]]
    assert top.characters.tolist() == [30 * 15]


# --- through the services ------------------------------------------------------------------


@pytest.fixture
def chunking(golden_set):
    made = Chunking.objects.create(corpus=golden_set.corpus, name="thirds")
    pages = {page.doc_id: page for page in Page.objects.filter(corpus=golden_set.corpus)}
    Chunk.objects.bulk_create(
        Chunk(chunking=made, chunk_id=f"{doc_id}#{i}", page=pages[doc_id], start=start, end=end)
        for doc_id, cuts in CUTS.items()
        for i, (start, end) in enumerate(cuts)
    )
    return made


@pytest.fixture
def version(golden_set, chunking, owner):
    # q1-d1 judged with one span [120, 180) graded 2: only chunk d1#1 holds enough of it.
    judgment_record(
        query=Query.objects.get(golden_set=golden_set, query_id="q1"),
        page=Page.objects.get(corpus=golden_set.corpus, doc_id="d1"),
        grade=2,
        annotator=owner,
        spans=[Span(120, 180)],
    )
    return version_publish(golden_set=golden_set)


def chunk_run(golden_set, name="chunks", lines=None):
    lines = lines or [
        "q1 Q0 d1#2 1 9 t\n",
        "q1 Q0 d1#1 2 8 t\n",
        "q1 Q0 d3#0 3 7 t\n",
        "q2 Q0 d2#1 1 9 t\n",
        "q2 Q0 d1#0 2 8 t\n",
        "q2 Q0 d2#0 3 7 t\n",
    ]
    return run_import(
        golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=name, stage="first_stage", name=name, chunking="thirds"
    )


def test_a_chunk_run_is_scored_at_both_levels_as_worked_out_by_hand(golden_set, version):
    run = chunk_run(golden_set)
    evaluation = evaluation_compute(run=run, version=version)
    document = {s.metric: s.value for s in Score.objects.filter(evaluation=evaluation, slice="")}
    chunk = {s.metric: s.value for s in Score.every_level.filter(evaluation=evaluation, level=Score.Level.CHUNK)}
    # Documents: q1 reads d1, d3 and q2 d2, d1: each query's relevant document is first.
    assert document["mrr"] == 1.0
    # Chunks: q1's relevant chunk d1#1 is second, q2's d2#1 (the whole document's grade) first.
    assert chunk["mrr"] == pytest.approx(0.75)
    # q1's evidence is 60 characters, covered by its second chunk; q2's the whole of d2
    # (300), half of it by its first chunk [150, 300).
    assert chunk["evidence_recall@1"] == pytest.approx((0 + 0.5) / 2)
    assert chunk["evidence_recall@2"] == pytest.approx((1 + 0.5) / 2)
    # Prompt tokens@1: 100 characters for q1, 150 for q2, over 4.
    assert Evaluation.objects.get(pk=evaluation.pk).prompt_tokens_k_final == pytest.approx(125 / 4)
    levels_found = evaluation_levels(evaluation)
    assert [level.name for level in levels_found] == ["document", "chunk"]
    assert levels_found[1].chunking == "thirds" and levels_found[1].prompt_tokens == pytest.approx(31.25)


def test_a_chunk_run_pools_the_documents_of_its_top_chunks_as_its_document_level_does(golden_set, version):
    from evaluation import scoring_inputs
    from evaluation.completeness import pooled_labels

    run = chunk_run(golden_set)
    qrels, _ = scoring_inputs.get_or_build(version)
    entries = chunk_inputs_run(run)
    documents = chunk_inputs.document_ranked(ranked=entries, version=version, chunking=run.chunking)
    for depth in (1, 2, 3, 100):
        pooled = chunk_inputs.documents_pooled(ranked=entries, version=version, chunking=run.chunking, depth=depth)
        assert pooled_labels(qrels, pooled, depth).tolist() == pooled_labels(qrels, documents, depth).tolist()
        # 3 chunks a query: from depth 3 each chunk only becomes its page, below it the
        # document level is read (2 documents a query).
        assert len(pooled) == (6 if depth >= 3 else 4)


def test_duplicates_in_a_run_of_documents_count_once_at_the_first(golden_set, chunking):
    d1 = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    Page.objects.filter(corpus=golden_set.corpus, doc_id="d4").update(duplicate_of=d1)
    version = version_publish(golden_set=golden_set)
    lines = ["q2 Q0 d4 1 9 t\n", "q2 Q0 d3 2 8 t\n", "q2 Q0 d1 3 7 t\n", "q2 Q0 d2 4 6 t\n"]
    run = run_import(golden_set=golden_set, lines=lines, source_name="docs.run", system="docs", stage="first_stage")
    found = chunk_inputs.document_ranked(ranked=chunk_inputs_run(run), version=version, chunking=None)
    keys = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("id", "doc_id"))
    assert [keys[k] for k in found.doc_keys.tolist()] == ["d1", "d3", "d2"]
    evaluation = evaluation_compute(run=run, version=version)
    assert Score.objects.get(evaluation=evaluation, slice="", metric="mrr").value == pytest.approx(1 / 3)


def chunk_inputs_run(run):
    from evaluation.selectors import run_ranked

    return run_ranked(run)


def test_a_run_of_an_unknown_chunking_is_refused_naming_it(golden_set, chunking):
    with pytest.raises(GoldsetError, match="unknown chunking 'halves'"):
        run_import(
            golden_set=golden_set, lines=["q1 Q0 d1#0 1 9 t\n"], source_name="x.run", system="x", stage="first_stage", chunking="halves"
        )
    assert not Run.objects.exists()


def test_a_run_whose_ids_are_not_chunks_of_its_chunking_is_refused_naming_line_and_id(golden_set, chunking):
    lines = ["q1 Q0 d1#0 1 9 t\n", "q1 Q0 d1 2 8 t\n", "q2 Q0 d9#0 1 9 t\n"]
    with pytest.raises(GoldsetError) as raised:
        chunk_run(golden_set, lines=lines)
    assert raised.value.problems == [
        "chunks.run:2: id 'd1' is not a chunk of chunking 'thirds'",
        "chunks.run:3: id 'd9#0' is not a chunk of chunking 'thirds'",
    ]
    assert not Run.objects.exists()


def test_import_run_names_the_chunking_and_refuses_an_unknown_one(golden_set, chunking, tmp_path):
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 d1#0 1 9 t\n", encoding="utf-8")
    with pytest.raises(CommandError, match="unknown chunking 'halves'"):
        call_command("import_run", str(path), golden_set="levels", system="s", stage="first_stage", chunking="halves")
    call_command("import_run", str(path), golden_set="levels", system="s", stage="first_stage", chunking="thirds")
    assert Run.objects.get().chunking == chunking


def test_the_run_page_shows_both_levels_labelled_and_says_which_is_which(client, golden_set, version, owner):
    run = chunk_run(golden_set)
    evaluation_compute(run=run, version=version)
    client.force_login(owner)
    body = client.get(reverse("run", kwargs={"slug": golden_set.slug, "run_id": run.id})).content.decode()
    assert "Document level and chunk level on v1 (chunking thirds)" in body
    assert "Document level maps each chunk to its document" in body
    assert "document (chunks mapped to their documents)" in body and "chunk (against the labels projected onto thirds)" in body
    assert "evidence_recall@1" in body and ">31</td>" in body  # prompt tokens@1: 125 characters / 4


def test_a_stranger_cannot_see_a_chunk_runs_page(client, golden_set, version, stranger):
    run = chunk_run(golden_set)
    client.force_login(stranger)
    assert client.get(reverse("run", kwargs={"slug": golden_set.slug, "run_id": run.id})).status_code == 404


def test_a_run_of_documents_shows_no_levels_table(client, golden_set, version, owner):
    run = run_import(golden_set=golden_set, lines=["q2 Q0 d2 1 9 t\n"], source_name="d.run", system="d", stage="first_stage")
    evaluation_compute(run=run, version=version)
    client.force_login(owner)
    body = client.get(reverse("run", kwargs={"slug": golden_set.slug, "run_id": run.id})).content.decode()
    assert 'id="levels"' not in body
    # Its corpus has a chunking: its chunk level holds evidence recall only (no metric:
    # they would be its document level's), for comparisons with the chunking's runs.
    assert set(Score.every_level.filter(level=Score.Level.CHUNK).values_list("metric", flat=True)) == {
        "evidence_recall@1",
        "evidence_recall@2",
    }


def test_a_run_of_documents_in_a_corpus_with_chunkings_gets_evidence_recall_and_prompt_tokens(golden_set, version):
    # Each document is one chunk, its whole text (300 characters): q1's top 1 is d1, which
    # holds all of q1's evidence [120, 180); q2's is d3, not its relevant d2 (300 characters
    # of evidence), and its top 2 adds d2.
    lines = ["q1 Q0 d1 1 9 t\n", "q1 Q0 d3 2 8 t\n", "q2 Q0 d3 1 9 t\n", "q2 Q0 d2 2 8 t\n"]
    run = run_import(golden_set=golden_set, lines=lines, source_name="docs.run", system="docs", stage="first_stage")
    evaluation = evaluation_compute(run=run, version=version)
    chunk = {s.metric: s.value for s in Score.every_level.filter(evaluation=evaluation, level=Score.Level.CHUNK)}
    assert chunk == {"evidence_recall@1": pytest.approx((1 + 0) / 2), "evidence_recall@2": pytest.approx((1 + 1) / 2)}
    assert evaluation.prompt_tokens_k_final == pytest.approx(300 / 4)
    [document, of_chunks] = evaluation_levels(evaluation)
    assert (document.chunking, of_chunks.name, of_chunks.prompt_tokens) == ("documents", "chunk", pytest.approx(75.0))


def test_a_duplicate_members_chunk_counts_at_chunk_level_as_its_groups_chunk_once(golden_set, chunking, owner):
    # d4 is d3's duplicate; both are one chunk [0, 300). q1-d3 is relevant with no span, so
    # d3#0 carries its grade; the run's d4#0 is that same chunk of the group, and d3#0 after
    # it is the group again: it counts once, at the first.
    d3 = Page.objects.get(corpus=golden_set.corpus, doc_id="d3")
    Page.objects.filter(corpus=golden_set.corpus, doc_id="d4").update(duplicate_of=d3)
    judgment_record(query=Query.objects.get(golden_set=golden_set, query_id="q1"), page=d3, grade=1, annotator=owner)
    version = version_publish(golden_set=golden_set)
    run = chunk_run(golden_set, lines=["q1 Q0 d4#0 1 9 t\n", "q1 Q0 d3#0 2 8 t\n", "q1 Q0 d2#0 3 7 t\n"])
    found = chunk_inputs.chunks_in_groups(ranked=chunk_inputs_run(run), version=version, chunking=chunking)
    keys = dict(Chunk.objects.filter(chunking=chunking).values_list("id", "chunk_id"))
    assert [keys[k] for k in found.doc_keys.tolist()] == ["d3#0", "d2#0"]
    evaluation = evaluation_compute(run=run, version=version)
    chunk = {s.metric: s.value for s in Score.every_level.filter(evaluation=evaluation, level=Score.Level.CHUNK)}
    # q1's one relevant chunk first; q2 (d2 relevant) not answered: 0, as trec_eval -c counts it.
    assert chunk["mrr"] == pytest.approx((1 + 0) / 2)
    assert chunk["recall@1"] == pytest.approx((1 + 0) / 2)
