"""Completeness: Judged@k against ir_measures, leave-one-run-out against ranx, and how both
are stored beside the scores.

Judged@k is checked against ir_measures' own `Judged@k` on the four Cranfield runs. Leave-
one-run-out is checked against an independent computation: the unique relevant pages are
found with Python sets from the run files, the labels without them are scored with ranx's
public API (`Qrels.from_dict`, `Run.from_dict`, `evaluate`), on synthetic runs whose scores
have no ties, so that ranx's own ordering is the one Goldset uses.
"""

import json
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import ranx
from django.core.management import call_command

from evaluation import pooled_labels as pooled_store
from evaluation.completeness import judged_at_k, judged_at_k_by_slice, judged_at_ks_by_slice, leave_one_run_out, pooled_labels
from evaluation.engine import QrelsArrays
from evaluation.models import Completeness, Evaluation, EvaluationSettings, Run, RunPooledLabels, Score
from evaluation.selectors import version_labels, version_query_ids
from evaluation.services import evaluation_compute, run_import
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import GoldenSet
from goldenset.services import golden_set_import_beir, qrels_import, version_publish
from lib.errors import GoldsetError, ProblemCollector
from lib.runs import RankedRun, rank_run, read_trec_run
from tests.evaluation.test_trec_eval_parity import CRANFIELD_RUNS, load
from tests.support import factories
from tests.support.marks import RANX

pytestmark = RANX

# --- Judged@k against ir_measures -------------------------------------------------------------


