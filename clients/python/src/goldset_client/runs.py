"""The client's calls that change a run's standing (unarchive, mark complete or partial) and
read an upload job. GoldsetClient takes them in as a base class."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from goldset_client.paths import set_path
from goldset_client.types import Run, RunUploadJob

if TYPE_CHECKING:
    from goldset_client.http import Transport


class RunCalls:
    http: Transport

    def _run_action(self, slug: str, run_id: int, action: str) -> Run:
        return cast("Run", self.http.request("POST", set_path(slug) + f"runs/{int(run_id)}/{action}/").json())

    def unarchive_run(self, slug: str, run_id: int) -> Run:
        """Bring an archived run back everywhere (GoldsetAPIError 409 when it is not archived)."""
        return self._run_action(slug, run_id, "unarchive")

    def mark_run_complete(self, slug: str, run_id: int) -> Run:
        """Let a partial run count for coverage flags and alerts (422 when not partial, 409 when marked already)."""
        return self._run_action(slug, run_id, "mark-complete")

    def mark_run_partial(self, slug: str, run_id: int) -> Run:
        """Undo mark_run_complete: the partial run is left out of coverage flags and alerts again."""
        return self._run_action(slug, run_id, "mark-partial")

    def run_upload(self, slug: str, job_id: int) -> RunUploadJob:
        """One upload a worker reads: its status, its run once done or its refusal once failed."""
        return cast("RunUploadJob", self.http.get_json(set_path(slug) + f"run-uploads/{int(job_id)}/"))
