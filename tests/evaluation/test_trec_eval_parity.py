"""Our scores equal trec_eval's own output, to the 4 decimals it prints.

The expected files in ../shared/data were written by trec_eval 10.0 (and 9.0.7 for the
student's originals); see the README.txt beside them for each command line. Every query
in these qrels has a relevant document, so Goldset's rule (a query without one is left
out) and trec_eval's (it averages in as 0) give the same averages here; both are run.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from evaluation.engine import QrelsArrays, evaluate_run
from lib.errors import ProblemCollector
from lib.formats import read_trec_qrels
from lib.runs import RankedRun, rank_run, read_trec_run

pytestmark = pytest.mark.shared_data

# the acceptance measures: our name -> trec_eval's
ACCEPTANCE = {
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "precision@5": "P_5",
}
# further measures that `-m all_trec` prints and we can name
MORE = {
    "precision@10": "P_10",
    "recall@100": "recall_100",
    "ndcg@100": "ndcg_cut_100",
    "ndcg": "ndcg",
    "map": "map",
    "map@10": "map_cut_10",
    "hit_rate@10": "success_10",
}
CRANFIELD_RUNS = ["stevinjs_custom_bm25", "stevinjs_english_bm25", "stevinjs_standard_bm25", "stevinjs_standard_classic"]


def read_trec_eval_output(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval's `measure qid value` lines as {qid or "all": {measure: value as printed}}."""
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, query_id, value = line.split()
        out.setdefault(query_id, {})[measure] = value
    return out


def load(qrels_path: Path, run_path: Path, *, depth: int = 1000) -> tuple[QrelsArrays, RankedRun]:
    """Labels and ranked run from TREC files, doc ids keyed in order of first sight in the qrels."""
    problems = ProblemCollector()
    labels = list(read_trec_qrels(qrels_path.open(encoding="utf-8"), qrels_path.name, problems))
    # trec_eval's results.trunc has text after the tag on 5 lines; Goldset refuses such lines
    # (lib.runs), so the comparison reads only the 6 columns trec_eval itself reads.
    lines = (" ".join(line.split()[:6]) + "\n" for line in run_path.open(encoding="utf-8"))
    entries = read_trec_run(lines, run_path.name, problems)
    assert problems.problems == []
    keys: dict[str, int] = {}
    for label in labels:
        keys.setdefault(label.doc_id, len(keys) + 1)
    qrels = QrelsArrays.from_rows((label.query_id, keys[label.doc_id], label.grade) for label in labels)
    return qrels, rank_run(entries, doc_keys=keys, depth=depth)


def assert_means_match(result, expected: dict[str, str], names: dict[str, str]) -> None:
    found = {ours: f"{result.means[ours]:.4f}" for ours in names}
    wanted = {ours: expected[theirs] for ours, theirs in names.items()}
    assert found == wanted


def assert_each_query_matches(result, expected: dict[str, dict[str, str]], names: dict[str, str]) -> None:
    for ours, theirs in names.items():
        found = {q: f"{v:.4f}" for q, v in result.per_query(ours).items()}
        wanted = {q: values[theirs] for q, values in expected.items() if q != "all"}
        assert found == wanted, ours


@pytest.mark.parametrize("grades", ["original_grades", "remapped"])
@pytest.mark.parametrize("name", CRANFIELD_RUNS)
def test_cranfield_runs_score_as_trec_eval_c_scores_them(shared_data, name, grades):
    folder = shared_data / "cranfield" / "runs"
    qrels_file = "qrels_original_grades.trec" if grades == "original_grades" else "qrels_remapped_stevinjs.trec"
    qrels, run = load(folder / qrels_file, folder / f"{name}.run")
    expected = read_trec_eval_output(folder / "expected" / f"{name}.trec_eval-10.0.c.all_trec.{grades}.txt")["all"]
    names = ACCEPTANCE | MORE
    for trec_eval_rule in (False, True):
        result = evaluate_run(qrels, run, names, average_queries_without_relevant=trec_eval_rule)
        assert_means_match(result, expected, names)
        assert result.query_count == int(expected["num_q"]) == 225
        assert result.no_relevant_count == 0
        assert result.unanswered_count == (1 if name == "stevinjs_custom_bm25" else 0)
    assert len(run) == int(expected["num_ret"])


def test_the_missing_cranfield_topic_scores_zero_in_every_measure(shared_data):
    folder = shared_data / "cranfield" / "runs"
    qrels, run = load(folder / "qrels_original_grades.trec", folder / "stevinjs_custom_bm25.run")
    result = evaluate_run(qrels, run, ACCEPTANCE)
    assert result.unanswered_query_ids == ("15",)
    assert {name: result.per_query(name)["15"] for name in ACCEPTANCE} == dict.fromkeys(ACCEPTANCE, 0.0)


