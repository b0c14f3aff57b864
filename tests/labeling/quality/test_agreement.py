"""labeling.quality.agreement against independent implementations (scikit-learn, the krippendorff
package) and the worked examples of Krippendorff (2011), "Computing Krippendorff's
alpha-reliability"."""

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from labeling.quality.agreement import (
    cohen_kappa_quadratic,
    coincidence_matrix,
    confusion_matrix,
    krippendorff_alpha_ordinal,
    pairwise_agreement,
    percent_agreement,
)

NAN = np.nan
SCALE = [0, 1, 2, 3]

# Krippendorff (2011), example C: four observers, twelve units, values 1-5, missing data.
# The paper gives alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval).
EXAMPLE_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def _random_coders(seed: int, units: int, coders: int = 2, missing: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=units)
    noise = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=(coders, units))
    data = np.clip(truth + noise, 0, 3).astype(float)
    data[rng.random((coders, units)) < missing] = NAN
    return data


def test_alpha_ordinal_matches_krippendorffs_worked_example():
    alpha = krippendorff_alpha_ordinal(EXAMPLE_C, values=[1, 2, 3, 4, 5])
    assert alpha == pytest.approx(0.815, abs=0.0005)


def test_the_coincidence_matrix_matches_the_worked_example():
    # 41 values; unit 12 has a single one and is not pairable, so the matrix totals 40.
    matrix = coincidence_matrix(EXAMPLE_C, values=[1, 2, 3, 4, 5])
    third = 1 / 3
    paper = [
        [7, 4 * third, third, third, 0],
        [4 * third, 10, 4 * third, third, 0],
        [third, 4 * third, 8, third, 0],
        [third, third, third, 4, 0],
        [0, 0, 0, 0, 3],
    ]
    assert np.allclose(matrix, paper)
    assert matrix.sum() == pytest.approx(40)
    assert matrix.sum(axis=0).tolist() == pytest.approx([9, 13, 10, 5, 3])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("coders,missing", [(2, 0.0), (3, 0.3), (5, 0.5)])
def test_alpha_ordinal_matches_the_krippendorff_package(seed, coders, missing):
    data = _random_coders(seed, units=60, coders=coders, missing=missing)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=SCALE)
    assert krippendorff_alpha_ordinal(data, values=SCALE) == pytest.approx(expected, abs=1e-9)


def test_alpha_ignores_grades_of_the_scale_nobody_gave():
    data = np.array([[0, 1, 1, 0, 1], [0, 1, 0, 0, 1]], dtype=float)
    assert krippendorff_alpha_ordinal(data, values=[0, 1]) == pytest.approx(krippendorff_alpha_ordinal(data, values=SCALE))


@pytest.mark.parametrize("seed", range(10))
def test_kappa_quadratic_matches_scikit_learn(seed):
    a, b = _random_coders(seed, units=80).astype(int)
    expected = cohen_kappa_score(a, b, weights="quadratic", labels=SCALE)
    assert cohen_kappa_quadratic(a, b, values=SCALE) == pytest.approx(expected, abs=1e-12)


def test_kappa_counts_steps_on_the_scale_not_the_grades_numbers():
    # On a scale 0, 1, 2, 4 the step from 2 to 4 is one step, as scikit-learn counts it
    # with labels=[0, 1, 2, 4].
    a, b = [0, 1, 2, 4, 4, 1], [0, 2, 4, 4, 2, 1]
    expected = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 4])
    assert cohen_kappa_quadratic(a, b, values=[0, 1, 2, 4]) == pytest.approx(expected)


def test_kappa_of_a_hand_computed_table():
    # Ten units on 0-2. Disagreements, weighted (i - j)^2: unit 4 (0 against 2) 4, unit 8
    # (2 against 1) 1: observed 5. Marginals a = (4, 3, 3), b = (3, 4, 3); chance expects
    # (1*4*4 + 4*4*3 + 1*3*3 + 1*3*3 + 4*3*3 + 1*3*4) / 10 = 13. kappa = 1 - 5/13 = 8/13.
    a = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    b = [0, 0, 0, 2, 1, 1, 1, 1, 2, 2]
    assert cohen_kappa_quadratic(a, b, values=[0, 1, 2]) == pytest.approx(8 / 13)
    assert cohen_kappa_score(a, b, weights="quadratic") == pytest.approx(8 / 13)


def test_perfect_agreement_is_one_and_no_variation_is_undefined():
    assert cohen_kappa_quadratic([0, 1, 3], [0, 1, 3], values=SCALE) == pytest.approx(1)
    assert krippendorff_alpha_ordinal(np.array([[0, 1, 3], [0, 1, 3]], dtype=float), values=SCALE) == pytest.approx(1)
    # Both gave 2 throughout: agreement is perfect but chance would do as well.
    assert math.isnan(cohen_kappa_quadratic([2, 2, 2], [2, 2, 2], values=SCALE))
    assert math.isnan(krippendorff_alpha_ordinal(np.array([[2, 2], [2, 2]], dtype=float), values=SCALE))
    assert math.isnan(percent_agreement([], []))
    assert math.isnan(cohen_kappa_quadratic([], [], values=SCALE))


def test_the_confusion_matrix_puts_the_first_coders_grades_in_rows():
    table = confusion_matrix([0, 0, 3, 1], [0, 2, 3, 1], values=SCALE)
    assert table.tolist() == [[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    assert percent_agreement([0, 0, 3, 1], [0, 2, 3, 1]) == pytest.approx(0.75)


def test_a_grade_off_the_scale_is_refused_by_name():
    with pytest.raises(ValueError, match="grade 7 is not on the scale"):
        confusion_matrix([0, 7], [0, 1], values=SCALE)


def test_pairwise_agreement_counts_each_comparison_of_two_coders_once():
    data = np.array(
        [
            [0, 1, 2, NAN],
            [0, 1, 3, 2],
            [0, NAN, 2, NAN],
        ]
    )
    # unit 1: 3 comparisons, all agree; unit 2: 1, agrees; unit 3: 3, one agrees; unit 4: none.
    assert pairwise_agreement(data, values=SCALE) == (5, 7)
    agreeing, compared = pairwise_agreement(EXAMPLE_C, values=[1, 2, 3, 4, 5])
    assert compared == sum(int(m * (m - 1) / 2) for m in (~np.isnan(EXAMPLE_C)).sum(axis=0))
