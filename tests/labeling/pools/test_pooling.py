"""The Cranfield replay of bench/pooling.py: judging each pool pair from the known qrels,
the adaptive strategies find the relevant pages with no more judgments than depth order."""

import functools
from pathlib import Path

import pytest

from labeling.pools import strategies as pooling

pytestmark = pytest.mark.shared_data


@functools.cache
def load(folder: Path) -> tuple[list[dict[str, list[str]]], dict[str, set[str]]]:
    runs = pooling.runs_from_trec_files(sorted((folder / "runs").glob("*.run")))
    return runs, pooling.relevant_from_beir_qrels(folder / "qrels" / "test.tsv")


@pytest.fixture
def cranfield(shared_data):
    """The four runs (doc ids best first, per query) and the relevant pages per query."""
    return load(shared_data / "cranfield")


def test_the_replay_reads_the_four_runs_in_trec_eval_order(cranfield):
    runs, relevant = cranfield
    assert [len(run) for run in runs] == [224, 225, 225, 225]  # custom_bm25 lacks topic 15
    assert sum(map(len, relevant.values())) == 1612  # grades 1-4; -1 is not relevant


@pytest.mark.parametrize("depth", [10, 50])
def test_every_strategy_judges_each_pair_of_the_pool_once(cranfield, depth):
    runs, relevant = cranfield
    results = [pooling.simulate(name, runs, relevant, depth) for name in pooling.STRATEGIES]
    assert len({(r.pool_size, r.relevant) for r in results}) == 1
    for result in results:
        assert len(result.found) == result.pool_size and result.found[-1] == result.relevant


@pytest.mark.parametrize("depth", [10, 50])
@pytest.mark.parametrize("name", [name for name, cls in pooling.STRATEGIES.items() if cls.adaptive])
def test_adaptive_strategies_find_relevant_pages_with_no_more_judgments_than_depth_order(cranfield, name, depth):
    runs, relevant = cranfield
    baseline = pooling.simulate("depth", runs, relevant, depth)
    adaptive = pooling.simulate(name, runs, relevant, depth)
    for fraction in pooling.FRACTIONS:
        assert adaptive.judgments_to_find(fraction) <= baseline.judgments_to_find(fraction), fraction


def test_model_first_with_a_model_that_knows_the_qrels_finds_pages_as_fast_as_the_oracle(cranfield):
    """A deterministic score mapping stands in for a model (bench/pooling.py uses a real
    one): 1 for every relevant pair, 0 for the rest. Model first then judges each query's
    relevant pages first, as the oracle does, under the same turns."""
    runs, relevant = cranfield
    scores = {(query_id, doc_id): 1.0 for query_id, docs in relevant.items() for doc_id in docs}
    for run in runs:
        for query_id, doc_ids in run.items():
            for doc_id in doc_ids[:10]:
                scores.setdefault((query_id, doc_id), 0.0)
    result = pooling.simulate("model_first", runs, relevant, 10, model_scores=scores)
    assert [result.judgments_to_find(fraction) for fraction in pooling.FRACTIONS] == [409, 855, 1112]


def test_model_first_with_no_model_labels_judges_in_depth_order(cranfield):
    runs, relevant = cranfield
    unlabelled = pooling.simulate("model_first", runs, relevant, 10, model_scores={})
    assert unlabelled.found.tolist() == pooling.simulate("depth", runs, relevant, 10).found.tolist()
