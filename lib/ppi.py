"""Recall of a golden set's labels with a 95% interval, from a human completeness sample
alone or by prediction-powered inference (PPI) with a model's labels: pure numpy, no Django.

The quantity. A completeness sample (labeling.completeness) is a uniform draw of `n` pairs
from a population U of P unjudged (query, page) pairs: those the pooled runs rank just below
the pool, ranks depth_from + 1 .. k. Let Y_i be 1 when pair i of U is relevant (people grade
it at or above the set's threshold) and theta = mean of Y over U, the share of U that is
relevant. With F relevant pages already found (labelled), the recall of the labels is

    R(theta) = F / (F + P * theta),

the share of the relevant pages (found, or unjudged in U) that the labels hold. Relevant
pages outside U (ranked deeper than k by every pooled run, or by no run) are not counted,
so R is the recall within the pooled runs' top k: an upper bound on recall overall.

Human only (what the completeness page shows today): theta is estimated by the share of the
n judged pairs that are relevant, r / n, with Wilson's 95% score interval (see
`wilson_interval` for why Wilson and not the normal one).

Prediction-powered (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered
inference", Science 382, 2023; ARES uses it to evaluate RAG systems). A model calls each pair
relevant or not, f_i in {0, 1}. Write theta as what the model says plus its mistake:

    theta = mean_U(f) + mean_U(Y - f).

The first term is estimated from the model's calls on N pairs of U (all of U, or a uniform
draw from it): m = mean of f there, variance m (1 - m) / N. The second, the rectifier, is
estimated on the n human-sampled pairs, where both Y and f are known: d = mean of (Y - f).
Both estimates are unbiased, so theta_pp = m + d is unbiased however poor the model is; a
good model only makes it tighter, since Var(Y - f) is small when f is mostly right, and a
bad one makes it wider, never wrong. The two samples are treated as independent, so

    Var(theta_pp) = m (1 - m) / N + Var(Y - f) / n.

When the N pairs are all of U (and so hold the n), mean_U(f) is known exactly and the first
term is zero in truth: counting it only widens the interval.

Small samples. Y - f is -1, 0 or 1: with b human-relevant pairs the model missed and c
model-relevant pairs people rejected, d = (b - c) / n. A good model makes b and c rare, and
at b = c = 0 the plug-in variance is 0: the interval would claim certainty from a hundred
pairs. So the rectifier's interval is Agresti and Min's for matched proportions ("Simple
improved confidence intervals for comparing matched proportions", Statistics in Medicine
24, 2005): add one half to each cell of the paired 2x2 table, b' = (b + 1/2) / (n + 2),
c' = (c + 1/2) / (n + 2), d' = b' - c', Var = (b' + c' - d'^2) / (n + 2). The interval of
theta is

    m + d' +- z * sqrt(m (1 - m) / N + (b' + c' - d'^2) / (n + 2)),

clipped to [0, 1]; the point estimate is the unbiased m + d, clipped.

From theta to recall. R is continuous and strictly decreasing in theta (for F > 0), so
theta in [lo, hi] exactly when R(theta) is in [R(hi), R(lo)]: the interval of R has the
interval of theta's coverage, with no delta-method approximation. F is a count, not an
estimate, and P is known (the sample stores it).

Units: theta, R and their bounds are fractions in [0, 1]; F, P, N and n are counts.
"""

import math
from dataclasses import dataclass

import numpy as np

