"""The client's calls about live endpoints: series and their nights, the monitoring summary,
and incidents (list, read, triage). GoldsetClient takes them in as a base class."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from goldset_client.api_types import Incident, IncidentDetail, Monitoring
from goldset_client.paths import set_path
from goldset_client.types import Series, SeriesNights

if TYPE_CHECKING:
    from goldset_client.http import Transport


class MonitoringCalls:
    http: Transport

    # --- monitoring ---------------------------------------------------------------------

    def series(self, slug: str) -> list[Series]:
        """The set's series by name, each with its latest night."""
        return self.http.paged(set_path(slug) + "series/")

    def series_nights(self, slug: str, series: str, *, slice: str | None = None, limit: int | None = None) -> SeriesNights:
        """A series' last `limit` nights, oldest first; `slice` adds each night's scores on it."""
        params: dict[str, Any] = {k: v for k, v in {"slice": slice, "limit": limit}.items() if v is not None}
        return cast("SeriesNights", self.http.get_json(set_path(slug) + f"series/{quote(series, safe='')}/nights/", params))

    def monitoring(self, slug: str, *, slice: str | None = None) -> Monitoring:
        """The monitoring page's figures: series' latest nights, rerank losses, probes, open alerts."""
        return cast("Monitoring", self.http.get_json(set_path(slug) + "monitoring/", {"slice": slice} if slice else None))

    # --- incidents ----------------------------------------------------------------------

    def incidents(self, slug: str, *, state: str | None = None) -> list[Incident]:
        """The set's incidents, open first; `state` (open, acknowledged, muted, resolved) keeps one."""
        return self.http.paged(set_path(slug) + "incidents/", {"state": state} if state else None)

    def incident(self, slug: str, incident_id: int) -> IncidentDetail:
        """One incident with its state, owner and every alert."""
        return cast("IncidentDetail", self.http.get_json(set_path(slug) + f"incidents/{int(incident_id)}/"))

    def incident_update(
        self,
        slug: str,
        incident_id: int,
        *,
        state: str | None = None,
        muted_until: datetime | None = None,
        owner: str | None = None,
    ) -> IncidentDetail:
        """Change an incident (a write token of a manager): `state` acknowledged, muted (with
        `muted_until`, an aware datetime), resolved or open (reopen); `owner` a manager's or
        annotator's user name, "" for nobody. Returns the incident as changed."""
        body: dict[str, Any] = {}
        if state is not None:
            body["state"] = state
        if muted_until is not None:
            body["muted_until"] = muted_until.isoformat()
        if owner is not None:
            body["owner"] = owner
        return cast(
            "IncidentDetail",
            self.http.request("PATCH", set_path(slug) + f"incidents/{int(incident_id)}/", body=lambda: {"json": body}).json(),
        )

    def incident_acknowledge(self, slug: str, incident_id: int) -> IncidentDetail:
        """Someone is on it: later alerts of the incident page nobody."""
        return self.incident_update(slug, incident_id, state="acknowledged")

    def incident_mute(self, slug: str, incident_id: int, *, until: datetime) -> IncidentDetail:
        """No message about the incident until `until`; the first alert after it pages again."""
        return self.incident_update(slug, incident_id, state="muted", muted_until=until)

    def incident_resolve(self, slug: str, incident_id: int) -> IncidentDetail:
        return self.incident_update(slug, incident_id, state="resolved")

    def incident_reopen(self, slug: str, incident_id: int) -> IncidentDetail:
        return self.incident_update(slug, incident_id, state="open")
