"""The client's calls about versions beyond pulling them: the diff of two, a publish job,
variants with model labels and the calibration of model labels. GoldsetClient takes them in
as a base class."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from goldset_client.api_types import ModelLabels, VersionDiff, VersionModelFill
from goldset_client.paths import set_path
from goldset_client.types import PublishJob, QrelsFormat

if TYPE_CHECKING:
    from goldset_client.http import Transport


class VersionCalls:
    http: Transport

    def version_diff(self, slug: str, number: int | str, other: int | str, *, limit: int | None = None) -> VersionDiff:
        """What changed from version `number` to `other`: queries, labelled pairs and reference
        answers added, removed or changed (`limit` items of each listed; the counts are whole)."""
        params = {"limit": limit} if limit is not None else None
        return cast("VersionDiff", self.http.get_json(set_path(slug) + f"versions/{number}/diff/{other}", params))

    def publish_job(self, slug: str, job_id: int) -> PublishJob:
        """One publish job: status, progress and its version once done (publish() waits on it)."""
        return cast("PublishJob", self.http.get_json(set_path(slug) + f"publish-jobs/{int(job_id)}/"))

    def model_fills(self, slug: str, version: int | str) -> list[VersionModelFill]:
        """The version's variants whose gaps are filled with a model's labels."""
        return cast("list[VersionModelFill]", self.http.get_json(set_path(slug) + f"versions/{version}/model-fills/"))

    def add_model_fill(self, slug: str, version: int | str, *, model: str, prompt_hash: str) -> VersionModelFill:
        """Add a variant (a write token of a manager): the version's human labels with that
        model's (model, prompt_hash) labels where no person labelled."""
        body = {"model": model, "prompt_hash": prompt_hash}
        path = set_path(slug) + f"versions/{version}/model-fills/"
        return cast("VersionModelFill", self.http.request("POST", path, body=lambda: {"json": body}, ok=(201,)).json())

    def model_fill_qrels(self, slug: str, version: int | str, fill_id: int, *, format: QrelsFormat = "trec") -> str:
        """A variant's qrels as text, human and model labels merged. Not cached, unlike qrels()."""
        path = set_path(slug) + f"versions/{version}/model-fills/{int(fill_id)}/qrels"
        return self.http.request("GET", path, params={"format": format}).text

    def model_label_calibration(self, slug: str, *, model: str | None = None, prompt: str | None = None) -> ModelLabels:
        """The set's model-label sources and the calibration of one (by default the one with the most labels)."""
        params: dict[str, Any] = {k: v for k, v in {"model": model, "prompt": prompt}.items() if v is not None}
        return cast("ModelLabels", self.http.get_json(set_path(slug) + "model-labels/calibration/", params or None))
