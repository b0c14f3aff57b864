"""Resolution of labels, the disagreement rules and adjudication, through the services."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldenset.models import Judgment, Page, Query, VersionLabel
from goldenset.selectors import label_resolve, pair_label, resolved_labels
from goldenset.services import judgment_record, version_publish
from labeling.quality.selectors import disagreements, is_disagreement, pair_review
from labeling.quality.services import pair_adjudicate
from lib.errors import GoldsetError


def pair(golden_set, query_id: str, doc_id: str) -> tuple[Query, Page]:
    return (
        Query.objects.select_related("golden_set").get(golden_set=golden_set, query_id=query_id),
        Page.objects.get(corpus=golden_set.corpus, doc_id=doc_id),
    )


def judge(golden_set, who, query_id: str, doc_id: str, grade: int, note: str = "") -> Judgment:
    query, page = pair(golden_set, query_id, doc_id)
    return judgment_record(query=query, page=page, grade=grade, annotator=who, note=note, seconds_spent=10)


def labels(golden_set) -> dict[tuple[str, str], int]:
    queries = dict(Query.objects.filter(golden_set=golden_set).values_list("pk", "query_id"))
    pages = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("pk", "doc_id"))
    return {(queries[q], pages[p]): g for q, p, g in resolved_labels(golden_set)}


# --- resolution ---------------------------------------------------------------------------


def test_the_lower_median_resolves_an_even_count_to_the_lower_middle_grade():
    assert label_resolve([2]) == 2
    assert label_resolve([1, 2]) == 1
    assert label_resolve([3, 0]) == 0
    assert label_resolve([0, 2, 3]) == 2
    assert label_resolve([3, 1, 2, 3]) == 2
    with pytest.raises(ValueError):
        label_resolve([])


def test_the_lower_median_is_the_majority_vote_on_relevance():
    # Relevant (>= 1) iff a strict majority of the judges said relevant; a tie is not relevant.
    for grades in ([0, 1], [0, 0, 1], [0, 1, 1], [0, 0, 3, 3], [0, 2, 2, 3]):
        majority = sum(g >= 1 for g in grades) > len(grades) / 2
        assert (label_resolve(grades) >= 1) == majority, grades


def test_single_judge_data_resolves_to_the_latest_grade_as_before(golden_set, people):
    # Imported only: the import. One person: their latest grade, wherever the import stood.
    judge(golden_set, people["ann"], "q2", "d4", 1)
    judge(golden_set, people["ann"], "q2", "d4", 3)
    assert labels(golden_set) == {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1, ("q2", "d4"): 3}


def test_a_persons_grade_replaces_the_import_up_as_well_as_down(golden_set, people):
    judge(golden_set, people["ann"], "q1", "d2", 3)  # imported 0
    judge(golden_set, people["bob"], "q1", "d1", 0)  # imported 2
    assert labels(golden_set)[("q1", "d2")] == 3
    assert labels(golden_set)[("q1", "d1")] == 0


def test_several_people_resolve_to_the_median_of_each_ones_latest_grade(golden_set, people):
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)
    judge(golden_set, people["cid"], "q3", "d5", 2)
    assert labels(golden_set)[("q3", "d5")] == 2
    # ann changes her mind: her 3 is superseded, not counted twice.
    judge(golden_set, people["ann"], "q3", "d5", 0)
    assert labels(golden_set)[("q3", "d5")] == 0
    judge(golden_set, people["cid"], "q3", "d5", 3)
    # {ann 0, bob 0, cid 3}: still 0. Two people tied 1 against 2 resolve to 1.
    assert labels(golden_set)[("q3", "d5")] == 0
    judge(golden_set, people["ann"], "q3", "d4", 2)
    judge(golden_set, people["bob"], "q3", "d4", 1)
    assert labels(golden_set)[("q3", "d4")] == 1


def test_an_adjudicated_grade_wins_over_every_other_even_later_ones(golden_set, people):
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)
    query, page = pair(golden_set, "q3", "d5")
    pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=1, note="steps are for another service")
    judge(golden_set, people["cid"], "q3", "d5", 3)
    assert labels(golden_set)[("q3", "d5")] == 1
    assert pair_label(query_pk=query.pk, page_pk=page.pk) == 1
    # A later adjudication replaces the earlier one.
    pair_adjudicate(query=query, page=page, adjudicator=people["boss"], grade=2)
    assert labels(golden_set)[("q3", "d5")] == 2


def test_pair_label_agrees_with_resolved_labels_on_every_pair(golden_set, people):
    judge(golden_set, people["ann"], "q1", "d1", 0)
    judge(golden_set, people["bob"], "q1", "d1", 3)
    judge(golden_set, people["ann"], "q3", "d2", 1)
    judge(golden_set, people["bob"], "q3", "d2", 2)
    judge(golden_set, people["cid"], "q3", "d2", 3)
    for query_pk, page_pk, grade in resolved_labels(golden_set):
        assert pair_label(query_pk=query_pk, page_pk=page_pk) == grade
    assert pair_label(query_pk=pair(golden_set, "q3", "d1")[0].pk, page_pk=pair(golden_set, "q3", "d1")[1].pk) is None


def test_resolution_reads_the_judgments_in_one_query(golden_set, people):
    for who in ("ann", "bob", "cid"):
        for doc in ("d1", "d2", "d3", "d4", "d5"):
            judge(golden_set, people[who], "q3", doc, 1)
    with CaptureQueriesContext(connection) as captured:
        result = resolved_labels(golden_set)
    assert len(result) == 8
    assert len(captured.captured_queries) == 1


def test_a_version_snapshots_the_resolved_labels(golden_set, people):
    version_publish(golden_set=golden_set, note="imported")
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)  # lower median: 0
    judge(golden_set, people["ann"], "q3", "d4", 2)
    judge(golden_set, people["bob"], "q3", "d4", 3)
    judge(golden_set, people["cid"], "q3", "d4", 3)  # median 3
    query, page = pair(golden_set, "q1", "d2")
    judge(golden_set, people["ann"], "q1", "d2", 0)
    judge(golden_set, people["bob"], "q1", "d2", 2)
    pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=2)
    version = version_publish(golden_set=golden_set, note="round 1")
    snapshot = dict(
        ((q, d), g) for q, d, g in VersionLabel.objects.filter(version=version).values_list("query__query_id", "page__doc_id", "grade")
    )
    assert snapshot == {("q1", "d1"): 2, ("q1", "d2"): 2, ("q2", "d3"): 1, ("q3", "d4"): 3, ("q3", "d5"): 0}
    assert version.relevant_count == 4


# --- disagreements ------------------------------------------------------------------------


def test_grades_two_apart_or_across_the_threshold_are_disagreements():
    assert is_disagreement([0, 2], 1)
    assert is_disagreement([1, 3], 1)
    assert is_disagreement([0, 1], 1)  # relevant against not
    assert not is_disagreement([1, 2], 1)
    assert not is_disagreement([2, 3, 3], 1)
    assert is_disagreement([1, 2], 2)  # with a threshold of 2, 1 and 2 straddle it
    assert not is_disagreement([3], 1)
    assert not is_disagreement([], 1)


def test_the_disagreement_list_holds_undecided_pairs_people_disagree_on(golden_set, people):
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 1)  # two apart
    judge(golden_set, people["ann"], "q3", "d4", 0)
    judge(golden_set, people["bob"], "q3", "d4", 1)  # across the threshold
    judge(golden_set, people["ann"], "q3", "d3", 2)
    judge(golden_set, people["bob"], "q3", "d3", 3)  # close enough
    judge(golden_set, people["ann"], "q3", "d2", 3)  # one person only
    # The import is not a person: ann's 0 against the imported 2 is no disagreement.
    judge(golden_set, people["ann"], "q1", "d1", 0)
    found = disagreements(golden_set)
    assert found.total == 2
    assert [(d.query_id, d.doc_id, d.grades, d.label) for d in found.items] == [
        ("q3", "d4", [("ann", 0), ("bob", 1)], 0),
        ("q3", "d5", [("ann", 3), ("bob", 1)], 1),
    ]
    query, page = pair(golden_set, "q3", "d5")
    pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=2)
    assert [(d.query_id, d.doc_id) for d in disagreements(golden_set).items] == [("q3", "d4")]


def test_a_person_who_changes_their_grade_can_end_a_disagreement(golden_set, people):
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)
    assert disagreements(golden_set).total == 1
    judge(golden_set, people["bob"], "q3", "d5", 2)
    assert disagreements(golden_set).total == 0


def test_the_disagreement_list_leaves_out_retired_queries(golden_set, people):
    from goldenset.services import query_retire

    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)
    query_retire(query=Query.objects.get(golden_set=golden_set, query_id="q3"))
    assert disagreements(golden_set).total == 0


def test_the_adjudicator_sees_every_grade_and_note_of_a_pair(golden_set, people):
    judge(golden_set, people["ann"], "q1", "d1", 3, note="exact runbook")
    judge(golden_set, people["bob"], "q1", "d1", 1, note="other region")
    judge(golden_set, people["bob"], "q1", "d1", 0, note="on reflection, wrong service")
    query, page = pair(golden_set, "q1", "d1")
    review = pair_review(golden_set, query_pk=query.pk, page_pk=page.pk)
    assert [(j.who, j.source, j.grade, j.note, j.current) for j in review.judgments] == [
        ("bob", "human", 0, "on reflection, wrong service", True),
        ("bob", "human", 1, "other region", False),
        ("ann", "human", 3, "exact runbook", True),
        ("import", "imported", 2, "", False),
    ]
    assert review.label == 0 and review.disagreement and not review.adjudicated


# --- the adjudication service -------------------------------------------------------------


def test_adjudication_records_an_adjudicated_judgment_by_the_adjudicator(golden_set, people):
    query, page = pair(golden_set, "q1", "d1")
    judgment = pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=3, note="  exact match  ")
    assert (judgment.source, judgment.annotator, judgment.grade, judgment.note) == ("adjudicated", people["judge"], 3, "exact match")


def test_adjudication_is_refused_to_annotators_and_strangers(golden_set, people, stranger):
    query, page = pair(golden_set, "q1", "d1")
    for who in (people["ann"], stranger):
        with pytest.raises(GoldsetError, match="is not an adjudicator or manager"):
            pair_adjudicate(query=query, page=page, adjudicator=who, grade=3)
    assert not Judgment.objects.filter(source=Judgment.Source.ADJUDICATED).exists()


def test_adjudication_refuses_a_grade_off_the_scale_and_an_unjudged_pair(golden_set, people):
    query, page = pair(golden_set, "q1", "d1")
    with pytest.raises(GoldsetError, match=r"grade 7 is not on the scale of 'tiny' \(0, 1, 2, 3\)"):
        pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=7)
    query, page = pair(golden_set, "q3", "d5")
    with pytest.raises(GoldsetError, match="nobody judged"):
        pair_adjudicate(query=query, page=page, adjudicator=people["judge"], grade=1)
    assert not Judgment.objects.filter(source=Judgment.Source.ADJUDICATED).exists()


def test_judgment_record_refuses_an_unknown_source(golden_set, people):
    query, page = pair(golden_set, "q1", "d1")
    with pytest.raises(GoldsetError, match="unknown judgment source 'oracle'"):
        judgment_record(query=query, page=page, grade=1, annotator=people["judge"], source="oracle")
