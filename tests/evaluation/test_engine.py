"""The evaluation engine scores runs as trec_eval does, plus Goldset's own averaging rules.

pytrec_eval runs trec_eval's own code, so it is the reference for every per-query number
here; the averages it cannot express (left-out queries, page slices) are worked by hand.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from evaluation.engine import QrelsArrays, TableRows, evaluate_run, match_run, restrict_to_queries
from evaluation.metrics import default_metrics, parse_metric, parse_metrics
from lib.errors import GoldsetError, ProblemCollector
from lib.runs import RankedRun, rank_run, read_trec_run
from tests.support.marks import RANX

# our name -> (pytrec_eval measure, the key it reports)
TREC_NAMES = {
    "recall@5": ("recall.5", "recall_5"),
    "recall@10": ("recall.10", "recall_10"),
    "precision@5": ("P.5", "P_5"),
    "precision@10": ("P.10", "P_10"),
    "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10"),
    "ndcg@3": ("ndcg_cut.3", "ndcg_cut_3"),
    "ndcg": ("ndcg", "ndcg"),
    "mrr": ("recip_rank", "recip_rank"),
    "hit_rate@3": ("success.3", "success_3"),
    "map@10": ("map_cut.10", "map_cut_10"),
    "map": ("map", "map"),
}


def build(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], *, depth: int = 1000):
    """Our structures for dict-shaped qrels and run, doc ids keyed as a corpus would key them.

    Doc ids only the run holds stay outside the corpus (negative keys), like pages a system
    returned that were never imported.
    """
    keys: dict[str, int] = {}
    for docs in qrels.values():
        for doc_id in docs:
            keys.setdefault(doc_id, len(keys) + 1)
    labels = QrelsArrays.from_rows(((q, keys[d], g) for q, docs in qrels.items() for d, g in docs.items()), query_ids=list(qrels))
    lines = [f"{q} Q0 {d} 0 {s!r} sys\n" for q, docs in run.items() for d, s in docs.items()]
    problems = ProblemCollector()
    entries = read_trec_run(lines, "run", problems)
    assert problems.problems == []
    return labels, rank_run(entries, doc_keys=keys, depth=depth), keys


def trec_eval(qrels, run, names, threshold=1) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values, keyed by our metric names."""
    measures = {TREC_NAMES[name][0] for name in names}
    # pytrec_eval fails on a query that has no qrels line at all; trec_eval would skip it too.
    judged = {q: docs for q, docs in qrels.items() if docs}
    found = pytrec_eval.RelevanceEvaluator(judged, measures, relevance_level=threshold).evaluate(run)
    return {q: {name: values[TREC_NAMES[name][1]] for name in names} for q, values in found.items()}


# --- metric definitions ----------------------------------------------------------------


def test_default_metrics_are_the_ten_the_design_names_in_order():
    names = [m.name for m in default_metrics(100, 8)]
    assert names == [
        "recall@5",
        "recall@8",
        "recall@10",
        "recall@20",
        "recall@50",
        "recall@100",
        "ndcg@10",
        "mrr",
        "hit_rate@8",
        "precision@8",
    ]


def test_default_metrics_drop_repeats_and_keep_the_first_place():
    names = [m.name for m in default_metrics(50, 10)]
    assert names == ["recall@5", "recall@10", "recall@20", "recall@50", "ndcg@10", "mrr", "hit_rate@10", "precision@10"]


def test_default_metrics_refuse_a_cut_off_below_one():
    with pytest.raises(GoldsetError, match="k_final must be a whole number"):
        default_metrics(100, 0)


def test_it_parses_ranx_names_into_family_and_cut_off():
    assert (parse_metric("recall@100").family, parse_metric("recall@100").k) == ("recall", 100)
    assert (parse_metric("mrr").family, parse_metric("mrr").k) == ("mrr", None)
    assert parse_metric("hit_rate@8").binary and parse_metric("ndcg@10").graded
    assert str(parse_metric("map@100")) == "map@100"


@pytest.mark.parametrize("name", ["Recall@10", "recall@010", "recall@0", "recall@", "ndcg@10-l2", "bpref", "p@5", "recall@10 "])
def test_it_refuses_names_that_are_not_canonical_ranx_strings(name):
    with pytest.raises(GoldsetError):
        parse_metric(name)


