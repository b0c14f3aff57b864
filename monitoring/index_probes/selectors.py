"""Reads of the index probe for the monitoring page and the endpoint's page: per endpoint
with an exact mode, its latest probes, newest first, beside the relevance recall of its
latest night (what the index lost, beside what the people asking lost)."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from monitoring.endpoints.services import endpoint_spec
from monitoring.index_probes.services import MIN_SHARD_NEIGHBOURS, shard_sort_key
from monitoring.models import Endpoint, IndexProbe
from monitoring.schedules import next_index_probe_at

INDEX_PROBES_SHOWN = 12  # half a day of hourly probes


@dataclass
class ShardRow:
    shard: str
    exact: int
    returned: int
    share: float
    under: bool  # judged (enough neighbours) and under the endpoint's floor


@dataclass
class IndexPanel:
    """One endpoint's index probes. `relevance` is (recall, k, version number) of its latest
    scored night at the endpoint's depth, None when it has none."""

    endpoint: Endpoint
    probes: list[IndexProbe]  # newest first
    next_at: datetime | None
    relevance: tuple[float, int, int] | None = None
    shards: list[ShardRow] = field(default_factory=list)  # of the latest finished probe

    @property
    def latest(self) -> IndexProbe | None:
        return next((probe for probe in self.probes if probe.finished_at is not None and probe.ann_recall is not None), None)

    @property
    def under(self) -> bool:
        latest = self.latest
        return latest is not None and (latest.ann_recall < self.endpoint.index_recall_floor or any(r.under for r in self.shards))

    @property
    def anchor(self) -> str:
        return f"index-{self.endpoint.pk}"


def relevance_at_depth(endpoint: Endpoint, night) -> tuple[float, int, int] | None:
    """(recall, k, version number) of a scored night (monitoring.overview.selectors.Night) at
    the endpoint's depth, k_first for a first stage and k_final for a reranked one, as ANN
    recall is measured; None for no night or one not scored yet."""
    if night is None or night.version_number is None:
        return None
    first = endpoint.stage == Endpoint.Stage.FIRST_STAGE
    value, k = (night.recall_first, night.k_first) if first else (night.recall_final, night.k_final)
    return (value, k, night.version_number) if value is not None else None


def _shard_rows(probe: IndexProbe | None, floor: float) -> list[ShardRow]:
    if probe is None:
        return []
    return [
        ShardRow(shard, f["exact"], f["returned"], f["share"], f["exact"] >= MIN_SHARD_NEIGHBOURS and f["share"] < floor)
        for shard, f in sorted(probe.per_shard.items(), key=lambda item: shard_sort_key(item[0]))
    ]


def index_panels(
    endpoints: list[Endpoint], *, now: datetime, relevance: dict | None = None, limit: int = INDEX_PROBES_SHOWN
) -> list[IndexPanel]:
    """A panel per endpoint of `endpoints` that has an exact mode or an index probe stored,
    in the order given; `relevance` maps an endpoint id to its (recall, k, version number).
    Two queries however many endpoints."""
    ids = [endpoint.pk for endpoint in endpoints]
    newest_first = (F("slot").desc(), F("id").desc())
    probes: dict[int, list[IndexProbe]] = {pk: [] for pk in ids}
    rows = (
        IndexProbe.objects.filter(endpoint_id__in=ids)
        .select_related("version")
        .annotate(number=Window(RowNumber(), partition_by=[F("endpoint_id")], order_by=newest_first))
        .filter(number__lte=limit)
        .order_by("endpoint_id", "-slot", "-id")
    )
    for probe in rows:
        probes[probe.endpoint_id].append(probe)
    panels = []
    for endpoint in endpoints:
        if not probes[endpoint.pk] and not endpoint_spec(endpoint).has_exact_mode:
            continue
        panel = IndexPanel(endpoint, probes[endpoint.pk], next_index_probe_at(endpoint, now), (relevance or {}).get(endpoint.pk))
        panel.shards = _shard_rows(panel.latest, endpoint.index_recall_floor)
        panels.append(panel)
    return panels
