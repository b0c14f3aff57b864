"""The client's calls about a set's live endpoints: their settings, canary and index probes,
and their nights (run one now, poll it). GoldsetClient takes them in as a base class."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast
from urllib.parse import quote

from goldset_client.api_types import Endpoint, IndexProbeHistory, NightlyRun, ProbeHistory
from goldset_client.paths import set_path

if TYPE_CHECKING:
    from goldset_client.http import Transport


def endpoint_path(slug: str, endpoint: str) -> str:
    return set_path(slug) + f"endpoints/{quote(endpoint, safe='')}/"


class EndpointCalls:
    http: Transport

    def endpoints(self, slug: str) -> list[Endpoint]:
        """The set's endpoints by name, each with its last night, the one running and when the
        next night and probe are due (no secret: header values as typed)."""
        return cast("list[Endpoint]", self.http.paged(set_path(slug) + "endpoints/"))

    def endpoint(self, slug: str, endpoint: str) -> Endpoint:
        return cast("Endpoint", self.http.get_json(endpoint_path(slug, endpoint)))

    def endpoint_probes(self, slug: str, endpoint: str, *, limit: int | None = None) -> ProbeHistory:
        """The last `limit` canary probe rounds, newest first, with where each canary came back."""
        params = {"limit": limit} if limit is not None else None
        return cast("ProbeHistory", self.http.get_json(endpoint_path(slug, endpoint) + "probes/", params))

    def endpoint_index_probes(self, slug: str, endpoint: str, *, limit: int | None = None) -> IndexProbeHistory:
        """The last `limit` index probes, newest first: ANN recall@k against the exact answers, per shard too."""
        params = {"limit": limit} if limit is not None else None
        return cast("IndexProbeHistory", self.http.get_json(endpoint_path(slug, endpoint) + "index-probes/", params))

    def run_endpoint(self, slug: str, endpoint: str) -> NightlyRun:
        """Query the endpoint now (a write token of a manager): a night a worker runs after the
        answer (202). Poll it with endpoint_night(..., night["id"]) until done or failed."""
        return cast("NightlyRun", self.http.request("POST", endpoint_path(slug, endpoint) + "runs/", ok=(202,)).json())

    def endpoint_night(self, slug: str, endpoint: str, night_id: int) -> NightlyRun:
        """One night: status, queries done of total, failures, its run once done, its error once failed."""
        return cast("NightlyRun", self.http.get_json(endpoint_path(slug, endpoint) + f"runs/{int(night_id)}/"))