def test_parse_metrics_lists_every_bad_name_at_once_and_drops_repeats():
    with pytest.raises(GoldsetError) as caught:
        parse_metrics(["recall@10", "bogus", "recall@00"])
    assert len(caught.value.problems) == 2
    assert [m.name for m in parse_metrics(["mrr", "recall@5", "mrr"])] == ["mrr", "recall@5"]


def test_every_metric_explains_itself_and_says_whether_the_threshold_applies():
    for metric in default_metrics(100, 8):
        assert metric.description.endswith(".")
        assert ("threshold" in metric.description) == metric.binary
    assert "top 8" in parse_metric("precision@8").description
    assert "whole ranking" in parse_metric("mrr").description


# --- labels ------------------------------------------------------------------------------


def test_labels_are_held_best_grade_first_within_each_query():
    labels = QrelsArrays.from_rows([("q2", 5, 1), ("q1", 3, 0), ("q1", 4, 3), ("q1", 2, -1)], query_ids=["q1", "q2", "q3"])
    assert labels.offsets.tolist() == [0, 3, 4, 4]
    assert labels.grades.tolist() == [3, 0, -1, 1] and labels.doc_keys.tolist() == [4, 3, 2, 5]


def test_labels_refuse_two_grades_for_one_pair_and_unknown_queries():
    with pytest.raises(ValueError, match="two labels for doc key 7"):
        QrelsArrays.from_rows([("q1", 7, 1), ("q1", 7, 2)])
    with pytest.raises(ValueError, match="not in the query set"):
        QrelsArrays.from_rows([("q9", 7, 1)], query_ids=["q1"])


# --- agreement with trec_eval --------------------------------------------------------------


def test_tied_scores_are_broken_by_doc_id_descending_like_trec_eval():
    qrels = {"q": {"b": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}  # trec_eval ranks c, b, a
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, ["mrr", "hit_rate@3"])
    assert result.means["mrr"] == 0.5 == trec_eval(qrels, run, ["mrr"])["q"]["mrr"]


def test_negative_grades_are_non_relevant_and_gain_nothing():
    qrels = {"q": {"a": -1, "b": 2, "c": 0, "d": 1}}
    run = {"q": {"a": 4.0, "b": 3.0, "x": 2.0, "d": 1.0}}
    names = ["recall@5", "precision@5", "ndcg@10", "ndcg@3", "mrr", "map"]
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, names)
    expected = trec_eval(qrels, run, names)["q"]
    for name in names:
        assert result.values[name][0] == pytest.approx(expected[name], abs=1e-12), name
    assert result.means["mrr"] == 0.5 and result.means["recall@5"] == 1.0


def test_grades_above_three_are_gains_as_they_stand():
    qrels = {"q": {"a": 1, "b": 6}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, ["ndcg@10"])
    assert result.means["ndcg@10"] == pytest.approx((1 + 6 / math.log2(3)) / (6 + 1 / math.log2(3)))
    assert result.means["ndcg@10"] == pytest.approx(trec_eval(qrels, run, ["ndcg@10"])["q"]["ndcg@10"])


def test_the_threshold_decides_binary_relevance_but_not_ndcg_gains():
    qrels = {"q": {"a": 1, "b": 2, "c": 3}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    names = ["recall@5", "precision@5", "mrr", "ndcg@10", "hit_rate@3"]
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, names, relevance_threshold=2)
    expected = trec_eval(qrels, run, names, threshold=2)["q"]
    for name in names:
        assert result.values[name][0] == pytest.approx(expected[name], abs=1e-12), name
    assert result.means["mrr"] == 0.5  # a (grade 1) is not relevant at threshold 2
    assert result.relevant_counts.tolist() == [2]


def test_precision_counts_the_full_cut_off_when_the_run_returns_fewer():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "z": 0.5}}
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, ["precision@10"])
    assert result.means["precision@10"] == 0.1 == trec_eval(qrels, run, ["precision@10"])["q"]["precision@10"]