# The normal quantile of a two-sided 95% interval (scipy.stats.norm.ppf(0.975)).
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion (fractions in [0, 1]).

    Chosen over the normal (Wald) interval because completeness samples find few
    relevant pages: with r = 0 the Wald interval is [0, 0], claiming certainty from no
    evidence, and for small r it runs below 0; Wilson's stays inside [0, 1], is not empty
    at r = 0 and keeps close to its nominal coverage for small n and r (Brown, Cai and
    DasGupta, "Interval estimation for a binomial proportion", 2001). It is scipy's
    binomtest(...).proportion_ci(method="wilson").
    """
    if trials < 1:
        raise ValueError("a proportion needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be within 0..{trials}, got {successes}")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(centre - half, 0.0), min(centre + half, 1.0)


@dataclass(frozen=True)
class ShareEstimate:
    """theta, the share of the population that is relevant, with its 95% interval
    (fractions in [0, 1]), and what it rests on: `human` pairs judged by people and
    `model` pairs called by the model (0 for the human-only estimate)."""

    share: float
    low: float
    high: float
    human: int
    model: int = 0

    @property
    def width(self) -> float:
        return self.high - self.low


def human_share(relevant: int, judged: int, z: float = Z_95) -> ShareEstimate:
    """theta from the human sample alone: r / n with Wilson's interval."""
    low, high = wilson_interval(relevant, judged, z)
    return ShareEstimate(share=relevant / judged, low=low, high=high, human=judged)


def _as_calls(values, name: str) -> np.ndarray:
    calls = np.asarray(values)
    if calls.ndim != 1:
        raise ValueError(f"{name} must be one list of relevance calls")
    if calls.dtype != np.bool_:
        if not np.isin(calls, (0, 1)).all():
            raise ValueError(f"{name} must hold 0/1 or booleans (relevant or not)")
        calls = calls.astype(bool)
    return calls


def ppi_share(model_population, human_sample, model_sample, z: float = Z_95) -> ShareEstimate:
    """theta by prediction-powered inference (module docstring): `model_population` the
    model's calls on N pairs of the population (all of it, or a uniform draw), and on the
    n human-sampled pairs the people's calls (`human_sample`) beside the model's
    (`model_sample`), aligned. Calls are booleans or 0/1."""
    f_population = _as_calls(model_population, "model_population")
    y = _as_calls(human_sample, "human_sample")
    f = _as_calls(model_sample, "model_sample")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human calls against {len(f)} model calls: both must call the same sampled pairs")
    n, big_n = len(y), len(f_population)
    if n < 1 or big_n < 1:
        raise ValueError("prediction-powered inference needs at least one human-sampled pair and one model-called pair")
    m = float(f_population.mean())
    b = int(np.count_nonzero(y & ~f))  # relevant to people, missed by the model
    c = int(np.count_nonzero(~y & f))  # called relevant by the model, not by people
    b_adj, c_adj = (b + 0.5) / (n + 2), (c + 0.5) / (n + 2)
    d_adj = b_adj - c_adj
    variance = m * (1 - m) / big_n + (b_adj + c_adj - d_adj * d_adj) / (n + 2)
    half = z * math.sqrt(variance)
    centre = m + d_adj
    point = min(max(m + (b - c) / n, 0.0), 1.0)
    return ShareEstimate(share=point, low=max(centre - half, 0.0), high=min(centre + half, 1.0), human=n, model=big_n)


@dataclass(frozen=True)
class RecallEstimate:
    """R = found / (found + population * theta) with its 95% interval (fractions in
    [0, 1]; None where R is 0 / 0: nothing found and no relevant page estimated), from
    `share`, the estimate of theta it is mapped from."""

    found: int
    population: int
    share: ShareEstimate
    recall: float | None
    low: float | None
    high: float | None

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low


def recall_of(found: int, population: int, share: float) -> float | None:
    """found / (found + population * share); None for 0 / 0."""
    total = found + population * share
    return found / total if total > 0 else None


def recall_estimate(found: int, population: int, share: ShareEstimate) -> RecallEstimate:
    """Map an estimate of theta to the recall of the labels. R falls as theta rises, so
    the interval's low end comes from theta's high end and the reverse."""
    if found < 0 or population < 0:
        raise ValueError("found and population are counts: neither can be negative")
    return RecallEstimate(
        found=found,
        population=population,
        share=share,
        recall=recall_of(found, population, share.share),
        low=recall_of(found, population, share.high),
        high=recall_of(found, population, share.low),
    )
