"""Traffic-weighted estimates of a metric from a golden set drawn with known weights.

The estimand is what the traffic sees: the event-weighted mean of a metric over the logged
queries that have a relevant page (the domain D),

    theta = sum_{j in D} c_j y_j / sum_{j in D} c_j,

with c_j a query's events in the log and y_j its value (recall@k, nDCG@10, MRR: fractions).
It differs from the per-distinct-query mean (every logged query counted once) whenever a
metric moves with traffic, as it does: head queries are easier. The product reports the
traffic one because "what recall do users get" is a question about events, not about the
distinct strings in a log; the per-distinct-query mean is what `c_j = 1` would give.

The estimator is Hajek's ratio: with each drawn query i's inclusion probability pi_i (the
design's chance of drawing it), its traffic c_i and w_i = c_i / pi_i,

    theta_hat = sum_i d_i w_i y_i / sum_i d_i w_i,

d_i = 1 when the query has a relevant page. A drawn query with none is out of the domain:
its weight leaves both sums (domain estimation), but it still counts in its stratum's sample
size for the variance, with a linearised value of 0, so a domain whose size is itself random
is not treated as fixed.

Variance: Taylor linearisation, u_i = d_i w_i (y_i - theta_hat) / sum d_i w_i, and the
stratified with-replacement approximation

    V = sum_h n_h / (n_h - 1) * sum_{i in h} (1 - pi_i) (u_i - mean_h u)^2

where (1 - pi_i) is the finite-population correction: exactly (1 - n_h/N_h) under simple
random and stratified sampling, and Hajek's approximation under probability proportional to
size. A certainty unit (pi_i = 1, a head query PPS must draw) is the population for itself
and adds no variance. The 95% interval is theta_hat +- t * sqrt(V) with Student's t on the
design's degrees of freedom (sampled non-certainty queries minus strata): with a few queries
per stratum the normal quantile is too narrow, and with many t is the normal one. The ends
are clipped to [0, 1], the range of every metric.
"""

from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class WeightedEstimate:
    """An estimate of a traffic-weighted mean (a fraction) with its 95% interval.

    `queries` counts the drawn queries in the domain (with a relevant page) that the estimate
    rests on; `standard_error` and `degrees_of_freedom` say how wide the interval is and why;
    `low` and `high` equal `estimate` when the variance cannot be estimated (one query per
    stratum, or every query drawn with certainty)."""

    estimate: float
    low: float
    high: float
    queries: int
    standard_error: float
    degrees_of_freedom: int

    def to_dict(self, digits: int = 6) -> dict:
        return {
            "estimate": round(self.estimate, digits),
            "low": round(self.low, digits),
            "high": round(self.high, digits),
            "queries": self.queries,
        }


def hajek_estimate(
    values: np.ndarray,
    inclusion_probabilities: np.ndarray,
    traffic_counts: np.ndarray,
    strata: np.ndarray | None = None,
    in_domain: np.ndarray | None = None,
) -> WeightedEstimate | None:
    """The traffic-weighted mean of `values` over the domain and its 95% interval (see the
    module docstring); None when no drawn query is in the domain or the domain has no
    traffic. Arrays are aligned, one entry per drawn query: values (fractions; anything for
    a query out of the domain), inclusion probabilities in (0, 1], traffic counts >= 0,
    strata labels (None: one stratum), domain flags (None: every query is in it)."""
    y = np.asarray(values, dtype=np.float64)
    pi = np.asarray(inclusion_probabilities, dtype=np.float64)
    counts = np.asarray(traffic_counts, dtype=np.float64)
    n = len(y)
    if len(pi) != n or len(counts) != n:
        raise ValueError("values, inclusion probabilities and traffic counts must be aligned")
    if n and (np.any(~(pi > 0)) or np.any(pi > 1 + 1e-9)):
        raise ValueError("an inclusion probability must be in (0, 1]")
    if np.any(counts < 0):
        raise ValueError("a traffic count cannot be negative")
    domain = np.ones(n, dtype=bool) if in_domain is None else np.asarray(in_domain, dtype=bool)
    labels = np.zeros(n, dtype=np.int64) if strata is None else np.unique(np.asarray(strata), return_inverse=True)[1].reshape(-1)

    weights = np.where(domain, counts / pi, 0.0)
    total = float(weights.sum())
    if not domain.any() or total <= 0:
        return None
    y = np.where(domain, y, 0.0)
    estimate = float(np.dot(weights, y) / total)
    linearised = weights * (y - estimate) / total

    # Certainty units are their own population: no variance, no degree of freedom.
    sampled = pi < 1 - 1e-12
    variance = 0.0
    degrees = 0
    for stratum in np.unique(labels[sampled]):
        members = sampled & (labels == stratum)
        n_h = int(members.sum())
        if n_h < 2:
            continue
        u = linearised[members]
        variance += n_h / (n_h - 1) * float(np.sum((1 - pi[members]) * (u - u.mean()) ** 2))
        degrees += n_h - 1
    error = float(np.sqrt(max(variance, 0.0)))
    half = _t_quantile(degrees) * error if degrees else 0.0
    return WeightedEstimate(
        estimate=estimate,
        low=max(0.0, estimate - half),
        high=min(1.0, estimate + half),
        queries=int(domain.sum()),
        standard_error=error,
        degrees_of_freedom=degrees,
    )


def _t_quantile(degrees: int) -> float:
    """Student's t quantile for a two-sided 95% interval on `degrees` degrees of freedom.

    Without scipy: the Cornish-Fisher expansion of t about the normal quantile, within 1e-3
    of the exact value from 4 degrees of freedom up; 1 to 3 are tabled."""
    exact = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305}
    if degrees in exact:
        return exact[degrees]
    z = 1.959963985
    d = float(degrees)
    return (
        z
        + (z**3 + z) / (4 * d)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * d**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * d**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * d**4)
    )
