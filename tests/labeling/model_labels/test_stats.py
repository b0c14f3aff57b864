"""Kappa and tau, written in numpy for the calibration page, agree with scikit-learn's and
scipy's on the same data."""

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from labeling.model_labels.stats import cohen_kappa, kendall_tau_b

SCALE = [0, 1, 2, 3]


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(5))
def test_kappa_equals_scikit_learns_on_random_grades(weights, seed):
    rng = np.random.default_rng(seed)
    people = rng.integers(0, 4, size=200)
    # A model that mostly agrees, sometimes one step off, sometimes anywhere.
    model = np.where(rng.random(200) < 0.6, people, np.clip(people + rng.integers(-3, 4, size=200), 0, 3))
    expected = cohen_kappa_score(people, model, labels=SCALE, weights=weights)
    assert cohen_kappa(people, model, values=SCALE, weights=weights) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_counts_steps_on_the_scale_whatever_numbers_the_grades_carry(weights):
    scale = [-1, 0, 2, 5]
    people = [-1, 0, 2, 5, 5, 0, 2, -1]
    model = [0, 0, 5, 5, 2, -1, 2, -1]
    assert cohen_kappa(people, model, values=scale, weights=weights) == pytest.approx(
        cohen_kappa_score(people, model, labels=scale, weights=weights), abs=1e-12
    )


def test_kappa_is_nan_with_nothing_to_compare():
    assert np.isnan(cohen_kappa([], [], values=SCALE))
    assert np.isnan(cohen_kappa([2, 2], [2, 2], values=SCALE, weights="quadratic"))


@pytest.mark.parametrize("seed", range(5))
def test_tau_equals_scipys_tau_b_with_ties(seed):
    rng = np.random.default_rng(seed)
    # Rounded scores, so both lists hold ties, as recall of a few queries does.
    x = np.round(rng.random(25), 1)
    y = np.round(x + rng.normal(0, 0.2, size=25), 1)
    expected = kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)


def test_tau_is_one_for_the_same_order_and_minus_one_for_the_reverse():
    assert kendall_tau_b([0.1, 0.5, 0.9], [1, 2, 3]) == pytest.approx(1.0)
    assert kendall_tau_b([0.1, 0.5, 0.9], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(kendall_tau_b([0.5], [0.5]))
    assert np.isnan(kendall_tau_b([0.5, 0.5], [0.1, 0.2]))
