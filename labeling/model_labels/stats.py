"""Agreement of a model with people, and of two rankings: pure numpy, no Django.

Grades are compared on the golden set's ordinal scale (`values`, in scale order): a grade is
turned into its position on the scale, so kappa's weights count steps on the scale, as
labeling.quality.agreement does and as scikit-learn's `cohen_kappa_score` does with
`labels=values` (the tests compare the two). Every statistic is a unitless float in
[-1, 1], or NaN where it is undefined (nothing to compare, or no variation to compare
against); pages show NaN as "n/a".
"""

from collections.abc import Sequence

import numpy as np

from labeling.quality.agreement import confusion_matrix

KAPPA_WEIGHTS = (None, "linear", "quadratic")


def cohen_kappa(a: Sequence[int], b: Sequence[int], *, values: Sequence[int], weights: str | None = None) -> float:
    """Cohen's kappa of two aligned grade lists (a[i] and b[i] grade unit i): 1 for perfect
    agreement, 0 for what chance gives (the product of the two coders' grade shares),
    negative below chance. `weights` None counts every disagreement alike; "linear" weighs it
    by the steps between the grades on the scale, "quadratic" by their square."""
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"weights must be one of {KAPPA_WEIGHTS}, not {weights!r}")
    observed = confusion_matrix(a, b, values=values).astype(np.float64)
    total = observed.sum()
    if total == 0:
        return float("nan")
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    steps = np.abs(np.subtract.outer(np.arange(len(values)), np.arange(len(values)))).astype(np.float64)
    if weights is None:
        penalty = (steps > 0).astype(np.float64)
    elif weights == "linear":
        penalty = steps
    else:
        penalty = steps**2
    chance = float((penalty * expected).sum())
    if chance == 0:
        return float("nan")
    return 1.0 - float((penalty * observed).sum()) / chance


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two aligned score lists (x[i] and y[i] score item i): 1 when they
    order every pair of items alike, -1 when oppositely, ties in either list corrected for
    (tau-b, as scipy.stats.kendalltau computes it). NaN for under two items or when one
    list is constant. O(n²) in time and memory: meant for rankings of runs (tens, hundreds)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"{len(x)} scores against {len(y)}: both lists must score the same items")
    n = len(x)
    if n < 2:
        return float("nan")
    upper = np.triu_indices(n, k=1)
    dx = np.sign(np.subtract.outer(x, x))[upper]
    dy = np.sign(np.subtract.outer(y, y))[upper]
    pairs = len(dx)
    untied_x, untied_y = pairs - np.count_nonzero(dx == 0), pairs - np.count_nonzero(dy == 0)
    if untied_x == 0 or untied_y == 0:
        return float("nan")
    return float(np.sum(dx * dy) / np.sqrt(float(untied_x) * float(untied_y)))
