"""The small set most pool tests build on: three queries over eight pages and two runs."""

import pytest

from tests.support import factories

# Three queries over eight pages; q1-d1 is labelled relevant, q2-d3 not relevant. The modules
# that build on it put it in their pytestmark; the golden_set fixture (tests/support/fixtures.py)
# then makes it.
SMALL_SET = pytest.mark.golden_set("tiny", pages=factories.pages(*(f"d{n}" for n in range(1, 9))), qrels={("q1", "d1"): 2, ("q2", "d3"): 0})


@pytest.fixture
def run_a(golden_set):
    return factories.run(golden_set, "a", {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d3", "d4", "d5"], "q3": ["d6"]})


@pytest.fixture
def run_b(golden_set):
    return factories.run(golden_set, "b", {"q1": ["d5", "d2", "d6"], "q2": ["d7", "d3"], "q3": ["d6", "d7", "d8"]})
