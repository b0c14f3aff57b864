"""Traffic-weighted scores of a version drawn from a query log (issue 28), read at read time.

A version whose queries carry weights (VersionQuery.inclusion_probability, stratum and
traffic_count, frozen at publish) gets, beside each plain average, the estimate of what the
traffic sees (lib.survey: Hajek's ratio with a 95% design-based interval) of recall@k_first,
recall@k_final, nDCG@10 and MRR, overall and per stratum. The per-query values come from the
evaluation's stored blob (evaluation.selectors.PerQuery), which holds exactly the queries
with a relevant page, the estimator's domain: a drawn query outside it counts only in its
stratum's sample size. A query added by hand (no inclusion probability) is counted apart and
never weighted.

Computed when read, not stored: a version's weights are one query, every evaluation's blob
one more, and the arithmetic is a few numpy passes over the version's queries, so a page of
any number of runs costs two queries and no evaluation needs recomputing when this changes.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from evaluation.models import Evaluation
from evaluation.selectors import PerQuery
from goldenset.models import Version, VersionQuery
from lib.survey import WeightedEstimate, hajek_estimate


@dataclass(frozen=True)
class VersionWeights:
    """The drawn queries of a version, aligned arrays by `query_ids`: inclusion probability,
    traffic count (events in the log) and stratum ("" when the design had none)."""

    query_ids: tuple[str, ...]
    inclusion_probabilities: np.ndarray
    traffic_counts: np.ndarray
    strata: np.ndarray
    # query_id of every query added by hand (no inclusion probability, or no traffic count).
    unweighted: frozenset[str]


@dataclass
class WeightedFigures:
    """One evaluation's traffic-weighted estimates (fractions), by metric, overall and per
    stratum; `unweighted_queries` counts the averaged queries added by hand, which are in
    the plain averages and not in these; `out_of_domain` the drawn queries with no
    relevant page, in neither."""

    metrics: dict[str, WeightedEstimate]
    strata: dict[str, dict[str, WeightedEstimate]] = field(default_factory=dict)
    unweighted_queries: int = 0
    out_of_domain: int = 0

    def to_dict(self) -> dict:
        return {metric: estimate.to_dict() for metric, estimate in self.metrics.items()}

    def strata_dict(self) -> dict:
        return {stratum: {metric: found.to_dict() for metric, found in by_metric.items()} for stratum, by_metric in self.strata.items()}

    @property
    def unweighted_note(self) -> str:
        """What the page and the command say of the queries added by hand ("" when none)."""
        if not self.unweighted_queries:
            return ""
        plural = "query added by hand is" if self.unweighted_queries == 1 else "queries added by hand are"
        return f"{self.unweighted_queries} {plural} not in the weighted estimate"


def weighted_metrics(version: Version) -> list[str]:
    """The metrics that get a weighted estimate, in the order the pages show them."""
    names = [f"recall@{version.k_first}", f"recall@{version.k_final}", "ndcg@10", "mrr"]
    return list(dict.fromkeys(names))


def version_weights(version: Version) -> VersionWeights | None:
    """The version's frozen sampling weights (one query); None when no query of it was drawn
    from a log, so that a version with no weights shows no weighted figures at all."""
    return versions_weights([version.pk]).get(version.pk)


def versions_weights(version_ids: Iterable[int]) -> dict[int, VersionWeights]:
    """version_weights of each version that has drawn queries, by version id: one query."""
    rows = VersionQuery.objects.filter(version_id__in=list(version_ids)).values_list(
        "version_id", "query__query_id", "inclusion_probability", "traffic_count", "stratum"
    )
    by_version: dict[int, list[tuple]] = {}
    for version_id, *row in rows.iterator(chunk_size=10_000):
        by_version.setdefault(version_id, []).append(row)
    found = {}
    for version_id, queries in by_version.items():
        drawn = [(query_id, p, count, stratum) for query_id, p, count, stratum in queries if p is not None and count is not None]
        if not drawn:
            continue
        query_ids, probabilities, counts, strata = zip(*drawn)
        found[version_id] = VersionWeights(
            query_ids=tuple(query_ids),
            inclusion_probabilities=np.asarray(probabilities, dtype=np.float64),
            traffic_counts=np.asarray(counts, dtype=np.float64),
            strata=np.asarray(strata, dtype=object).astype(str),
            unweighted=frozenset(query_id for query_id, p, count, _ in queries if p is None or count is None),
        )
    return found


def weighted_figures(per_query: PerQuery, weights: VersionWeights, metrics: Iterable[str]) -> WeightedFigures:
    """The weighted estimates of `metrics` (those the blob holds) for one evaluation."""
    position = {query_id: i for i, query_id in enumerate(per_query.query_ids)}
    rows = np.fromiter((position.get(query_id, -1) for query_id in weights.query_ids), dtype=np.int64, count=len(weights.query_ids))
    in_domain = rows >= 0
    found = WeightedFigures(
        metrics={},
        unweighted_queries=sum(1 for query_id in per_query.query_ids if query_id in weights.unweighted),
        out_of_domain=int(np.count_nonzero(~in_domain)),
    )
    stratum_names = sorted(set(weights.strata.tolist()))
    for metric in metrics:
        values = per_query.values.get(metric)
        if values is None:
            continue
        aligned = np.where(in_domain, values[np.maximum(rows, 0)] if len(values) else 0.0, 0.0)
        overall = hajek_estimate(aligned, weights.inclusion_probabilities, weights.traffic_counts, weights.strata, in_domain)
        if overall is None:
            continue
        found.metrics[metric] = overall
        if len(stratum_names) < 2:
            continue
        for stratum in stratum_names:
            members = weights.strata == stratum
            estimate = hajek_estimate(
                aligned[members], weights.inclusion_probabilities[members], weights.traffic_counts[members], None, in_domain[members]
            )
            if estimate is not None:
                found.strata.setdefault(stratum, {})[metric] = estimate
    return found


def evaluations_weighted(evaluations: Iterable[Evaluation]) -> dict[int, WeightedFigures]:
    """Weighted figures of each done evaluation whose version has drawn queries, by
    evaluation id: two queries however many evaluations and versions (the versions'
    weights, then every blob at once). Each evaluation's `version` is read for its k."""
    done = [e for e in evaluations if e.status == Evaluation.Status.DONE]
    weights = versions_weights({e.version_id for e in done}) if done else {}
    wanted = {e.pk: e for e in done if e.version_id in weights}
    if not wanted:
        return {}
    rows = Evaluation.objects.filter(pk__in=list(wanted)).exclude(per_query=None).values_list("pk", "per_query")
    found = {}
    for pk, data in rows:
        if data:
            version = wanted[pk].version
            found[pk] = weighted_figures(PerQuery.from_bytes(bytes(data)), weights[version.pk], weighted_metrics(version))
    return found
