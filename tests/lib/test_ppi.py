"""lib.ppi: the recall of the labels from a human sample alone and with a model's labels,
against values worked out by hand, and a short run of the simulation bench (bench/ppi.py)."""

import math

import pytest

from bench.ppi import Setting, simulate
from lib.ppi import human_share, ppi_share, recall_estimate, recall_of


def test_the_prediction_powered_share_matches_a_hand_computed_value():
    # The model calls 2 of 10 population pairs relevant: m = 0.2, variance 0.2 * 0.8 / 10 = 0.016.
    # People find 3 of 10 sampled pairs relevant; the model called only the first: b = 2 missed,
    # c = 0 wrongly called, so d = 2 / 10 and the point estimate is 0.2 + 0.2 = 0.4.
    # Agresti-Min: b' = 2.5 / 12, c' = 0.5 / 12, d' = 2 / 12;
    # variance 0.016 + (3 / 12 - (2 / 12)^2) / 12 = 0.016 + 0.0185185 = 0.0345185, sd 0.1857916;
    # centre 0.2 + 0.1666667 = 0.3666667, half 1.96 * 0.1857916 = 0.3641515.
    share = ppi_share([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], z=1.96)
    assert share.share == pytest.approx(0.4)
    assert share.low == pytest.approx(0.3666667 - 0.3641515, abs=1e-6)
    assert share.high == pytest.approx(0.3666667 + 0.3641515, abs=1e-6)
    assert (share.human, share.model) == (10, 10)


def test_the_recall_interval_takes_its_ends_from_the_other_ends_of_the_share():
    # 30 found, 100 unjudged pairs: R = 30 / (30 + 100 theta), falling in theta.
    share = ppi_share([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], z=1.96)
    recall = recall_estimate(30, 100, share)
    assert recall.recall == pytest.approx(30 / 70)
    assert recall.low == pytest.approx(30 / (30 + 100 * 0.7308182), abs=1e-6)  # 0.2910309
    assert recall.high == pytest.approx(30 / (30 + 100 * 0.0025151), abs=1e-6)  # 0.9916859


def test_a_model_that_agrees_on_every_sampled_pair_still_leaves_an_interval():
    # b = c = 0: the plain variance of the rectifier would be 0. Agresti-Min keeps
    # (0.5 / 10 + 0.5 / 10 - 0) / 10 = 0.01 of it; m = 0.25 over 4 pairs adds 0.046875.
    share = ppi_share([1, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], z=1.96)
    half = 1.96 * math.sqrt(0.046875 + 0.01)
    assert share.share == pytest.approx(0.25)
    assert (share.low, share.high) == (0.0, pytest.approx(0.25 + half))


def test_the_human_only_share_is_the_wilson_interval():
    # 1 of 10 with z = 1.96: centre (0.1 + 0.19208) / 1.38416 = 0.211017, half
    # 1.96 / 1.38416 * sqrt(0.009 + 0.0096040) = 0.193145 (Wilson, by hand).
    share = human_share(1, 10, z=1.96)
    assert share.share == pytest.approx(0.1)
    assert share.low == pytest.approx(0.017875, abs=1e-5)
    assert share.high == pytest.approx(0.404150, abs=1e-5)
    assert share.model == 0


def test_recall_is_undefined_when_nothing_is_found_and_nothing_is_estimated():
    assert recall_of(0, 100, 0.0) is None
    assert recall_of(0, 100, 0.1) == 0.0
    assert recall_of(5, 100, 0.0) == 1.0


@pytest.mark.parametrize("bad", [[0, 2], [[1, 0]], [0.5, 1]])
def test_calls_other_than_relevant_or_not_are_refused(bad):
    with pytest.raises(ValueError, match="model_population"):
        ppi_share(bad, [1], [1])


def test_human_and_model_calls_on_the_sample_must_align():
    with pytest.raises(ValueError, match="same sampled pairs"):
        ppi_share([1, 0], [1, 0, 0], [1, 0])


def test_a_short_simulation_covers_the_truth_and_is_narrower_with_a_good_model():
    setting = Setting(sensitivity=0.9, specificity=0.99)
    outcome = simulate(setting, trials=100, seed=7)
    assert outcome.ppi_coverage >= 0.9
    assert outcome.ppi_mean_width < outcome.human_mean_width


def test_a_weak_model_widens_the_interval_but_keeps_it_honest():
    # Specificity 0.95 at prevalence 0.04: the model wrongly calls more pairs than are
    # relevant, so its disagreements vary more than the truth does.
    outcome = simulate(Setting(sensitivity=0.85, specificity=0.95), trials=100, seed=7)
    assert outcome.ppi_coverage >= 0.9
    assert outcome.ppi_mean_width > outcome.human_mean_width
