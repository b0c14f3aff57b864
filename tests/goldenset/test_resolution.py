"""goldenset.resolution is the one label rule: its source codes name every Judgment source,
and the scalar look-ups (label_of, label_resolve) give what the columns give."""

from goldenset.models import Judgment
from goldenset.resolution import SOURCE_CODES, labels_of_rows
from goldenset.selectors import label_of, label_resolve


def test_the_source_codes_name_every_judgment_source_and_nothing_else():
    assert set(SOURCE_CODES) == set(Judgment.Source.values)


def test_no_judgment_resolves_to_no_label():
    assert label_of([]) is None
    assert [column.tolist() for column in labels_of_rows([])] == [[], [], []]


def test_one_pairs_look_up_gives_what_the_columns_give_for_that_pair():
    # Newest first: an import, then two people (one of them twice), then an adjudication.
    judgments = [(3, "human", 7), (0, "human", 8), (1, "human", 7), (2, "imported", None)]
    assert label_of(judgments) == 0  # person 7's latest is 3, person 8's 0: the lower median
    rows = [(5, 6, grade, source, person, 10 - age) for age, (grade, source, person) in enumerate(judgments)]
    assert [column.tolist() for column in labels_of_rows(rows)] == [[5], [6], [0]]
    assert label_of([(1, "adjudicated", 9)] + judgments) == 1
    assert label_of([(2, "imported", None), (1, "imported", None)]) == 2
    assert label_resolve([3, 0, 2, 2]) == 2