def test_breaking_ties_the_other_way_would_miss_trec_evals_figures(shared_data):
    # Proof that the parity above rests on the tie rule: the tied run's P_5 and recall_5 move.
    folder = shared_data / "cranfield" / "runs"
    qrels, run = load(folder / "qrels_original_grades.trec", folder / "stevinjs_custom_bm25.run")
    expected = read_trec_eval_output(folder / "expected" / "stevinjs_custom_bm25.trec_eval-10.0.c.all_trec.original_grades.txt")["all"]
    query = run.query_index
    starts_group = np.r_[True, (query[1:] != query[:-1]) | (run.scores[1:] != run.scores[:-1])]
    order = np.lexsort((-np.arange(len(run)), np.cumsum(starts_group)))  # each tie group reversed
    ascending = dataclasses.replace(run, doc_keys=run.doc_keys[order], scores=run.scores[order])
    result = evaluate_run(qrels, ascending, ["precision@5", "recall@5"])
    assert f"{result.means['precision@5']:.4f}" == "0.1760" != expected["P_5"]
    assert f"{result.means['recall@5']:.4f}" == "0.1485" != expected["recall_5"]


def test_cranfield_scores_match_trec_eval_query_by_query(shared_data):
    folder = shared_data / "cranfield" / "runs"
    qrels, run = load(folder / "qrels_remapped_stevinjs.trec", folder / "stevinjs_standard_bm25.run")
    expected = read_trec_eval_output(folder / "expected" / "stevinjs_standard_bm25.trec_eval-10.0.q.c.all_trec.remapped.txt")
    names = ACCEPTANCE | MORE
    assert_each_query_matches(evaluate_run(qrels, run, names), expected, names)


def test_trec_eval_9_without_c_averaged_over_the_answered_topics_only(shared_data):
    # 9.0.7 silently dropped the run's missing topic 15 (num_q 224); a query slice of the
    # answered topics reproduces it, and shows what -c changes.
    folder = shared_data / "cranfield" / "runs"
    qrels, run = load(folder / "qrels_remapped_stevinjs.trec", folder / "stevinjs_custom_bm25.run")
    expected = read_trec_eval_output(folder / "expected" / "stevinjs_custom_bm25.trec_eval-9.0.7.remapped.txt")["all"]
    names = {"mrr": "recip_rank", "precision@5": "P_5", "precision@10": "P_10", "map": "map"}
    result = evaluate_run(qrels, run, names, query_slice=run.query_ids)
    assert result.query_count == int(expected["num_q"]) == 224
    assert_means_match(result, expected, names)


def test_trec_evals_own_test_run_scores_as_in_its_quicktest(shared_data):
    folder = shared_data / "trec_eval_test"
    qrels, run = load(folder / "qrels.test", folder / "results.test")
    names = ACCEPTANCE | MORE
    result = evaluate_run(qrels, run, names)
    assert_means_match(result, read_trec_eval_output(folder / "out.test.a")["all"], names)
    assert_each_query_matches(result, read_trec_eval_output(folder / "out.test.aq"), names)


def test_the_truncated_run_with_junk_columns_and_a_missing_topic_matches_trec_eval_c(shared_data):
    folder = shared_data / "trec_eval_test"
    qrels, run = load(folder / "qrels.test", folder / "results.trunc")
    expected = read_trec_eval_output(folder / "out.test.aqc")
    names = ACCEPTANCE | MORE
    result = evaluate_run(qrels, run, names)
    assert result.unanswered_query_ids == ("302",)
    assert_means_match(result, expected["all"], names)
    assert_each_query_matches(result, expected, names)


def test_a_depth_of_100_matches_trec_eval_M100(shared_data):
    folder = shared_data / "trec_eval_test"
    qrels, run = load(folder / "qrels.test", folder / "results.trunc", depth=100)
    expected = read_trec_eval_output(folder / "out.test.aqcM")
    assert len(run) == int(expected["all"]["num_ret"]) == 184
    assert run.dropped_by_depth == 584 - 184
    names = ACCEPTANCE | MORE
    result = evaluate_run(qrels, run, names)
    assert_means_match(result, expected["all"], names)
    assert_each_query_matches(result, expected, names)


def test_a_threshold_of_2_matches_trec_eval_l2_and_leaves_ndcg_gains_alone(shared_data):
    folder = shared_data / "trec_eval_test"
    qrels, run = load(folder / "qrels.rel_level", folder / "results.test")
    expected = read_trec_eval_output(folder / "out.test.aql")
    names = ACCEPTANCE | MORE
    result = evaluate_run(qrels, run, names, relevance_threshold=2)
    assert_means_match(result, expected["all"], names)
    assert_each_query_matches(result, expected, names)
