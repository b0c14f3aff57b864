"""The oracle experiment's contexts: the oracle's order and cut, the run's top k_final (of
documents or of chunks), the token budget by one rule, and reads in bulk."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from answers.contexts import CLOSED_BOOK, assemble, oracle_contexts, retrieved_contexts, text_tokens
from evaluation.selectors import run_ranked
from evaluation.services import run_import
from goldenset.models import Query
from goldenset.services import version_publish
from lib.formats import JsonRecord
from tests.support import chunks, factories

pytestmark = pytest.mark.django_db

TEXTS = {"d1": "aaaa bbbb", "d2": "cc", "d3": "dddddddd", "d4": "e" * 40, "d5": "ffff"}


@pytest.fixture
def graded_set():
    pages = [JsonRecord(line=n, id=d, title="", text=t, metadata={}) for n, (d, t) in enumerate(TEXTS.items(), 1)]
    # q1: d3 and d1 grade 2 (a tie: doc id order), d2 grade 3 (first), d4 grade 1, d5 grade 0 (not relevant).
    qrels = {("q1", "d1"): 2, ("q1", "d2"): 3, ("q1", "d3"): 2, ("q1", "d4"): 1, ("q1", "d5"): 0, ("q2", "d5"): 1}
    made = factories.golden_set("ctx", qrels=qrels, pages=pages, k_first=5, k_final=3)
    version_publish(golden_set=made)
    return made


def pks(golden_set):
    return dict(Query.objects.filter(golden_set=golden_set).values_list("query_id", "pk"))


def test_tokens_are_characters_over_four_rounded_up():
    assert [text_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_the_oracle_context_is_the_relevant_pages_best_grade_first_ties_by_doc_id_cut_to_k_final(graded_set):
    q = pks(graded_set)
    contexts = oracle_contexts(graded_set.latest_version(), [q["q1"], q["q2"], q["q3"]], k_final=3, budget=None)
    assert contexts[q["q1"]].ids == ("d2", "d1", "d3")  # d4 (grade 1) is past k_final; d5 is not relevant
    assert contexts[q["q1"]].tokens == 1 + 3 + 2  # "cc", "aaaa bbbb", "dddddddd"
    assert contexts[q["q2"]].ids == ("d5",)
    assert contexts[q["q3"]] == CLOSED_BOOK  # no relevant page: nothing


def test_the_budget_cuts_the_first_passage_that_does_not_fit_and_drops_the_rest():
    passages = [("a", "x" * 8), ("b", "y" * 10), ("c", "z" * 4)]
    cut = assemble(passages, k_final=3, budget=4)  # 2 tokens, then 3 would make 5: b cut to 2 tokens (8 chars)
    assert cut.ids == ("a", "b") and cut.passages[1].text == "y" * 8 and cut.tokens == 4
    assert assemble(passages, k_final=3, budget=2).ids == ("a",)
    assert assemble(passages, k_final=2, budget=None).ids == ("a", "b")
    assert assemble(passages, k_final=3, budget=0).ids == ()


def test_the_retrieved_context_is_the_runs_top_k_final_in_trec_eval_order(graded_set):
    q = pks(graded_set)
    # Equal scores on q1: trec_eval breaks the tie by doc id descending, d4 before d1.
    lines = ["q1 Q0 d1 1 5.0 x\n", "q1 Q0 d4 2 5.0 x\n", "q1 Q0 d2 3 4.0 x\n", "q1 Q0 d3 4 3.0 x\n", "q1 Q0 nowhere 5 9.0 x\n"]
    run = run_import(golden_set=graded_set, lines=lines, source_name="r.run", system="r", stage="reranked", name="r")
    contexts = retrieved_contexts(run_ranked(run), [q["q1"], q["q2"]], chunked=False, k_final=3, budget=None)
    assert contexts[q["q1"]].ids == ("nowhere", "d4", "d1")  # a doc outside the corpus keeps its place, empty
    assert contexts[q["q1"]].passages[0].text == "" and contexts[q["q1"]].tokens == 10 + 3
    assert contexts[q["q2"]] == CLOSED_BOOK  # the run does not answer q2


def test_a_run_of_a_chunking_gives_its_chunks_texts(graded_set):
    q = pks(graded_set)
    made = chunks.chunking(graded_set, "halves", {"d1-a": ("d1", 0, 4), "d1-b": ("d1", 5, 9), "d4-a": ("d4", 0, 8)})
    run = chunks.chunk_run(graded_set, made, "chunky", {"q1": ["d1-b", "d4-a", "d1-a"]})
    context = retrieved_contexts(run_ranked(run), [q["q1"]], chunked=True, k_final=2, budget=None)[q["q1"]]
    assert context.ids == ("d1-b", "d4-a") and [p.text for p in context.passages] == ["bbbb", "e" * 8]


def test_contexts_are_read_in_a_fixed_number_of_queries_whatever_the_number_of_queries(graded_set):
    q = pks(graded_set)
    version = graded_set.latest_version()
    with CaptureQueriesContext(connection) as one:
        oracle_contexts(version, [q["q1"]], k_final=3, budget=None)
    with CaptureQueriesContext(connection) as three:
        oracle_contexts(version, list(q.values()), k_final=3, budget=None)
    assert len(one) == len(three) == 2  # the labels, then the pages' texts
