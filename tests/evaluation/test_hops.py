"""Hop figures beside the single-hop ones: per-hop recall@k, all-hops@k and the queries
with a missing hop, overall and per slice, computed by hand below."""

import pytest
from django.urls import reverse

from evaluation.hops import hop_figures
from evaluation.selectors import run_ranked
from goldenset.services import judgment_record, version_publish
from lib.formats import JsonRecord
from tests.support import factories

QUERIES = [
    JsonRecord(line=n, id=q, text=f"question {q}", metadata={"lang": lang})
    for n, (q, lang) in enumerate([("q1", "en"), ("q2", "de"), ("q3", "de")], 1)
]

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        "hops",
        manager="owner",
        pages=factories.pages("d1", "d2", "d3", kind="a") + factories.pages("d4", "d5", "d6", "d7", "d8", kind="b"),
        queries=QUERIES,
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
        qrels={("q3", "d5"): 1},
        k_final=2,
        k_first=4,
    ),
]

# q1: hop a = {d1, d2}, hop b = {d3}; q2: hop x = {d4}, hop y = {d5} (d6 graded 0 is no
# evidence); q3 has no hop.
JUDGED = [
    ("q1", "d1", 2, "a"),
    ("q1", "d2", 1, "a"),
    ("q1", "d3", 1, "b"),
    ("q2", "d4", 1, "x"),
    ("q2", "d5", 1, "y"),
    ("q2", "d6", 0, "y"),
]


@pytest.fixture
def scored(golden_set, make_user):
    ann = make_user("ann")
    for query_id, doc_id, grade, hop in JUDGED:
        query, page = golden_set.queries.get(query_id=query_id), golden_set.corpus.pages.get(doc_id=doc_id)
        judgment_record(query=query, page=page, grade=grade, annotator=ann, hop=hop)
    version = version_publish(golden_set=golden_set)
    run = factories.run(golden_set, "bm25", {"q1": ["d2", "d6", "d3", "d1"], "q2": ["d5", "d6", "d7", "d8"], "q3": ["d5"]})
    return version, run, factories.score(run, version)


def _at(figures, name):
    one = figures["slices"][name]
    return one["queries"], one["without_hops"], [(at["k"], at["per_hop_recall"], at["all_hops"], at["missing_hop"]) for at in one["at"]]


def test_the_figures_overall_are_those_counted_by_hand(scored):
    version, run, evaluation = scored
    # @2: q1 finds half of hop a, none of b (0.25, incomplete); q2 none of x, all of y (0.5, incomplete).
    # @4: q1 finds both hops whole (1.0, complete); q2 still misses x (0.5).
    assert _at(evaluation.hop_figures, "") == (2, 1, [(2, 0.375, 0.0, 2), (4, 0.75, 0.5, 1)])
    assert hop_figures(version, run_ranked(run), [4, 2]) == evaluation.hop_figures


def test_a_query_slice_keeps_its_queries_and_counts_those_without_hops(scored):
    _, _, evaluation = scored
    assert _at(evaluation.hop_figures, "query:lang=de") == (1, 1, [(2, 0.5, 0.0, 1), (4, 0.5, 0.0, 1)])
    assert _at(evaluation.hop_figures, "query:lang=en") == (1, 0, [(2, 0.25, 0.0, 1), (4, 1.0, 1.0, 0)])


def test_a_page_slice_keeps_the_hops_documents_of_its_pages(scored):
    _, _, evaluation = scored
    # kind a holds q1's hops whole; kind b holds q2's. A page slice counts no query "without hops".
    assert _at(evaluation.hop_figures, "page:kind=a") == (1, None, [(2, 0.25, 0.0, 1), (4, 1.0, 1.0, 0)])
    assert _at(evaluation.hop_figures, "page:kind=b") == (1, None, [(2, 0.5, 0.0, 1), (4, 0.5, 0.0, 1)])


def test_a_version_without_hops_has_no_hop_figures(golden_set):
    version = version_publish(golden_set=golden_set)
    evaluation = factories.score(factories.run(golden_set, "bm25", {"q3": ["d5"]}), version)
    assert evaluation.hop_figures is None


def test_the_run_page_shows_them_beside_the_scores(client, scored, owner):
    _, run, _ = scored
    client.force_login(owner)
    body = client.get(reverse("run", kwargs={"slug": "hops", "run_id": run.pk})).content.decode()
    assert "Hops on v1" in body and "all-hops@4" in body
    assert 'title="per-hop recall@2 on v1">0.375<' in body


def test_the_results_funnel_shows_them_at_each_stage(client, scored, owner):
    # bm25 is the system's only run (first stage): its funnel reads @4 first, @2 for the prompt.
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": "hops"})).content.decode()
    assert "multi-hop (2 queries): all hops in the top 4 0.500, per-hop recall 0.750" in body
    assert "all hops in the top 2 0.000, per-hop recall 0.375" in body
    assert '<span class="under">2 missing a hop</span>' in body
