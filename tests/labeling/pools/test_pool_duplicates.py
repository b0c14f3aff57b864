"""Annotators see a duplicate group once: a pool maps a run's members of a group to the
group's first member, keeps the group's best rank, and skips a group one member of which
is judged already."""

import pytest

from goldenset.models import Page
from goldenset.services import judgment_record
from labeling.models import JudgingTask
from labeling.pools.services import pool_build
from lib.formats import JsonRecord
from tests.labeling.pools.test_pool_build import task_pairs
from tests.support import factories

pytestmark = pytest.mark.django_db

SAME = "the same text of a page copied three times"
TEXTS = {"d1": "one", "d2": SAME, "d3": "three", "d4": SAME.upper(), "d5": "five", "d6": f"  {SAME}  "}
GROUPED = pytest.mark.golden_set(
    "dupes",
    pages=[JsonRecord(line=n, id=doc_id, title="", text=text) for n, (doc_id, text) in enumerate(TEXTS.items(), 1)],
    qrels={("q1", "d1"): 2},
)


@GROUPED
def test_a_run_returning_two_members_of_a_group_makes_one_task_at_the_best_rank(golden_set):
    assert set(Page.objects.filter(duplicate_of__doc_id="d2").values_list("doc_id", flat=True)) == {"d4", "d6"}
    run = factories.run(golden_set, "a", {"q1": ["d4", "d3", "d6", "d2"], "q2": ["d5", "d6"]})
    result = pool_build(golden_set=golden_set, runs=[run], depth=4, strategy="depth")
    assert task_pairs(result.pool) == {("q1", "d2"), ("q1", "d3"), ("q2", "d5"), ("q2", "d2")}
    # d4, d6 (q1) and d6 (q2) named members: three pairs judged as their group's first instead.
    assert result.duplicate_pairs_folded == 3
    assert "folded into their group's first (judged once): 3" in "\n".join(result.lines())
    best = dict(JudgingTask.objects.filter(query__query_id="q1").values_list("page__doc_id", "best_rank"))
    assert best["d2"] == 1  # d4 stood first; the group's later members are dropped, so d3 is second
    assert best.get("d3", 2) == 2


@GROUPED
def test_a_judged_member_makes_its_whole_group_labelled(golden_set, make_user):
    query = golden_set.queries.get(query_id="q2")
    judgment_record(query=query, page=golden_set.corpus.pages.get(doc_id="d6"), grade=1, annotator=make_user("ann"))
    run = factories.run(golden_set, "a", {"q2": ["d4", "d5"]})
    result = pool_build(golden_set=golden_set, runs=[run], depth=2, strategy="depth")
    assert task_pairs(result.pool) == {("q2", "d5")}
    assert result.already_labelled == 1
