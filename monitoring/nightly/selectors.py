"""Reads of nights: what the monitoring page and the API show of each endpoint's latest."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from monitoring.models import NightlyRun

FINISHED = (NightlyRun.Status.DONE, NightlyRun.Status.FAILED)


@dataclass(frozen=True)
class LatestNights:
    """An endpoint's latest finished night (done or failed) and its latest one pending or running."""

    last: NightlyRun | None = None
    running: NightlyRun | None = None


def latest_nights(endpoint_ids: Iterable[int]) -> dict[int, LatestNights]:
    """endpoint id -> LatestNights, for every id given: one query however long the history
    (the latest night of each endpoint in each status, at most four rows an endpoint)."""
    ids = list(endpoint_ids)
    rows = (
        NightlyRun.objects.filter(endpoint_id__in=ids)
        .select_related("run", "version")
        .annotate(
            latest_in_status=Window(RowNumber(), partition_by=[F("endpoint_id"), F("status")], order_by=[F("slot").desc(), F("id").desc()])
        )
        .filter(latest_in_status=1)
        .order_by("-slot", "-id")
    )
    found: dict[int, dict[str, NightlyRun]] = {endpoint_id: {} for endpoint_id in ids}
    for night in rows:
        kind = "last" if night.status in FINISHED else "running"
        found[night.endpoint_id].setdefault(kind, night)  # newest first: the first of each kind
    return {endpoint_id: LatestNights(**kinds) for endpoint_id, kinds in found.items()}
