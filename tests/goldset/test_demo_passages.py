"""The demo's second chunking (goldset.demo.passages): passages-400 of the wiki, a reranked
run of passages over it scored at document level on every version, pooled with the
first-stage runs so judging shows the passages that brought a page in, and two chunkings
side by side on the results and compare pages out of the box."""

import re

import pytest
from django.urls import reverse

from evaluation.models import Evaluation, Run
from goldenset.models import Chunk, Chunking, Page
from goldset.demo.generate import DEFAULT_SEED, REFERENCE_DATE
from goldset.demo.passages import CHUNKING_NAME, PASSAGE_SYSTEM, passages
from goldset.demo.services import demo_golden_set_load, demo_passages_load, demo_pool_build, demo_runs_load
from labeling.models import PoolChunk
from tests.support.fixtures import kept_for_the_module

pytestmark = pytest.mark.whole_system


def test_passages_cover_the_text_overlap_and_never_cut_a_word():
    text = " ".join(f"word{n}" for n in range(300))
    ranges = passages(text, size=400, overlap=100)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(text)
    for (start, end), (next_start, _) in zip(ranges, ranges[1:], strict=False):
        assert end - start <= 400 and next_start < end  # they overlap
        assert text[end] == " " and text[next_start - 1] == " "  # cut at blanks
    assert passages("short text") == [(0, 10)] and passages("") == []


@pytest.fixture(scope="module")
def demo(request, django_db_setup, django_db_blocker):
    """The demo's set, runs, passages and pool, loaded once for the module."""

    def build():
        golden_set = demo_golden_set_load(seed=DEFAULT_SEED, reference_date=REFERENCE_DATE).golden_set
        demo_runs_load(golden_set=golden_set, seed=DEFAULT_SEED)
        chunking, run = demo_passages_load(golden_set=golden_set, seed=DEFAULT_SEED)
        return golden_set, chunking, run, demo_pool_build(golden_set=golden_set)

    yield from kept_for_the_module(request, django_db_blocker, build)


def test_the_demo_cuts_its_wiki_into_passages_within_each_page(demo, db):
    golden_set, chunking, _, _ = demo
    assert chunking.name == CHUNKING_NAME and chunking.document_count == Page.objects.filter(corpus=golden_set.corpus).count()
    assert chunking.chunk_count == Chunk.objects.filter(chunking=chunking).count() > chunking.document_count
    lengths = {page.pk: len(page.text) for page in Page.objects.filter(corpus=golden_set.corpus).only("text")}
    for page_id, start, end in Chunk.objects.filter(chunking=chunking).values_list("page_id", "start", "end")[:500]:
        assert 0 <= start < end <= lengths[page_id] and end - start <= 400


def test_the_passage_run_is_a_reranked_run_of_the_chunking_scored_on_every_version(demo, db):
    golden_set, chunking, run, _ = demo
    assert (run.name, run.stage, run.chunking_id) == (PASSAGE_SYSTEM.name, Run.Stage.RERANKED, chunking.pk)
    evaluations = Evaluation.objects.filter(run=run)
    assert evaluations.count() == golden_set.versions.count() and all(e.status == Evaluation.Status.DONE for e in evaluations)


def test_the_demo_pool_keeps_the_passages_that_brought_pages_in(demo, db):
    _, chunking, run, pool = demo
    assert run in pool.pool.runs.all()
    assert PoolChunk.objects.filter(pool=pool.pool, chunk__chunking=chunking).exists()


def test_loading_the_passages_again_writes_nothing(demo, db):
    golden_set, _, _, _ = demo
    assert demo_passages_load(golden_set=golden_set, seed=DEFAULT_SEED) == (None, None)
    assert Chunking.objects.filter(corpus=golden_set.corpus).count() == 1


def test_the_results_page_shows_the_two_chunkings_out_of_the_box(demo, db, client, django_user_model):
    golden_set, _, run, _ = demo
    client.force_login(django_user_model.objects.get(username="manager"))
    body = client.get(reverse("results", kwargs={"slug": golden_set.slug})).content.decode()
    assert "Chunkings, v3 at k = 8" in body
    assert f"{CHUNKING_NAME} finds" in body and f"b={run.pk}" in body
    # The demo's runs of documents were scored again once the passages existed: the reading
    # weighs the evidence against the prompt tokens.
    reading = re.search(rf"{CHUNKING_NAME} finds [^<]*", body).group(0)
    assert "of the evidence" in reading and "prompt tokens." in reading
