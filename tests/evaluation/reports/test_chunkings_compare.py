"""The compare page with runs of two chunkings (evaluation.reports.chunkings): document
level, evidence recall and prompt tokens at k_final side by side, read in one line."""

import pytest
from django.urls import reverse

from evaluation.models import Run
from evaluation.reports.chunkings import (
    CHUNK_LEVEL,
    DOCUMENT_LEVEL,
    ChunkingSide,
    LevelRow,
    chunking_comparison,
    chunking_side,
)
from evaluation.services import evaluation_compute
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from tests.support import chunks, factories

SLUG = "chunked"
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        SLUG,
        manager="owner",
        pages=factories.pages(*(f"d{n}" for n in range(1, 9))),
        qrels={("q1", "d1"): 2, ("q2", "d3"): 1, ("q3", "d5"): 2},
        k_first=4,
        k_final=2,
    ),
]


def side(chunking, recall, evidence=None, tokens=None):
    return ChunkingSide(
        run_name=f"{chunking} run", chunking=chunking, document_recall=recall, evidence_recall=evidence, prompt_tokens=tokens
    )


def test_the_reading_says_the_points_of_evidence_and_the_change_in_tokens():
    comparison = chunking_comparison(
        version_number=3, k_final=8, a=side("documents", 0.80, 0.70, 1000.0), b=side("semantic-400", 0.82, 0.76, 1200.0)
    )
    assert comparison.evidence_points == pytest.approx(6.0)
    assert comparison.tokens_change == pytest.approx(0.2)
    assert comparison.tokens_change_text == "+20%"
    assert (
        comparison.reading == "semantic-400 finds 6.0 points more of the evidence than documents in the top 8, at 20% more prompt tokens."
    )


def test_the_reading_says_less_and_fewer_and_the_same():
    fewer = chunking_comparison(version_number=1, k_final=8, a=side("a", 0.8, 0.70, 1000.0), b=side("b", 0.8, 0.65, 500.0))
    assert fewer.reading == "b finds 5.0 points less of the evidence than a in the top 8, at 50% fewer prompt tokens."
    same = chunking_comparison(version_number=1, k_final=8, a=side("a", 0.8, 0.7, 1000.0), b=side("b", 0.8, 0.7, 1001.0))
    assert same.reading == "b finds as much of the evidence as a in the top 8, at the same prompt tokens."


def test_without_evidence_figures_the_reading_falls_back_to_the_document_level():
    comparison = chunking_comparison(version_number=1, k_final=2, a=side("documents", 0.5), b=side("passages", 0.75))
    assert comparison.evidence_points is None and comparison.tokens_change_text == ""
    assert comparison.reading == "passages finds 25.0 points more of the relevant documents than documents in the top 2 (document level)."


def test_a_side_takes_the_document_level_recall_and_the_chunk_levels_evidence_and_tokens():
    figures = [
        LevelRow(level=DOCUMENT_LEVEL, chunking="passages", recall=0.9),
        LevelRow(level=CHUNK_LEVEL, chunking="passages", recall=0.4, evidence_recall=0.7, prompt_tokens=812.5),
    ]
    run = Run(name="p")  # unsaved: a side reads only the run's name and key
    assert chunking_side(run, figures, "passages") == ChunkingSide("p", "passages", 0.9, 0.7, 812.5)
    # A run of documents: its chunk level is its document level.
    documents = chunking_side(run, [LevelRow(level=DOCUMENT_LEVEL, chunking="documents", recall=0.6)], "documents")
    assert (documents.document_recall, documents.evidence_recall, documents.prompt_tokens) == (0.6, 0.6, None)


@pytest.fixture
def runs(golden_set):
    """A run of documents that finds q1's page only, and a run of passages that finds q1's
    and q3's (d5's second passage first, then its first), on v1."""
    version = version_publish(golden_set=golden_set)
    passages = chunks.chunking(
        golden_set, "passages", {f"d{n}#{p}": (f"d{n}", s, e) for n in range(1, 9) for p, (s, e) in (("a", (0, 5)), ("b", (5, 10)))}
    )
    # Scored once the corpus has a chunking: each of its documents is then one chunk, with
    # the evidence recall and prompt tokens a comparison reads.
    doc_run = factories.run(golden_set, "pages", {"q1": ["d1", "d2"], "q2": ["d4", "d6"], "q3": ["d7", "d8"]}, stage="reranked")
    evaluation_compute(run=doc_run, version=version)
    chunk_run = chunks.chunk_run(
        golden_set,
        passages,
        "passage run",
        {"q1": ["d1#b", "d1#a", "d2#a"], "q2": ["d4#a", "d6#a"], "q3": ["d5#b", "d5#a", "d8#a"]},
        stage="reranked",
    )
    chunks.chunk_run_scored(chunk_run, version)
    return doc_run, chunk_run


def test_the_compare_page_shows_two_chunkings_side_by_side(client, golden_set, owner, runs):
    doc_run, chunk_run = runs
    client.force_login(owner)
    body = client.get(reverse("compare", kwargs={"slug": SLUG}) + f"?a={doc_run.pk}&b={chunk_run.pk}&version=1").content.decode()
    assert "Chunkings, v1 at k = 2" in body
    # Every page's text is 10 characters ("text of d1"), each the whole evidence of its query.
    # Evidence recall@2: pages covers q1's (d1 whole), 1 of 3; passages q1's and q3's (both
    # passages of d1 and of d5), 2 of 3. Prompt tokens@2: two pages, 20 characters / 4 = 5;
    # two passages, 10 / 4 = 2.5.
    assert "passages finds 33.3 points more of the evidence than documents in the top 2, at 50% fewer prompt tokens." in body
    assert "<code>documents</code>" in body and "<code>passages</code>" in body


def test_two_runs_of_one_chunking_show_no_chunking_box(client, golden_set, owner, runs):
    doc_run, _ = runs
    other = factories.run(golden_set, "pages-2", {"q1": ["d2", "d1"]}, stage="reranked")
    evaluation_compute(run=other, version=golden_set.versions.get())
    client.force_login(owner)
    body = client.get(reverse("compare", kwargs={"slug": SLUG}) + f"?a={doc_run.pk}&b={other.pk}&version=1").content.decode()
    assert "Chunkings, v1" not in body


def test_the_compare_page_of_two_chunkings_is_the_sets_members_only(client, golden_set, make_user, stranger, runs):
    doc_run, chunk_run = runs
    url = reverse("compare", kwargs={"slug": SLUG}) + f"?a={doc_run.pk}&b={chunk_run.pk}&version=1"
    client.force_login(stranger)
    assert client.get(url).status_code == 404
    annotator = make_user("ann")
    membership_grant(user=annotator, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(annotator)
    assert client.get(url).status_code == 404  # results are for managers and adjudicators


def test_the_results_page_compares_what_each_chunking_puts_in_the_prompt(client, golden_set, owner, runs):
    doc_run, chunk_run = runs
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG}) + "?version=1").content.decode()
    assert "Chunkings, v1 at k = 2" in body
    assert "passages finds 33.3 points more of the evidence" in body
    assert f"?a={doc_run.pk}&amp;b={chunk_run.pk}&amp;version=1" in body


def test_the_results_page_of_one_chunking_shows_no_chunking_box(client, golden_set, owner):
    version = version_publish(golden_set=golden_set)
    evaluation_compute(run=factories.run(golden_set, "pages", {"q1": ["d1"]}), version=version)
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG}) + "?version=1").content.decode()
    assert "Chunkings, v1" not in body
