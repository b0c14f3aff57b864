"""The hand-made set of the model labels tests: people's labels, a model's, three runs and an
archived one, with figures worked out by hand in the comments."""

import pytest

from evaluation.services import run_archive
from goldenset.model_labels import model_labels_import
from goldenset.services import judgment_record, version_publish
from labeling.completeness.services import completeness_sample_draw
from labeling.models import JudgingTask
from labeling.pools.services import pool_build
from lib.formats import ModelLabelLine
from tests.support import factories

# The version's labels: q1, q2 English, q3, q4 German.
HUMAN = {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d3"): 2, ("q2", "d4"): 1, ("q3", "d1"): 0, ("q3", "d5"): 2, ("q4", "d6"): 1}
# The model's: agrees on four pairs, is two steps off on q1/d2 (a flip to relevant), one off
# on q2/d4 (a flip to not relevant) and on q3/d5 (relevant both ways); and fills two pairs
# the version left unjudged, both relevant.
MODEL = {**HUMAN, ("q1", "d2"): 2, ("q2", "d4"): 0, ("q3", "d5"): 3, ("q1", "d3"): 3, ("q4", "d2"): 2}
RUNS = {
    "alpha": {"q1": ["d1", "d2"], "q2": ["d3", "d4"], "q3": ["d5"], "q4": ["d6"]},  # recall@2 human 1.0, filled 0.75
    "beta": {"q1": ["d3", "d1"], "q2": ["d3", "d1"], "q3": ["d5"], "q4": ["d2", "d6"]},  # 0.875, 0.875
    "gamma": {"q1": ["d3", "d2"], "q2": ["d4"], "q3": ["d1"], "q4": ["d2", "d1"]},  # 0.125, 0.375
}


@pytest.fixture
def golden_set(owner):
    queries = factories.queries("q1", "q2", lang="en") + factories.queries("q3", "q4", lang="de")
    made = factories.golden_set(
        "calib",
        manager=owner,
        qrels=HUMAN,
        pages=factories.pages("d1", "d2", "d3", "d4", "d5", "d6"),
        queries=queries,
        query_slice_fields=["lang"],
        k_first=10,
        k_final=2,
    )
    version_publish(golden_set=made)
    records = [ModelLabelLine(n, q, d, g) for n, ((q, d), g) in enumerate(MODEL.items(), start=1)]
    model_labels_import(golden_set=made, model="judge-7b", prompt_text="grade it", records=records)
    for name, ranking in RUNS.items():
        factories.run(made, name, ranking)
    run_archive(run=factories.run(made, "archived", {"q1": ["d4"]}), user=owner)
    return made


# The population below the pool (tests/labeling/completeness/test_sampling.py's): ten pairs.
POPULATION = {
    ("q1", "d3"),
    ("q1", "d5"),
    ("q1", "d9"),
    ("q1", "d10"),
    ("q2", "d3"),
    ("q2", "d4"),
    ("q2", "d5"),
    ("q2", "d6"),
    ("q3", "d11"),
    ("q3", "d12"),
}
TRULY_RELEVANT = {("q1", "d3"), ("q2", "d6")}
MODEL_RELEVANT = {("q1", "d3"), ("q2", "d5"), ("q3", "d11")}


@pytest.fixture
def sampled(owner):
    """q1/d1 labelled relevant; runs a and b pooled at depth 2; the whole population of ten
    pairs at ranks 3-5 drawn as a sample, judged by people; the model labels all ten."""
    made = factories.golden_set(
        "sampled",
        manager=owner,
        pages=factories.pages(*(f"d{n}" for n in range(1, 13))),
        qrels={("q1", "d1"): 2, ("q1", "d4"): 0},
    )
    a = factories.run(
        made,
        "a",
        {
            "q1": [f"d{n}" for n in range(1, 9)],
            "q2": [f"d{n}" for n in range(1, 9)],
            "q3": ["d9", "d10", "d11", "d12", "elsewhere", "d1"],
        },
    )
    b = factories.run(made, "b", {"q1": ["d2", "d1", "d9", "d10"], "q2": ["d8", "d7", "d6", "d5"]})
    pool = pool_build(golden_set=made, runs=[a, b], depth=2, strategy="depth").pool
    sample = completeness_sample_draw(pool=pool, size=10, depth_to=5, seed=1).sample
    for task in JudgingTask.objects.filter(sample=sample).select_related("query", "page"):
        pair = (task.query.query_id, task.page.doc_id)
        judgment_record(query=task.query, page=task.page, grade=2 if pair in TRULY_RELEVANT else 0, annotator=owner)
    records = [ModelLabelLine(n, q, d, 2 if (q, d) in MODEL_RELEVANT else 0) for n, (q, d) in enumerate(sorted(POPULATION), 1)]
    model_labels_import(golden_set=made, model="judge-7b", prompt_text="grade it", records=records)
    version_publish(golden_set=made)
    return made