def test_mrr_with_a_cut_off_ignores_relevant_pages_below_it():
    labels, ranked, _ = build({"q": {"c": 1}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    result = evaluate_run(labels, ranked, ["mrr@2", "mrr"])
    assert result.means == {"mrr@2": 0.0, "mrr": pytest.approx(1 / 3)}


def test_the_depth_cap_cuts_what_metrics_see():
    labels, ranked, _ = build({"q": {"c": 1}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, depth=2)
    assert evaluate_run(labels, ranked, ["recall@10"]).means["recall@10"] == 0.0


@pytest.mark.parametrize("threshold", [1, 2])
def test_random_runs_with_ties_agree_with_trec_eval_query_by_query(threshold):
    rng = np.random.default_rng(threshold)
    docs = [f"d{i}" for i in range(60)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        judged = rng.choice(docs, size=rng.integers(1, 15), replace=False)
        qrels[f"q{q}"] = {d: int(rng.choice([-1, 0, 0, 1, 2, 3, 4])) for d in judged}
        if q % 7 == 3:
            continue  # unanswered
        returned = rng.choice(docs + ["x1", "x2", "x3"], size=rng.integers(1, 30), replace=False)
        run[f"q{q}"] = {d: float(rng.integers(0, 4)) for d in returned}  # scores from 4 values: many ties
    names = list(TREC_NAMES)
    labels, ranked, _ = build(qrels, run)
    result = evaluate_run(labels, ranked, names, relevance_threshold=threshold, average_queries_without_relevant=True)
    expected = trec_eval(qrels, run, names, threshold)
    assert result.query_ids == tuple(qrels)
    for name in names:
        for query_id, value in result.per_query(name).items():
            want = expected[query_id][name] if query_id in run else 0.0
            assert value == pytest.approx(want, abs=1e-12), (name, query_id)


# --- Goldset's averaging rules ---------------------------------------------------------------


QRELS = {
    "q1": {"a": 1, "b": 2, "c": 0},
    "q2": {"a": 0, "b": -1},  # judged, nothing relevant: a coverage gap
    "q3": {"d": 3},  # unanswered by the run
    "q4": {"e": 1},
}
RUN = {
    "q1": {"a": 2.0, "x": 1.5, "b": 1.0},
    "q2": {"a": 1.0},
    "q4": {"z": 2.0, "e": 1.0},
    "stray": {"a": 1.0},  # not in the golden set: ignored
}


def test_an_unanswered_query_scores_zero_and_is_counted():
    labels, ranked, _ = build(QRELS, RUN)
    result = evaluate_run(labels, ranked, ["recall@5", "mrr"])
    assert result.query_ids == ("q1", "q3", "q4")
    assert result.unanswered_count == 1 and result.unanswered_query_ids == ("q3",)
    assert result.per_query("recall@5") == {"q1": 1.0, "q3": 0.0, "q4": 1.0}
    assert result.means["mrr"] == pytest.approx((1 + 0 + 0.5) / 3)


def test_a_query_without_a_relevant_page_is_left_out_and_counted_as_a_coverage_gap():
    labels, ranked, _ = build(QRELS, RUN)
    result = evaluate_run(labels, ranked, ["recall@5"])
    assert result.no_relevant_count == 1 and result.no_relevant_query_ids == ("q2",)
    assert "q2" not in result.query_ids and result.query_count == 3
    assert result.means["recall@5"] == pytest.approx(2 / 3)


def test_a_golden_set_query_with_no_label_at_all_is_a_coverage_gap_too():
    labels = QrelsArrays.from_rows([("q1", 1, 1)], query_ids=["q1", "q-new"])
    _, ranked, _ = build({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "q-new": {"a": 1.0}})
    result = evaluate_run(labels, ranked, ["recall@5"])
    assert result.query_ids == ("q1",) and result.no_relevant_query_ids == ("q-new",)


def test_averaging_queries_without_relevant_pages_as_zero_reproduces_trec_eval_c():
    labels, ranked, _ = build(QRELS, RUN)
    names = ["recall@5", "precision@5", "ndcg@10", "mrr"]
    result = evaluate_run(labels, ranked, names, average_queries_without_relevant=True)
    per_query = trec_eval(QRELS, RUN, names)
    assert result.query_ids == ("q1", "q2", "q3", "q4") and result.no_relevant_count == 1
    for name in names:
        # trec_eval -c: every qrels query, a missing one as 0
        want = sum(per_query.get(q, {}).get(name, 0.0) for q in QRELS) / len(QRELS)
        assert result.means[name] == pytest.approx(want, abs=1e-12), name


def test_a_page_slice_counts_only_the_relevant_pages_of_the_slice():
    qrels = {"q1": {"new1": 1, "new2": 2, "old1": 1}, "q2": {"old2": 1}}
    run = {"q1": {"old1": 3.0, "new1": 2.0, "x": 1.0, "new2": 0.5}, "q2": {"old2": 1.0}}
    labels, ranked, keys = build(qrels, run)
    whole = evaluate_run(labels, ranked, ["recall@2"])
    assert whole.per_query("recall@2") == {"q1": pytest.approx(2 / 3), "q2": 1.0}
    new_pages = [keys["new1"], keys["new2"]]
    sliced = evaluate_run(labels, ranked, ["recall@2", "mrr", "ndcg@10", "precision@5"], page_slice=new_pages)
    # |relevant new pages in the top 2| / |relevant new pages|; q2 has none and is left out
    assert sliced.query_ids == ("q1",) and sliced.no_relevant_query_ids == ("q2",)
    assert sliced.means["recall@2"] == 0.5 and sliced.means["mrr"] == 0.5
    assert sliced.relevant_counts.tolist() == [2]
    # the same as scoring against labels that hold only the slice's pages
    only_new = {"q1": {"new1": 1, "new2": 2}}
    expected = trec_eval(only_new, {"q1": run["q1"]}, ["ndcg@10", "precision@5"])["q1"]
    assert sliced.means["ndcg@10"] == pytest.approx(expected["ndcg@10"])
    assert sliced.means["precision@5"] == pytest.approx(expected["precision@5"])


def test_a_page_slice_accepts_a_numpy_array_of_keys():
    labels, ranked, keys = build({"q1": {"a": 1, "b": 1}}, {"q1": {"a": 1.0}})
    result = evaluate_run(labels, ranked, ["recall@5"], page_slice=np.array([keys["b"]]))
    assert result.means["recall@5"] == 0.0


def test_a_query_slice_restricts_the_queries_averaged():
    labels, ranked, _ = build(QRELS, RUN)
    result = evaluate_run(labels, ranked, ["recall@5"], query_slice=["q1", "q2", "not-a-query"])
    assert result.query_ids == ("q1",) and result.no_relevant_query_ids == ("q2",) and result.unanswered_count == 0
    assert result.means["recall@5"] == 1.0


@pytest.mark.parametrize("threshold", [1, 2])
def test_a_query_slice_taken_from_the_overall_evaluation_is_the_slice_scored_again(threshold):
    """evaluation_compute takes query slices from the overall evaluation (restrict_to_queries):
    the same values, counts and query ids as scoring the slice, to the bit."""
    rng = np.random.default_rng(10 + threshold)
    docs = [f"d{i}" for i in range(50)]
    qrels, run = {}, {}
    for q in range(60):
        judged = rng.choice(docs, size=rng.integers(0, 12), replace=False)
        qrels[f"q{q}"] = {d: int(rng.choice([0, 0, 1, 2, 3])) for d in judged}
        if q % 5 != 2:
            returned = rng.choice(docs, size=rng.integers(1, 25), replace=False)
            run[f"q{q}"] = {d: float(rng.integers(0, 5)) for d in returned}
    labels, ranked, _ = build(qrels, run)
    names = list(TREC_NAMES)
    overall = evaluate_run(labels, ranked, names, relevance_threshold=threshold)
    for wanted in ({f"q{q}" for q in range(0, 60, 3)}, {"q7", "nowhere"}, set(), set(qrels)):
        taken = restrict_to_queries(overall, wanted)
        scored = evaluate_run(labels, ranked, names, relevance_threshold=threshold, query_slice=wanted)
        assert taken.query_ids == scored.query_ids and taken.no_relevant_query_ids == scored.no_relevant_query_ids
        assert taken.answered.tolist() == scored.answered.tolist()
        assert taken.relevant_counts.tolist() == scored.relevant_counts.tolist()
        for name in names:
            assert taken.values[name].tolist() == scored.values[name].tolist(), name
        assert taken.means == scored.means


RANX_NAMES = [
    "recall@5",
    "recall@8",
    "recall@100",
    "recall",
    "precision@8",
    "precision",
    "precision@200",
    "hit_rate@8",
    "hit_rate",
    "mrr",
    "mrr@3",
    "map",
    "map@10",
    "ndcg@10",
    "ndcg",
    "ndcg@3",
    "ndcg@500",
]


def ranx_per_query(labels: QrelsArrays, ranked: RankedRun, names, threshold: int, kept: np.ndarray) -> dict[str, np.ndarray]:
    """ranx's own kernels, query by query, on the kept labels: the values the engine's
    one-pass kernel must give to the bit (0 where ranx is not asked, as the engine does)."""
    from numba.typed import List as TypedList
    from ranx.metrics import average_precision, hit_rate, ndcg, precision, recall, reciprocal_rank

    kernels = {
        "recall": recall,
        "precision": precision,
        "hit_rate": hit_rate,
        "mrr": reciprocal_rank,
        "map": average_precision,
        "ndcg": ndcg,
    }
    found = {name: np.zeros(len(labels.query_ids)) for name in names}
    for q, query_id in enumerate(labels.query_ids):
        rows = np.arange(labels.offsets[q], labels.offsets[q + 1])
        rows = rows[kept[rows]]
        entries = ranked.rows(query_id)
        if not len(rows) or entries.stop == entries.start:
            continue
        label_table = np.column_stack([labels.doc_keys[rows], labels.grades[rows]]).astype(np.float64)
        keys = ranked.doc_keys[entries]
        run_table = np.column_stack([keys, -np.arange(len(keys))]).astype(np.float64)
        for name in names:
            metric = parse_metric(name)
            kernel = kernels[metric.family]
            level = threshold if metric.binary else 1
            found[name][q] = kernel(TypedList([label_table]), TypedList([run_table]), metric.k or 0, level)[0]
    return found


@RANX
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_one_pass_kernel_gives_ranx_kernels_values_to_the_bit(seed):
    """evaluation.kernels.score_queries replaces ranx's kernels: the same float for every
    family and cut-off (past the ranking's end and the labels' too), threshold, kept labels
    (a page slice, leave-one-run-out), grade (negative, 0, above 3), unanswered query and
    query with no label."""
    rng = np.random.default_rng(seed)
    for trial in range(12):
        query_ids = [f"q{i}" for i in range(30)]
        rows = [
            (query_id, int(doc) + 1, int(rng.choice([-1, 0, 0, 1, 2, 3, 5])))
            for query_id in query_ids
            for doc in rng.choice(300, size=rng.integers(0, 30), replace=False)
        ]
        labels = QrelsArrays.from_rows(rows, query_ids=query_ids)
        answered = [q for q in query_ids if rng.random() < 0.85]
        offsets, keys = [0], []
        for _ in answered:
            returned = rng.choice(np.r_[np.arange(1, 301), -np.arange(1, 20)], size=int(rng.integers(0, 120)), replace=False)
            keys.extend(returned.tolist())
            offsets.append(len(keys))
        ranked = RankedRun(
            tuple(answered),
            np.array(offsets, dtype=np.int64),
            np.array(keys, dtype=np.int64),
            np.zeros(len(keys)),
            tuple(f"x{i}" for i in range(19)),
            1000,
            0,
        )
        threshold = int(rng.choice([0, 1, 2, 3]))
        kept = rng.random(len(labels.doc_keys)) < (0.5 if trial % 2 else 2)
        result = evaluate_run(
            labels,
            ranked,
            RANX_NAMES,
            relevance_threshold=threshold,
            labels_kept=kept,
            average_queries_without_relevant=True,
        )
        expected = ranx_per_query(labels, ranked, RANX_NAMES, threshold, kept)
        for name in RANX_NAMES:
            assert result.values[name].tobytes() == expected[name].tobytes(), (trial, name, threshold)


def test_one_match_serves_every_slice_and_belongs_to_its_run():
    labels, ranked, keys = build(QRELS, RUN)
    match = match_run(labels, ranked)
    page_slice = [keys["a"], keys["e"]]
    names = ["recall@5", "ndcg@10", "mrr"]
    with_match = evaluate_run(labels, ranked, names, page_slice=page_slice, match=match)
    without = evaluate_run(labels, ranked, names, page_slice=page_slice)
    assert with_match.means == without.means and with_match.query_ids == without.query_ids
    other, other_ranked, _ = build(QRELS, RUN)
    with pytest.raises(ValueError, match="another run"):
        evaluate_run(other, other_ranked, names, match=match)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_match_by_table_rows_finds_the_labels_a_search_by_key_finds(seed):
    # Keys of a table (a chunking's chunks, say) spread out, labels and entries drawn
    # among them, some queries with no label, some the run does not answer.
    rng = np.random.default_rng(seed)
    table_keys = np.sort(rng.choice(1_000, size=60, replace=False)) + 1
    qrels = QrelsArrays.from_rows(
        [
            (f"q{q}", int(key), int(rng.integers(0, 4)))
            for q in range(40)
            for key in rng.choice(table_keys, size=int(rng.integers(0, 8)), replace=False)
        ],
        query_ids=[f"q{q}" for q in range(45)],
    )
    counts = rng.integers(0, 30, size=42)
    ranked = RankedRun(
        query_ids=tuple(f"q{q}" for q in range(42)),
        offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        doc_keys=rng.choice(table_keys, size=int(counts.sum())),
        scores=rng.random(int(counts.sum())),
        external_doc_ids=(),
        depth=1000,
        dropped_by_depth=0,
    )
    rows = TableRows(
        labels=np.searchsorted(table_keys, qrels.doc_keys), entries=np.searchsorted(table_keys, ranked.doc_keys), count=len(table_keys)
    )
    by_key, by_row = match_run(qrels, ranked), match_run(qrels, ranked, rows=rows)
    assert (by_key.entry_label >= 0).sum() > 20
    assert by_row.entry_label.tolist() == by_key.entry_label.tolist()


def test_an_empty_slice_has_no_mean_rather_than_a_zero():
    labels, ranked, _ = build(QRELS, RUN)
    result = evaluate_run(labels, ranked, ["recall@5"], query_slice=["q2"])
    assert result.query_count == 0 and result.means == {"recall@5": None}


def test_pages_outside_the_corpus_and_unjudged_pages_are_not_relevant():
    labels, ranked, _ = build({"q": {"a": 1}}, {"q": {"outside": 3.0, "a": 2.0}})
    assert ranked.external_doc_ids == ("outside",)
    result = evaluate_run(labels, ranked, ["mrr", "precision@2"])
    assert result.means == {"mrr": 0.5, "precision@2": 0.5}


def test_metrics_may_be_given_as_names_or_definitions_and_repeat_once():
    labels, ranked, _ = build({"q": {"a": 1}}, {"q": {"a": 1.0}})
    result = evaluate_run(labels, ranked, [parse_metric("mrr"), "mrr", "recall@5"])
    assert [m.name for m in result.metrics] == ["mrr", "recall@5"]
    with pytest.raises(GoldsetError, match="unknown metric"):
        evaluate_run(labels, ranked, ["recall_5"])


def test_every_value_is_a_fraction():
    labels, ranked, _ = build(QRELS, RUN)
    result = evaluate_run(labels, ranked, [m.name for m in default_metrics(100, 8)] + ["map"])
    for values in result.values.values():
        assert ((values >= 0) & (values <= 1)).all()


THREADED_SCRIPT = """
import threading
import numpy as np
from evaluation.engine import QrelsArrays, TableRows, evaluate_run, match_run, restrict_to_queries
from lib.runs import RankedRun

n, depth = 2000, 50
query_ids = tuple(f"q{i}" for i in range(n))
labels = QrelsArrays.from_arrays(query_ids, np.arange(n), np.ones(n, dtype=np.int64), np.ones(n, dtype=np.int64))
run = RankedRun(query_ids, np.arange(0, n * depth + 1, depth), np.tile(np.arange(1, depth + 1), n),
                np.zeros(n * depth), (), depth, 0)
failures = []

def work():
    try:
        for _ in range(20):
            assert evaluate_run(labels, run, ["recall@10", "mrr"]).means["mrr"] == 1.0
    except Exception as exc:
        failures.append(exc)

threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not failures, failures
"""


def test_threads_may_evaluate_at_the_same_time():
    # Run apart: numba's workqueue layer answers concurrent kernel calls by aborting the
    # process, which would take the test session down with it.
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", THREADED_SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
