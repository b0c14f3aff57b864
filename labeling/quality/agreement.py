"""Inter-annotator agreement on graded judgments: pure functions over numpy arrays.

Nothing here knows Django; labeling/quality/selectors.py reads the judgments and calls
these. Grades are compared on the golden set's ordinal scale (`values`, in scale order): a
grade is turned into its position on the scale, so kappa's quadratic weights and alpha's
ordinal distances count steps on the scale, whatever numbers the steps carry.

Every statistic returns a float, or NaN where it is undefined (no pair of values to
compare, or no variation to compare against: both annotators gave one grade throughout);
pages show NaN as "n/a", never as 0 or 1.

Reliability data (`krippendorff_alpha_ordinal`, `pairwise_agreement`) are a coders x
units array of grades with NaN where a coder did not judge a unit, the layout of
Krippendorff (2011), "Computing Krippendorff's alpha-reliability", and of the
`krippendorff` package the tests compare against.
"""

from collections.abc import Sequence

import numpy as np


def _positions(grades: np.ndarray, values: Sequence[int]) -> np.ndarray:
    """Positions of `grades` on the scale `values`; ValueError naming a grade not on it."""
    grades = np.asarray(grades)
    scale = np.asarray(values)
    order = np.argsort(scale, kind="stable")
    found = np.searchsorted(scale[order], grades)
    found = np.clip(found, 0, len(scale) - 1)
    index = order[found]
    bad = scale[index] != grades
    if bad.any():
        raise ValueError(f"grade {grades[bad][0].item()!r} is not on the scale {list(values)}")
    return index


def confusion_matrix(a: Sequence[int], b: Sequence[int], *, values: Sequence[int]) -> np.ndarray:
    """Counts of (a's grade, b's grade) over the units both judged: rows are a's grades,
    columns b's, both in the order of `values`. `a` and `b` are aligned: a[i] and b[i]
    are the two grades of unit i."""
    a_pos, b_pos = _positions(np.asarray(a), values), _positions(np.asarray(b), values)
    if a_pos.shape != b_pos.shape:
        raise ValueError(f"{len(a_pos)} grades against {len(b_pos)}: the two coders must grade the same units")
    size = len(values)
    return np.bincount(a_pos * size + b_pos, minlength=size * size).reshape(size, size)


def percent_agreement(a: Sequence[int], b: Sequence[int]) -> float:
    """Share (0 to 1) of the units on which the two coders gave the same grade."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"{len(a)} grades against {len(b)}: the two coders must grade the same units")
    if a.size == 0:
        return float("nan")
    return float(np.mean(a == b))


def cohen_kappa_quadratic(a: Sequence[int], b: Sequence[int], *, values: Sequence[int]) -> float:
    """Cohen's kappa with quadratic weights for two coders, from 1 (perfect agreement) through
    0 (what chance gives) to negative values (systematic disagreement).

    kappa = 1 - sum(w * observed) / sum(w * expected), where w[i, j] = (i - j)^2 counts
    steps between scale positions and `expected` is the outer product of the two coders'
    own grade distributions. Equal to sklearn's cohen_kappa_score(a, b,
    weights="quadratic", labels=values).
    """
    observed = confusion_matrix(a, b, values=values).astype(float)
    total = observed.sum()
    if total == 0:
        return float("nan")
    positions = np.arange(len(values))
    weights = (positions[:, None] - positions[None, :]) ** 2
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    disagreement_expected = (weights * expected).sum()
    if disagreement_expected == 0:
        return float("nan")
    return float(1 - (weights * observed).sum() / disagreement_expected)


def _unit_counts(reliability: np.ndarray, values: Sequence[int]) -> np.ndarray:
    """units x scale positions: how many coders gave each grade to each unit."""
    reliability = np.asarray(reliability, dtype=float)
    if reliability.ndim != 2:
        raise ValueError("reliability data must be a coders x units array")
    coders, units = reliability.shape
    present = ~np.isnan(reliability)
    unit_index = np.broadcast_to(np.arange(units), (coders, units))[present]
    grade_index = _positions(reliability[present].astype(np.int64), values)
    size = len(values)
    return np.bincount(unit_index * size + grade_index, minlength=units * size).reshape(units, size).astype(float)


def coincidence_matrix(reliability: np.ndarray, *, values: Sequence[int]) -> np.ndarray:
    """Krippendorff's coincidence matrix o[c, k]: the pairable values of every unit (units
    with two or more grades), each ordered pair of grades from two different coders of a
    unit weighted 1 / (m_u - 1), where m_u is how many coders graded the unit. Its total
    is the number of pairable values; it is symmetric."""
    counts = _unit_counts(reliability, values)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    if counts.size == 0:
        return np.zeros((len(values), len(values)))
    weighted = counts / (m - 1)[:, None]
    return weighted.T @ counts - np.diag(weighted.sum(axis=0))


def krippendorff_alpha_ordinal(reliability: np.ndarray, *, values: Sequence[int]) -> float:
    """Krippendorff's alpha with the ordinal metric, for any number of coders per unit and
    missing grades (NaN) allowed; units with fewer than two grades are left out.

    alpha = 1 - (n - 1) * sum(o[c,k] d2[c,k]) / sum(n_c n_k d2[c,k]), where o is the
    coincidence matrix, n_c its marginals, n its total and the ordinal distance
    d2[c,k] = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 (Krippendorff 2011, section E).
    1 is perfect agreement, 0 what chance gives.
    """
    o = coincidence_matrix(reliability, values=values)
    n_c = o.sum(axis=0)
    n = n_c.sum()
    if n <= 1:
        return float("nan")
    cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
    low = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
    high = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
    between = cumulative[high + 1] - cumulative[low]
    d2 = (between - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    disagreement_expected = (np.outer(n_c, n_c) * d2).sum()
    if disagreement_expected == 0:
        return float("nan")
    return float(1 - (n - 1) * (o * d2).sum() / disagreement_expected)


def pairwise_agreement(reliability: np.ndarray, *, values: Sequence[int]) -> tuple[int, int]:
    """(agreeing, compared): over every unit and every two coders who both graded it, how
    many of those comparisons gave the same grade. agreeing / compared is the percent
    agreement of several coders, each comparison counting once."""
    counts = _unit_counts(reliability, values)
    m = counts.sum(axis=1)
    agreeing = (counts * (counts - 1) / 2).sum()
    compared = (m * (m - 1) / 2).sum()
    return int(round(agreeing)), int(round(compared))
