"""The hand-made set of the model labels tests: people's labels, a model's, three runs and an
archived one, with figures worked out by hand in the comments."""

import pytest

from evaluation.services import run_archive
from goldenset.model_labels import model_labels_import
from goldenset.services import version_publish
from lib.formats import ModelLabelLine
from tests import factories

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
        "calib", manager=owner, qrels=HUMAN, pages=factories.pages("d1", "d2", "d3", "d4", "d5", "d6"), queries=queries,
        query_slice_fields=["lang"], k_first=10, k_final=2,
    )
    version_publish(golden_set=made)
    records = [ModelLabelLine(n, q, d, g) for n, ((q, d), g) in enumerate(MODEL.items(), start=1)]
    model_labels_import(golden_set=made, model="judge-7b", prompt_text="grade it", records=records)
    for name, ranking in RUNS.items():
        factories.run(made, name, ranking)
    run_archive(run=factories.run(made, "archived", {"q1": ["d4"]}), user=owner)
    return made


