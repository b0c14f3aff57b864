"""Is a drop more than noise? The statistics of the drop rules (evaluation.alerts.rules) and of
the pages' "detects drops of N points" column: pure functions over numpy arrays, no Django.

Values are fractions in [0, 1] (a query's recall); drops and detectable drops are returned in
fractions too, and the callers print them in points (hundredths).

The test is a **one-sided paired t-test** over the queries both figures averaged: d_i is
baseline_i - tonight_i, and H0 "tonight is not lower" (mean d <= 0) is rejected when
t = mean(d) / (sd(d) / sqrt(n)) is past t_{1-a', n-1}. A t-test rather than a sign-flip
permutation test because its minimum detectable effect has a closed form a user can check
with any power calculator, and the permutation test's does not. Per-query recall has many
zero differences (most queries find the same pages two nights running) and is bounded, but
the mean of 30 or more bounded differences is close to normal, and the simulation over real
Cranfield runs (tests/evaluation/alerts/test_noise_simulation.py) holds the false-alarm rate
under alpha. When every query moved by the same amount, sd(d) = 0 and t is undefined: a
common drop is then certain (p = 0) and no drop or a rise is not one (p = 1). With fewer than
two queries there is no spread to test against and the drop cannot be told from chance
(p = 1, detectable None).

**Multiple comparisons.** One night tests many figures (overall and per slice, each metric,
against the previous night and against the median). Each test runs at a' = alpha / m
(Bonferroni), m the number of comparisons the night makes (`comparisons`), so that the chance
a night with no real change sends any drop alert is at most alpha.

**Minimum detectable drop** at a', power 1 - beta and n queries with paired spread sd_d: the
exact noncentral-t solution, the drop delta for which a one-sided t-test at a' rejects with
probability `power` when the noncentrality is delta / sd_d * sqrt(n) (statsmodels'
TTestPower.solve_power gives the same). The familiar approximation
(t_{1-a', n-1} + t_{power, n-1}) * sd_d / sqrt(n) is within a few percent of it for n >= 30.
**Queries needed** for a drop is the smallest n whose minimum detectable drop is at most it,
assuming the slice's spread stays what it is.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np

# sd below this is "every query moved by the same amount" (float noise of a difference of
# fractions is ~1e-16).
SD_ZERO = 1e-12
# Queries needed past this are reported as this: no golden set has more.
MAX_QUERIES = 1_000_000


@dataclass(frozen=True)
class PairedDrop:
    """The one-sided paired test of "tonight is lower than the baseline" on `queries`
    queries: `drop` is mean(baseline - tonight) (a fraction, positive when tonight is
    lower), `sd` the sample standard deviation of those differences, `p_value` the test's
    one-sided p-value."""

    queries: int
    drop: float
    sd: float
    p_value: float


def paired_drop_test(baseline: np.ndarray, tonight: np.ndarray) -> PairedDrop:
    """The one-sided paired t-test of `tonight` < `baseline`, two aligned float arrays (one
    value per query, the same query at the same position). See the module docstring for
    sd = 0 and n < 2."""
    # scipy is loaded where a test is run, never at start-up (tests/goldset/test_startup.py).
    from scipy import stats

    differences = np.asarray(baseline, dtype=np.float64) - np.asarray(tonight, dtype=np.float64)
    n = len(differences)
    if n == 0:
        return PairedDrop(0, 0.0, 0.0, 1.0)
    drop = float(np.mean(differences))
    if n < 2:
        return PairedDrop(n, drop, 0.0, 1.0)
    sd = float(np.std(differences, ddof=1))
    if sd <= SD_ZERO:
        return PairedDrop(n, drop, 0.0, 0.0 if drop > SD_ZERO else 1.0)
    t = drop / (sd / math.sqrt(n))
    return PairedDrop(n, drop, sd, float(stats.t.sf(t, df=n - 1)))


def comparisons(figures: int, baselines: int) -> int:
    """m of the Bonferroni correction: `figures` (metric, slice) pairs each compared with
    `baselines` baselines, at least 1."""
    return max(1, figures * baselines)


def corrected_alpha(alpha: float, m: int) -> float:
    """a' = alpha / m: each of a night's m tests runs at it."""
    return alpha / max(1, m)


def detectable_drop(sd: float, queries: int, *, alpha: float, power: float) -> float | None:
    """The smallest drop (a fraction) a one-sided paired t-test at `alpha` detects with
    probability `power` over `queries` queries whose differences spread with sample standard
    deviation `sd`: the exact noncentral-t solution. None under two queries (no test); 0.0
    when sd is 0 (any common drop is certain)."""
    if queries < 2:
        return None
    if sd <= SD_ZERO:
        return 0.0
    effect = _detectable_effect(queries, alpha, power)
    return effect * sd


# Kept: it depends on (queries, alpha, power) alone, which a page's slices and a search for
# the queries needed share, and each solve is a root-finding over the noncentral t.
@functools.lru_cache(maxsize=4096)
def _detectable_effect(queries: int, alpha: float, power: float) -> float:
    """Cohen's d (drop / sd) detected at `alpha` with `power` over `queries` paired queries.

    The distributions are scipy.special's functions, which scipy.stats' distribution objects
    wrap: t.isf(a, df) is -stdtrit(df, a), the same float; the noncentral t's survival is
    1 - nctdtr, whose root differs from stats.nct.sf's by under 1e-14 relative, far inside
    brentq's tolerance. The wrappers check and broadcast their arguments on every call, which
    costs many times the function itself, and a results page with many slices solves about a
    thousand of these on its first view in a process."""
    from scipy import optimize, special

    df = queries - 1
    critical = -special.stdtrit(df, alpha)
    root = math.sqrt(queries)

    def shortfall(effect: float) -> float:
        return float(1.0 - special.nctdtr(df, effect * root, critical)) - power

    # The normal approximation brackets the answer from below; grow the upper end until it
    # is past it.
    low, high = 0.0, _normal_quantiles(alpha, power) / root
    while shortfall(high) < 0:
        high *= 2
    return float(optimize.brentq(shortfall, low, high, xtol=1e-10))


def _normal_quantiles(alpha: float, power: float) -> float:
    """z_(1-alpha) + z_power, the normal approximation's numerator: scipy.stats'
    norm.isf(alpha) + norm.ppf(power), the same floats."""
    from scipy import special

    return float(-special.ndtri(alpha) + special.ndtri(power))


def queries_needed(sd: float, drop: float, *, alpha: float, power: float) -> int | None:
    """The fewest queries whose minimum detectable drop (at `alpha`, `power`, spread `sd`) is
    at most `drop` (a fraction): what a slice would need to detect the set's threshold. None
    when sd is 0 (two queries would do, but say nothing) or drop is not positive; capped at
    MAX_QUERIES."""
    if drop <= 0 or sd <= SD_ZERO:
        return None

    def detects(n: int) -> bool:
        return _detectable_effect(n, alpha, power) * sd <= drop

    # The normal approximation, then the exact answer by bisection around it.
    guess = max(2, math.ceil((_normal_quantiles(alpha, power) * sd / drop) ** 2))
    low, high = 2, max(guess, 3)
    while not detects(high):
        low, high = high, high * 2
        if high > MAX_QUERIES:
            return MAX_QUERIES
    while low < high:
        middle = (low + high) // 2
        if detects(middle):
            high = middle
        else:
            low = middle + 1
    return high