def ir_measures_judged(qrels: list, run: list, k: int) -> tuple[float, dict[str, float]]:
    """ir_measures' Judged@k: (mean, {query_id: value})."""
    measure = ir_measures.Judged @ k
    mean = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    return mean, {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def as_ranked_for_ir_measures(run: RankedRun, doc_ids: dict[int, str]) -> list:
    """The run in Goldset's order (trec_eval's tie rule), with strictly decreasing scores so
    that ir_measures cannot reorder ties its own way (it breaks them by doc id ascending)."""
    entries = []
    for i, query_id in enumerate(run.query_ids):
        keys = run.doc_keys[run.offsets[i] : run.offsets[i + 1]].tolist()
        for rank, key in enumerate(keys, start=1):
            doc_id = doc_ids[key] if key > 0 else run.external_doc_ids[-key - 1]
            entries.append(ir_measures.ScoredDoc(query_id, doc_id, float(-rank)))
    return entries


def cranfield_doc_ids(qrels_path: Path) -> dict[int, str]:
    """The doc keys `load` gives: doc ids numbered in order of first sight in the qrels."""
    keys: dict[str, int] = {}
    for line in qrels_path.read_text(encoding="utf-8").splitlines():
        keys.setdefault(line.split()[2], len(keys) + 1)
    return {key: doc_id for doc_id, key in keys.items()}


@pytest.mark.shared_data
@pytest.mark.parametrize("k", [8, 10, 100])
@pytest.mark.parametrize("name", CRANFIELD_RUNS)
def test_judged_at_k_equals_ir_measures_judged_on_the_cranfield_runs(shared_data, name, k):
    folder = shared_data / "cranfield" / "runs"
    qrels_path = folder / "qrels_original_grades.trec"
    qrels, run = load(qrels_path, folder / f"{name}.run")
    theirs_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    mean, per_query = ir_measures_judged(theirs_qrels, as_ranked_for_ir_measures(run, cranfield_doc_ids(qrels_path)), k)
    ours = judged_at_k(qrels, run, k)
    # Every Cranfield query has a relevant page, so both average the same 225 queries.
    assert ours.query_count == len(per_query) == 225
    assert ours.per_query() == pytest.approx(per_query, abs=1e-12)
    assert ours.mean == pytest.approx(mean, abs=1e-12)
    if name == "stevinjs_custom_bm25":
        assert ours.per_query()["15"] == per_query["15"] == 0.0  # the run does not answer topic 15


@pytest.mark.shared_data
@pytest.mark.parametrize("name", CRANFIELD_RUNS)
def test_on_the_raw_cranfield_files_only_a_tie_across_rank_k_separates_us_from_ir_measures(shared_data, name):
    # ir_measures orders tied scores by doc id ascending, trec_eval (and so Goldset) descending:
    # a query can differ only where a group of tied scores straddles rank k.
    folder = shared_data / "cranfield" / "runs"
    qrels_path = folder / "qrels_original_grades.trec"
    qrels, run = load(qrels_path, folder / f"{name}.run")
    theirs_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    raw_run = list(ir_measures.read_trec_run(str(folder / f"{name}.run")))
    differing_at = {}
    for k in (8, 10, 100):
        _, per_query = ir_measures_judged(theirs_qrels, raw_run, k)
        ours = judged_at_k(qrels, run, k).per_query()
        differing = {q for q, value in ours.items() if abs(value - per_query[q]) > 1e-12}
        straddling = set()
        for i, query_id in enumerate(run.query_ids):
            scores = run.scores[run.offsets[i] : run.offsets[i + 1]]
            if len(scores) > k and scores[k - 1] == scores[k]:
                straddling.add(query_id)
        assert differing <= straddling, (name, k)
        differing_at[k] = differing
    # Only the run with 443 tied pairs differs, on a few queries.
    if name == "stevinjs_custom_bm25":
        assert differing_at == {8: {"133"}, 10: {"97", "109", "200"}, 100: set()}
    else:
        assert differing_at == {8: set(), 10: set(), 100: set()}


def tiny_qrels(rows, query_ids=None) -> QrelsArrays:
    return QrelsArrays.from_rows(rows, query_ids=query_ids)


def tiny_run(ranking: dict[str, list[int]]) -> RankedRun:
    lines = [f"{q} Q0 {key} {rank} {100 - rank} t" for q, keys in ranking.items() for rank, key in enumerate(keys, start=1)]
    problems = ProblemCollector()
    entries = read_trec_run(lines, "run", problems)
    assert not problems.problems
    return rank_run(entries, doc_keys={str(key): key for keys in ranking.values() for key in keys})


def ir_measures_inputs(rows, ranking) -> tuple[list, list]:
    qrels = [ir_measures.Qrel(q, str(key), grade) for q, key, grade in rows]
    run = [ir_measures.ScoredDoc(q, str(key), float(100 - rank)) for q, keys in ranking.items() for rank, key in enumerate(keys, 1)]
    return qrels, run


def test_a_run_returning_fewer_than_k_pages_is_judged_on_what_it_returned_as_in_ir_measures():
    rows = [("q1", 1, 1), ("q1", 2, 0), ("q2", 5, 2)]
    ranking = {"q1": [1, 2, 3], "q2": [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]}
    ours = judged_at_k(tiny_qrels(rows), tiny_run(ranking), 8)
    assert ours.per_query() == {"q1": pytest.approx(2 / 3), "q2": pytest.approx(1 / 8)}
    assert ours.per_query() == pytest.approx(ir_measures_judged(*ir_measures_inputs(rows, ranking), 8)[1])


def test_every_grade_counts_as_judged_zero_and_negative_included_as_in_ir_measures():
    rows = [("q1", 1, 3), ("q1", 2, 0), ("q1", 3, -1)]
    ranking = {"q1": [1, 2, 3, 4]}
    ours = judged_at_k(tiny_qrels(rows), tiny_run(ranking), 4)
    assert ours.mean == 0.75 == ir_measures_judged(*ir_measures_inputs(rows, ranking), 4)[0]


def test_an_unanswered_query_counts_zero_and_a_query_without_a_relevant_page_is_left_out():
    # q2 is not answered: 0, as in ir_measures. q3 has labels but none relevant: ir_measures
    # averages it in, Goldset leaves it out as every score beside the figure does.
    rows = [("q1", 1, 1), ("q2", 2, 1), ("q3", 3, 0)]
    ranking = {"q1": [1, 9], "q3": [3, 9]}
    ours = judged_at_k(tiny_qrels(rows), tiny_run(ranking), 2)
    assert ours.per_query() == {"q1": 0.5, "q2": 0.0}
    their_mean, theirs = ir_measures_judged(*ir_measures_inputs(rows, ranking), 2)
    assert theirs == {"q1": 0.5, "q2": 0.0, "q3": 0.5} and their_mean == pytest.approx(1 / 3)
    assert judged_at_k(tiny_qrels(rows), tiny_run(ranking), 2, query_slice={"q2", "q3"}).per_query() == {"q2": 0.0}


# --- leave-one-run-out against ranx -----------------------------------------------------------

DEPTH = 20
K_FIRST, K_FINAL = 20, 5
SYSTEMS = ("alpha", "beta", "gamma")


def synthetic_data(seed: int = 11):
    """30 queries over 400 pages; three systems answer every query with 30 pages each
    (scores 100 - rank: no ties); labels cover about half of the pooled top 20s, graded 0-3,
    plus one relevant page per query that no run found. On q1 every relevant page is one
    only alpha has in its top 20, so leaving alpha out empties that query."""
    rng = np.random.default_rng(seed)
    queries = [f"q{n}" for n in range(1, 31)]
    runs: dict[str, dict[str, list[str]]] = {system: {} for system in SYSTEMS}
    qrels: dict[tuple[str, str], int] = {}
    for query_id in queries:
        candidates = [f"d{n}" for n in rng.choice(np.arange(1, 401), size=60, replace=False)]
        for system in SYSTEMS:
            runs[system][query_id] = [candidates[i] for i in rng.choice(60, size=30, replace=False)]
        pooled = sorted({doc for system in SYSTEMS for doc in runs[system][query_id][:DEPTH]})
        for doc in pooled:
            if rng.random() < 0.5:
                qrels[(query_id, doc)] = int(rng.integers(0, 4))
        unfound = next(f"d{n}" for n in range(1, 401) if f"d{n}" not in {d for s in SYSTEMS for d in runs[s][query_id]})
        qrels[(query_id, unfound)] = 2
    others = {doc for system in ("beta", "gamma") for doc in runs[system]["q1"][:DEPTH]}
    only_alpha = [doc for doc in runs["alpha"]["q1"][:DEPTH] if doc not in others]
    for key in [key for key in qrels if key[0] == "q1"]:
        del qrels[key]
    qrels[("q1", only_alpha[0])] = 3
    qrels[("q1", only_alpha[1])] = 1
    return queries, runs, qrels


def run_lines(ranking: dict[str, list[str]]) -> list[str]:
    return [f"{q} Q0 {doc} {rank} {100 - rank} t\n" for q, docs in ranking.items() for rank, doc in enumerate(docs, start=1)]


def ranx_leave_one_run_out(qrels, runs, system, *, threshold=1) -> dict[str, tuple[float, float]]:
    """metric -> (full mean, reduced mean) by ranx alone: the unique relevant pages of
    `system` are found with sets, and regraded 0 (an unjudged page scores as a grade-0 one)."""
    averaged = sorted({q for (q, _), grade in qrels.items() if grade >= threshold})
    pooled_elsewhere = {(q, doc) for other in runs if other != system for q, docs in runs[other].items() for doc in docs[:DEPTH]}
    unique = {(q, doc) for q, docs in runs[system].items() for doc in docs[:DEPTH] if (q, doc) not in pooled_elsewhere}
    full, reduced = {}, {}
    for (q, doc), grade in qrels.items():
        if q in averaged:
            full.setdefault(q, {})[doc] = grade
            reduced.setdefault(q, {})[doc] = 0 if (q, doc) in unique else grade
    run = ranx.Run.from_dict({q: {doc: float(100 - rank) for rank, doc in enumerate(runs[system][q], 1)} for q in averaged})
    metrics = [f"recall@{K_FIRST}", "ndcg@10"]
    before = ranx.evaluate(ranx.Qrels.from_dict(full), run, metrics, return_mean=False)
    after = ranx.evaluate(ranx.Qrels.from_dict(reduced), run, metrics, return_mean=False)
    return {m: (float(np.mean(before[m])), float(np.mean(after[m]))) for m in metrics}


@pytest.fixture
def synthetic_set(db):
    queries, runs, qrels = synthetic_data()
    pages = factories.pages(*(f"d{n}" for n in range(1, 401)))
    golden_set = factories.golden_set(
        "pooled",
        qrels=qrels,
        pages=pages,
        queries=factories.queries(*queries[:15], lang="en") + factories.queries(*queries[15:], lang="de"),
        k_first=K_FIRST,
        k_final=K_FINAL,
        query_slice_fields=["lang"],
        page_slice_fields=[],
    )
    EvaluationSettings.objects.create(golden_set=golden_set, completeness_depth=DEPTH)
    for system in SYSTEMS:
        run_import(
            golden_set=golden_set,
            lines=run_lines(runs[system]),
            source_name=f"{system}.run",
            system=system,
            stage="first_stage",
            name=system,
        )
    version = version_publish(golden_set=golden_set)
    return golden_set, version, runs, qrels


def overall_row(run_name: str, version) -> Completeness:
    return Completeness.objects.get(evaluation__run__name=run_name, evaluation__version=version, slice="")


def test_leave_one_run_out_reports_the_drop_ranx_gives_without_the_runs_unique_relevant_pages(synthetic_set):
    golden_set, version, runs, qrels = synthetic_set
    for system in SYSTEMS:
        evaluation_compute(run=Run.objects.get(name=system), version=version)
        row = overall_row(system, version)
        expected = ranx_leave_one_run_out(qrels, runs, system)
        full_recall, reduced_recall = expected[f"recall@{K_FIRST}"]
        full_ndcg, reduced_ndcg = expected["ndcg@10"]
        assert row.loro_recall_k_first == pytest.approx(reduced_recall, abs=1e-12)
        assert row.loro_ndcg_10 == pytest.approx(reduced_ndcg, abs=1e-12)
        assert row.loro_recall_change_points == pytest.approx((reduced_recall - full_recall) * 100, abs=1e-9)
        assert row.loro_ndcg_change_points == pytest.approx((reduced_ndcg - full_ndcg) * 100, abs=1e-9)
        # the full figures are the stored scores
        stored = Score.objects.get(evaluation__run__name=system, evaluation__version=version, slice="", metric=f"recall@{K_FIRST}")
        assert stored.value == pytest.approx(full_recall, abs=1e-12)
        assert (row.loro_depth, row.loro_other_runs) == (DEPTH, 2)
    alpha = overall_row("alpha", version)
    assert alpha.loro_recall_change_points < -5 and alpha.unique_relevant_count > 2 and alpha.loro_emptied_queries == 1


def test_leave_one_run_out_does_not_need_ndcg_among_the_sets_metrics(synthetic_set):
    golden_set, version, runs, qrels = synthetic_set
    evaluation_settings_update(golden_set=golden_set, user=None, metrics=[f"recall@{K_FINAL}", f"recall@{K_FIRST}"])
    evaluation_compute(run=Run.objects.get(name="beta"), version=version)
    full_ndcg, reduced_ndcg = ranx_leave_one_run_out(qrels, runs, "beta")["ndcg@10"]
    row = overall_row("beta", version)
    assert row.loro_ndcg_10 == pytest.approx(reduced_ndcg, abs=1e-12)
    assert row.loro_ndcg_change_points == pytest.approx((reduced_ndcg - full_ndcg) * 100, abs=1e-9)


def test_publishing_the_labels_without_the_runs_unique_pages_scores_it_as_leave_one_run_out_said(synthetic_set):
    # The acceptance case through the app: a version in which alpha's unique relevant pages
    # are graded 0 scores alpha as leave-one-run-out predicted on the version before, once
    # the query that lost every relevant page (left out on the new version, 0 in the
    # prediction) is accounted for.
    golden_set, version, runs, qrels = synthetic_set
    alpha = Run.objects.get(name="alpha")
    evaluation_compute(run=alpha, version=version)
    predicted = overall_row("alpha", version)
    pooled_elsewhere = {(q, doc) for s in ("beta", "gamma") for q, docs in runs[s].items() for doc in docs[:DEPTH]}
    unique = sorted(
        (q, doc)
        for q, docs in runs["alpha"].items()
        for doc in docs[:DEPTH]
        if qrels.get((q, doc), 0) >= 1 and (q, doc) not in pooled_elsewhere
    )
    assert len(unique) == predicted.unique_relevant_count
    qrels_import(golden_set_slug=golden_set.slug, lines=[f"{q} 0 {doc} 0\n" for q, doc in unique], source_name="without alpha")
    reduced = version_publish(golden_set=golden_set)
    scored = evaluation_compute(run=alpha, version=reduced)
    averaged = Evaluation.objects.get(run=alpha, version=version).queries_averaged
    assert scored.queries_averaged == averaged - predicted.loro_emptied_queries
    for metric, value in ((f"recall@{K_FIRST}", predicted.loro_recall_k_first), ("ndcg@10", predicted.loro_ndcg_10)):
        on_reduced = Score.objects.get(evaluation=scored, slice="", metric=metric).value
        assert value == pytest.approx(on_reduced * scored.queries_averaged / averaged, abs=1e-12)


def test_a_query_that_loses_every_relevant_page_stays_in_the_average_as_zero():
    # q1's one relevant page only `run` found; q2's was found by the other run too.
    qrels = tiny_qrels([("q1", 1, 2), ("q2", 2, 1)])
    run = tiny_run({"q1": [1, 9], "q2": [2, 9]})
    other = tiny_run({"q1": [8, 9], "q2": [2, 8]})
    found = leave_one_run_out(qrels, run, [other], depth=2, metrics=["recall@2", "ndcg@10"])
    assert found.full == {"recall@2": 1.0, "ndcg@10": 1.0}
    assert found.reduced == {"recall@2": 0.5, "ndcg@10": 0.5}
    assert found.change_points("recall@2") == -50.0
    assert (found.query_count, found.unique_relevant_count, found.emptied_query_count) == (2, 1, 1)


def test_only_pages_within_the_pool_depth_are_a_runs_own_contribution():
    # The other run has page 1 at rank 3: within a pool of depth 3 it shares it, within 2 it does not.
    qrels = tiny_qrels([("q1", 1, 1), ("q1", 5, 1)])
    run = tiny_run({"q1": [1, 5]})
    other = tiny_run({"q1": [7, 5, 1]})
    assert leave_one_run_out(qrels, run, [other], depth=3, metrics=["recall@2"]).unique_relevant_count == 0
    assert leave_one_run_out(qrels, run, [other], depth=2, metrics=["recall@2"]).unique_relevant_count == 1


def test_the_runs_own_system_is_not_part_of_the_pool_it_is_left_out_of(synthetic_set):
    # alpha's reranker reorders alpha's own pages: counted as "another run", it would hide
    # every one of alpha's unique pages, which a new system that was never pooled lacks too.
    golden_set, version, runs, qrels = synthetic_set
    evaluation_compute(run=Run.objects.get(name="alpha"), version=version)
    before = overall_row("alpha", version)
    reranked = {q: list(reversed(docs[:DEPTH])) for q, docs in runs["alpha"].items()}
    run_import(
        golden_set=golden_set, lines=run_lines(reranked), source_name="r.run", system="alpha", stage="reranked", name="alpha reranked"
    )
    evaluation_compute(run=Run.objects.get(name="alpha"), version=version)
    after = overall_row("alpha", version)
    assert (after.loro_other_runs, after.unique_relevant_count) == (2, before.unique_relevant_count)
    assert after.loro_recall_change_points == before.loro_recall_change_points
    evaluation_compute(run=Run.objects.get(name="alpha reranked"), version=version)
    assert overall_row("alpha reranked", version).loro_other_runs == 2


def test_a_process_decodes_each_pooled_run_once_a_version(synthetic_set, django_assert_num_queries):
    golden_set, version, runs, qrels = synthetic_set
    labels = QrelsArrays.from_rows(version_labels(version), query_ids=version_query_ids(version))
    pooled_store.forget()
    RunPooledLabels.objects.all().delete()
    # The runs, what is stored (nothing), then for each of the two others: stored meanwhile?
    # its data, and what it pooled stored for the other processes.
    with django_assert_num_queries(2 + 2 * 3):
        first, count = pooled_store.get_or_build(version, labels, exclude_system="alpha", depth=DEPTH)
    assert RunPooledLabels.objects.filter(version=version, depth=DEPTH).count() == 2
    with django_assert_num_queries(1):  # this process keeps them
        again, _ = pooled_store.get_or_build(version, labels, exclude_system="alpha", depth=DEPTH)
    assert count == 2 and again.tolist() == first.tolist()
    by_hand = {(q, doc) for system in ("beta", "gamma") for q, docs in runs[system].items() for doc in docs[:DEPTH] if (q, doc) in qrels}
    assert int(first.sum()) == len(by_hand)
    pooled_store.forget()  # another process: reads what was stored, decodes no run
    with django_assert_num_queries(2):
        stored, _ = pooled_store.get_or_build(version, labels, exclude_system="alpha", depth=DEPTH)
    assert stored.tolist() == first.tolist()
    with django_assert_num_queries(2 + 2 * 3):  # another depth is another pool
        pooled_store.get_or_build(version, labels, exclude_system="alpha", depth=DEPTH - 1)


def test_the_labels_a_run_pooled_are_those_of_its_top_pages():
    qrels = tiny_qrels([("q1", 1, 1), ("q1", 2, 0), ("q1", 3, 2), ("q2", 4, 1)])
    run = tiny_run({"q1": [3, 9, 2, 1], "q2": [4]})
    # label rows are ordered by query, grade descending, then key: (q1,3) (q1,1) (q1,2) (q2,4)
    assert pooled_labels(qrels, run, 3).tolist() == [0, 2, 3]
    assert pooled_labels(qrels, run, 1).tolist() == [0, 3]


def test_with_no_other_system_leave_one_run_out_is_not_computed(db):
    golden_set = factories.golden_set("alone")
    run = run_import(
        golden_set=golden_set, lines=["q1 Q0 d1 1 2 t\n", "q2 Q0 d3 1 2 t\n"], source_name="r", system="s", stage="first_stage"
    )
    version = version_publish(golden_set=golden_set)
    evaluation_compute(run=run, version=version)
    row = overall_row(run.name, version)
    assert row.judged_at_k_final == 1.0 and row.queries == 2
    assert (row.loro_other_runs, row.loro_recall_k_first, row.unique_relevant_count) == (None, None, None)


def test_computing_twice_leaves_one_completeness_row_per_slice_with_the_same_figures(synthetic_set):
    golden_set, version, runs, qrels = synthetic_set
    alpha = Run.objects.get(name="alpha")
    evaluation_compute(run=alpha, version=version)
    fields = ["slice", "queries", "judged_at_k_final", "judged_at_k_first", "loro_recall_k_first", "loro_ndcg_change_points"]
    first = list(Completeness.objects.order_by("slice").values_list(*fields))
    evaluation_compute(run=alpha, version=version)
    assert list(Completeness.objects.order_by("slice").values_list(*fields)) == first
    assert [row[0] for row in first] == ["", "query:lang=de", "query:lang=en"]


def test_judged_at_k_is_stored_overall_and_per_query_slice_over_the_queries_the_scores_average(synthetic_set):
    golden_set, version, runs, qrels = synthetic_set
    evaluation = evaluation_compute(run=Run.objects.get(name="beta"), version=version)
    rows = {row.slice: row for row in Completeness.objects.filter(evaluation=evaluation)}
    scores = {s.slice: s.queries_averaged for s in Score.objects.filter(evaluation=evaluation, metric=f"recall@{K_FIRST}")}
    assert {name: row.queries for name, row in rows.items()} == scores
    with_relevant = {q for (q, _), grade in qrels.items() if grade >= 1}

    def judged(query_ids, k):
        # every run returns 30 pages, more than either k
        return float(np.mean([sum((q, doc) in qrels for doc in runs["beta"][q][:k]) / k for q in query_ids if q in with_relevant]))

    english = [f"q{n}" for n in range(1, 16)]
    assert rows["query:lang=en"].judged_at_k_final == pytest.approx(judged(english, K_FINAL), abs=1e-12)
    assert rows[""].judged_at_k_first == pytest.approx(judged([f"q{n}" for n in range(1, 31)], K_FIRST), abs=1e-12)
    assert rows["query:lang=en"].loro_other_runs is None  # leave-one-run-out is an overall figure


def test_a_page_slice_has_scores_but_no_completeness_row(db):
    pages = factories.pages("old1", "old2", kind="old") + factories.pages("new1", kind="new")
    golden_set = factories.golden_set(
        "paged", pages=pages, queries=factories.queries("q1"), page_slice_fields=["kind"], qrels={("q1", "old1"): 1, ("q1", "new1"): 1}
    )
    run = run_import(golden_set=golden_set, lines=["q1 Q0 old1 1 2 t\n"], source_name="r", system="s", stage="first_stage")
    evaluation = evaluation_compute(run=run, version=version_publish(golden_set=golden_set))
    assert Score.objects.filter(evaluation=evaluation, slice="page:kind=old").exists()
    assert list(Completeness.objects.filter(evaluation=evaluation).values_list("slice", flat=True)) == [""]


@pytest.mark.shared_data
def test_cranfield_runs_uploaded_through_the_app_store_ir_measures_judged_at_k_final_and_k_first(shared_data, db):
    golden_set_import_beir(directory=shared_data / "cranfield", slug="cranfield")
    golden_set = GoldenSet.objects.get(slug="cranfield")
    version = version_publish(golden_set=golden_set)
    assert (version.k_final, version.k_first) == (8, 100)
    theirs_qrels = [
        ir_measures.Qrel(q, d, int(g))
        for q, d, g in (line.split("\t") for line in (shared_data / "cranfield" / "qrels" / "test.tsv").read_text().splitlines()[1:])
    ]
    doc_ids = dict(golden_set.corpus.pages.values_list("id", "doc_id"))
    runs_dir = shared_data / "cranfield" / "runs"
    for name in CRANFIELD_RUNS:
        with (runs_dir / f"{name}.run").open() as handle:
            run = run_import(golden_set=golden_set, lines=handle, source_name=name, system=name, stage="first_stage")
    for run in Run.objects.filter(golden_set=golden_set):
        evaluation_compute(run=run, version=version)
        row = overall_row(run.name, version)
        ranked = as_ranked_for_ir_measures(RankedRun.from_bytes(bytes(run.data.ranked)), doc_ids)
        assert row.judged_at_k_final == pytest.approx(ir_measures_judged(theirs_qrels, ranked, 8)[0], abs=1e-12)
        assert row.judged_at_k_first == pytest.approx(ir_measures_judged(theirs_qrels, ranked, 100)[0], abs=1e-12)
        assert row.queries == 225 and row.loro_other_runs == 3


# --- the evaluate command and the settings --------------------------------------------------


def test_the_evaluate_command_prints_completeness_beside_each_record(synthetic_set, capsys):
    golden_set, version, runs, qrels = synthetic_set
    call_command("evaluate", golden_set.slug, "--format", "json")
    records = json.loads(capsys.readouterr().out)
    overall = next(r for r in records if r["run"] == "alpha" and r["slice"] is None)
    row = overall_row("alpha", version)
    completeness = overall["completeness"]
    assert completeness["k_final"] == K_FINAL and completeness["judged_at_k_final"] == round(row.judged_at_k_final, 6)
    assert completeness["judged_at_k_first"] == round(row.judged_at_k_first, 6) and completeness["queries"] == 30
    loro = completeness["leave_one_run_out"]
    assert loro[f"recall@{K_FIRST}"] == round(row.loro_recall_k_first, 6)
    assert loro[f"recall@{K_FIRST}_change_points"] == round(row.loro_recall_change_points, 4)
    assert (loro["depth"], loro["other_runs"], loro["unique_relevant_pages"], loro["emptied_queries"]) == (
        DEPTH,
        2,
        row.unique_relevant_count,
        1,
    )
    sliced = next(r for r in records if r["run"] == "alpha" and r["slice"] == "query:lang=en")
    assert "leave_one_run_out" not in sliced["completeness"] and sliced["completeness"]["queries"] == 15
    # Half the pooled pages are labelled: every run is under the 0.9 floor, and says so.
    assert (
        completeness["warning"].startswith(f"Judged@{K_FINAL} = ")
        and f"pool this run (build_pool pooled --runs alpha --depth {DEPTH})" in completeness["warning"]
    )

    call_command("evaluate", golden_set.slug)
    table = capsys.readouterr().out
    assert f"judged@{K_FINAL}" in table.splitlines()[1]
    assert "alpha: Judged@5 = " in table


def test_the_settings_service_keeps_a_depth_and_a_floor_and_refuses_bad_ones(synthetic_set):
    golden_set = synthetic_set[0]
    saved = evaluation_settings_update(golden_set=golden_set, user=None, completeness_depth=50, judged_floor=0.8)
    assert (saved.completeness_depth, saved.judged_floor) == (50, 0.8)
    with pytest.raises(GoldsetError) as caught:
        evaluation_settings_update(golden_set=golden_set, user=None, completeness_depth=0, judged_floor=90)
    assert any("pool depth from 1" in p for p in caught.value.problems)
    assert any("0.9, not 90" in p for p in caught.value.problems)


def test_judged_at_several_k_is_judged_at_each_k():
    labels = QrelsArrays.from_rows([("q1", 1, 1), ("q1", 2, 0), ("q2", 3, 2)], query_ids=["q1", "q2", "q3"])
    ranked = RankedRun(("q1", "q2"), np.array([0, 3, 4]), np.array([2, 9, 1, 3]), np.zeros(4), (), 10, 0)
    slices = {"": None, "query:lang=de": {"q2"}}
    both = judged_at_ks_by_slice(labels, ranked, [1, 3], slices)
    for k in (1, 3):
        alone = judged_at_k_by_slice(labels, ranked, k, slices)
        for name in slices:
            assert both[k][name].query_ids == alone[name].query_ids
            assert both[k][name].values.tolist() == alone[name].values.tolist()
    assert both[3][""].values.tolist() == [2 / 3, 1.0]
