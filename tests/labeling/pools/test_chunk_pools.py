"""Pools of runs of a chunking (labeling.pools.chunk_runs): they pool documents, each at its
best chunk's rank as at document level, and remember the chunks that brought each
document in, which the judging screen highlights."""

import pytest
from django.urls import reverse

from evaluation.services import run_import
from goldenset.models import Membership
from goldenset.services import membership_grant
from labeling.models import PoolChunk, PoolQuery
from labeling.pools.services import pool_build, pool_extend
from tests.labeling.pools.conftest import SMALL_SET
from tests.support import chunks

pytestmark = [pytest.mark.django_db, SMALL_SET]

# Pages of SMALL_SET hold "text of dN" (10 characters): two chunks each, overlapping.
CHUNKS = {f"d{n}#{part}": (f"d{n}", start, end) for n in range(1, 9) for part, (start, end) in (("a", (0, 7)), ("b", (5, 10)))}


@pytest.fixture
def passages(golden_set):
    return chunks.chunking(golden_set, "passages", CHUNKS)


def _ranks(pool, runs: int = 1) -> dict[tuple[str, str], list[int]]:
    """(query id, doc id) -> each run's rank of the pair, of every pair the pool holds."""
    doc_ids = dict(pool.golden_set.corpus.pages.values_list("pk", "doc_id"))
    return {
        (row.query.query_id, doc_ids[int(page)]): ranks
        for row in PoolQuery.objects.filter(pool=pool).select_related("query")
        for page, ranks in zip(row.pages(), row.ranks(runs).tolist(), strict=True)
    }


def _pairs(pool) -> dict[str, list[str]]:
    """Query id -> the doc ids the pool holds for it."""
    pairs = {}
    for query_id, doc_id in sorted(_ranks(pool)):
        pairs.setdefault(query_id, []).append(doc_id)
    return pairs


def _chunks(pool) -> set[tuple[str, str, str]]:
    return set(PoolChunk.objects.filter(pool=pool).values_list("query__query_id", "page__doc_id", "chunk__chunk_id"))


def test_a_run_of_chunks_pools_documents_each_at_its_best_chunks_rank(golden_set, passages):
    # d2 first with two chunks, then d4, then d2 again (dropped) and d6, d7: at depth 2 the
    # documents are d2 and d4, whatever the number of chunks before them.
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q1": ["d2#a", "d2#b", "d4#b", "d6#a", "d7#a"], "q3": ["d8#b"]})
    pool = pool_build(golden_set=golden_set, runs=[run], depth=2, strategy="depth").pool

    assert _pairs(pool) == {"q1": ["d2", "d4"], "q3": ["d8"]}
    assert _ranks(pool) == {("q1", "d2"): [1], ("q1", "d4"): [2], ("q3", "d8"): [1]}
    assert _chunks(pool) == {("q1", "d2", "d2#a"), ("q1", "d2", "d2#b"), ("q1", "d4", "d4#b"), ("q3", "d8", "d8#b")}


def test_a_labelled_document_is_not_pooled_and_keeps_no_chunks(golden_set, passages):
    # q1-d1 is labelled in SMALL_SET.
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q1": ["d1#b", "d3#a"]})
    pool = pool_build(golden_set=golden_set, runs=[run], depth=5, strategy="depth").pool
    assert _pairs(pool) == {"q1": ["d3"]}
    assert _chunks(pool) == {("q1", "d3", "d3#a")}


def test_a_pool_of_document_runs_keeps_no_chunks(golden_set, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    assert not PoolChunk.objects.filter(pool=pool).exists()


def test_a_pool_mixes_runs_of_documents_and_of_chunks(golden_set, passages, run_a):
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q1": ["d2#b", "d5#a"], "q2": ["d8#a"]})
    pool = pool_build(golden_set=golden_set, runs=[run_a, run], depth=2, strategy="depth").pool
    assert _pairs(pool)["q1"] == ["d2", "d5"]  # d1 (run a) is labelled; d2 from both runs
    assert _ranks(pool, 2)[("q1", "d2")] == [2, 1]
    assert _chunks(pool) == {("q1", "d2", "d2#b"), ("q1", "d5", "d5#a"), ("q2", "d8", "d8#a")}


def test_extending_a_pool_with_a_run_of_chunks_records_its_chunks_of_pairs_already_there(golden_set, passages, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q1": ["d3#b", "d8#a"], "q2": ["d4#a"]})
    pool_extend(pool=pool, runs=[run], depth=2)
    assert _pairs(pool)["q1"] == ["d2", "d3", "d8"]
    assert _chunks(pool) == {("q1", "d3", "d3#b"), ("q1", "d8", "d8#a"), ("q2", "d4", "d4#a")}
    pool_extend(pool=pool, runs=[run], depth=3, queries=list(golden_set.queries.all()))  # again: nothing twice
    assert PoolChunk.objects.filter(pool=pool).count() == 3


def test_the_judging_screen_highlights_the_chunks_that_brought_the_page_in(golden_set, passages, client, make_user):
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q2": ["d5#b"]})
    pool_build(golden_set=golden_set, runs=[run], depth=1, strategy="depth")
    user = make_user("ann")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(user)
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    # "text of d5": the chunk [5, 10) is "of d5".
    assert '<span data-o="0">text </span><span data-o="5" class="chunk">of d5</span>' in body
    assert "the passage that brought this page here" in body


def test_the_judging_screen_of_a_document_pool_highlights_no_chunk(golden_set, run_a, client, make_user):
    pool_build(golden_set=golden_set, runs=[run_a], depth=1, strategy="depth")
    user = make_user("ann")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(user)
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    assert 'class="chunk"' not in body and "brought this page here" not in body


def test_documents_whose_best_chunks_tie_are_pooled_in_the_order_scoring_ranks_them(golden_set):
    # x2 (of d3) and x1 (of d5) tie: trec_eval orders the chunks x2 then x1 (chunk id
    # descending), the documents d5 then d3 (doc id descending). The document level, which
    # scoring counts, puts d5 first, and so must the pool at depth 1.
    tied = chunks.chunking(golden_set, "tied", {"x1": ("d5", 0, 10), "x2": ("d3", 0, 10)})
    lines = ["q1 Q0 x2 1 5.0 tag\n", "q1 Q0 x1 2 5.0 tag\n"]
    run = run_import(
        golden_set=golden_set, lines=lines, source_name="tied.run", system="tied", stage="first_stage", name="tied", chunking=tied.name
    )
    pool = pool_build(golden_set=golden_set, runs=[run], depth=1, strategy="depth").pool
    assert _pairs(pool) == {"q1": ["d5"]}
    assert _chunks(pool) == {("q1", "d5", "x1")}
