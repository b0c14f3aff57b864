"""lib.survey's Hajek estimate on small designs worked by hand: the domain, certainty units,
strata, the finite-population correction, the t quantile and bad input named."""

import numpy as np
import pytest

from lib.survey import _t_quantile, hajek_estimate


def test_equal_weights_give_the_plain_mean_with_the_srs_interval():
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    found = hajek_estimate(values, np.full(5, 0.5), np.ones(5))
    assert found.estimate == pytest.approx(0.6)
    # SRS without replacement: (1 - f) s^2 / n, s^2 the sample variance.
    assert found.standard_error == pytest.approx(np.sqrt(0.5 * values.var(ddof=1) / 5))
    assert found.degrees_of_freedom == 4
    assert found.high == 1.0  # clipped to the range of every metric
    assert found.estimate - found.low == pytest.approx(2.776445 * found.standard_error, rel=1e-3)


def test_traffic_weights_the_queries_by_their_events_over_their_chance():
    found = hajek_estimate(np.array([1.0, 0.0]), np.array([0.5, 0.1]), np.array([100, 5]))
    assert found.estimate == pytest.approx(200 / 250)


def test_a_query_out_of_the_domain_leaves_both_sums_but_counts_in_the_variance():
    values = np.array([1.0, 0.0, 0.3, 0.9])
    inside = hajek_estimate(values[:3], np.full(3, 0.2), np.ones(3))
    with_outside = hajek_estimate(values, np.full(4, 0.2), np.ones(4), in_domain=np.array([True, True, True, False]))
    assert with_outside.estimate == pytest.approx(inside.estimate)
    assert with_outside.queries == 3
    assert with_outside.degrees_of_freedom == 3
    assert with_outside.standard_error != pytest.approx(inside.standard_error)


def test_certainty_units_add_no_variance():
    found = hajek_estimate(np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([10, 10]))
    assert (found.estimate, found.low, found.high, found.standard_error, found.degrees_of_freedom) == (0.5, 0.5, 0.5, 0.0, 0)


def test_strata_take_their_deviations_from_their_own_means():
    # Each stratum constant inside: all the spread is between strata, so none is left.
    found = hajek_estimate(np.array([1.0, 1.0, 0.0, 0.0]), np.full(4, 0.1), np.ones(4), np.array(["a", "a", "b", "b"]))
    assert found.estimate == pytest.approx(0.5)
    assert found.standard_error == pytest.approx(0.0)
    assert found.degrees_of_freedom == 2


def test_nothing_in_the_domain_gives_no_estimate():
    assert hajek_estimate(np.array([1.0]), np.array([0.5]), np.array([3]), in_domain=np.array([False])) is None
    assert hajek_estimate(np.array([]), np.array([]), np.array([])) is None


@pytest.mark.parametrize(
    ("probabilities", "counts", "message"),
    [
        ([0.0], [1], "inclusion probability must be in \\(0, 1\\]"),
        ([1.5], [1], "inclusion probability must be in \\(0, 1\\]"),
        ([0.5], [-1], "traffic count cannot be negative"),
        ([0.5, 0.5], [1], "must be aligned"),
    ],
)
def test_bad_input_is_named(probabilities, counts, message):
    with pytest.raises(ValueError, match=message):
        hajek_estimate(np.array([0.5]), np.array(probabilities), np.array(counts))


@pytest.mark.parametrize(("degrees", "quantile"), [(1, 12.7062), (3, 3.1824), (4, 2.7764), (10, 2.2281), (30, 2.0423), (1000, 1.9623)])
def test_the_t_quantile_is_students(degrees, quantile):
    assert _t_quantile(degrees) == pytest.approx(quantile, abs=1e-3)
