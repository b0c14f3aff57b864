"""Coverage of the traffic: does a version's set of queries look like its query log?

For each slice field of the set's latest query log and each of its values: the share of the
log's events with that value (traffic share) beside the share of the version's queries with
it (set share). A value is flagged *far* when set share / traffic share is under FAR_BELOW or
over FAR_ABOVE (a slice of the traffic with no golden query is far below; one of the set
absent from the traffic, far above): a plain average over the set then weighs that slice by
half or twice what the traffic does. It is flagged *underpowered* when the slice's paired test
on the version cannot detect the set's alert drop (evaluation.alerts.slice_power of
the latest finished evaluation of the version, the slice "query:FIELD=VALUE"; the version's
queries of a value not among the set's query slice fields have no such figure).

Values compare as their JSON value's text (as slices do): "de", "2024", "true".
"""

import json
from dataclasses import dataclass, field

from django.db.models import Count, Sum, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from evaluation.alerts.slice_power import slice_power
from evaluation.models import Evaluation
from goldenset.models import GoldenSet, Version, VersionQuery
from traffic.models import LoggedQuery, QueryLog

FAR_BELOW = 0.5
FAR_ABOVE = 2.0
NONE = "(none)"  # the value of a query without the field


@dataclass
class TrafficSlice:
    field: str
    value: str
    events: int
    logged_queries: int
    traffic_share: float  # a fraction of the log's events
    set_queries: int
    set_share: float  # a fraction of the version's queries
    underpowered: bool | None = None  # None: no figure (not a slice of the version, or no evaluation)
    detectable_points: float | None = None

    @property
    def ratio(self) -> float | None:
        """set share / traffic share; None when the value has no traffic."""
        return self.set_share / self.traffic_share if self.traffic_share else None

    @property
    def far(self) -> bool:
        ratio = self.ratio
        return ratio is None or not FAR_BELOW <= ratio <= FAR_ABOVE

    @property
    def flags(self) -> list[str]:
        found = []
        if self.far:
            if self.ratio is None:
                found.append("in the set, not in the traffic")
            elif self.ratio < FAR_BELOW:
                found.append("under-represented")
            else:
                found.append("over-represented")
        if self.underpowered:
            found.append("underpowered")
        return found


@dataclass
class TrafficCoverage:
    log: QueryLog
    version: Version
    evaluation: Evaluation | None
    slices: list[TrafficSlice] = field(default_factory=list)

    @property
    def flagged(self) -> list[TrafficSlice]:
        return [one for one in self.slices if one.flags]


def _value_text(value: object) -> str:
    if value is None or value == "":
        return NONE
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def traffic_coverage(golden_set: GoldenSet, version: Version) -> TrafficCoverage | None:
    """The traffic coverage of `version` against the set's latest query log (see the module's
    docstring), values by traffic share descending; None when the set has no log. A query
    per log field for the traffic, one for the version's queries, one for the evaluation."""
    log = QueryLog.objects.filter(golden_set=golden_set).order_by("-imported_at", "-pk").first()
    if log is None:
        return None
    snapshots = list(VersionQuery.objects.filter(version=version).values_list("metadata", "query__metadata"))
    evaluation = (
        Evaluation.objects.filter(version=version, status=Evaluation.Status.DONE)
        .exclude(per_query=None)
        .select_related("run", "version")
        .order_by("-pk")
        .first()
    )
    powers = slice_power(evaluation) if evaluation is not None else {}
    total_events = LoggedQuery.objects.filter(log=log).aggregate(total=Sum("count"))["total"] or 0
    coverage = TrafficCoverage(log=log, version=version, evaluation=evaluation)
    for name in log.fields or []:
        traffic = (
            LoggedQuery.objects.filter(log=log)
            .annotate(value=Cast(KeyTextTransform(name, "fields"), TextField()))
            .values("value")
            .annotate(events=Sum("count"), queries=Count("pk"))
        )
        rows: dict[str, list[int]] = {}
        for row in traffic:
            counts = rows.setdefault(row["value"] if row["value"] not in (None, "") else NONE, [0, 0, 0])
            counts[0] += row["events"]
            counts[1] += row["queries"]
        for frozen, live in snapshots:
            metadata = frozen if name in frozen else live
            rows.setdefault(_value_text(metadata.get(name)), [0, 0, 0])[2] += 1
        for value, (events, logged, held) in rows.items():
            power = powers.get(f"query:{name}={value}")
            coverage.slices.append(
                TrafficSlice(
                    field=name,
                    value=value,
                    events=events,
                    logged_queries=logged,
                    traffic_share=events / total_events if total_events else 0.0,
                    set_queries=held,
                    set_share=held / len(snapshots) if snapshots else 0.0,
                    underpowered=power.underpowered if power else None,
                    detectable_points=power.detectable_points if power else None,
                )
            )
    coverage.slices.sort(key=lambda one: (one.field, -one.traffic_share, one.value))
    return coverage
