"""GoldsetClient: what an eval job does with Goldset, one method each.

    client = GoldsetClient()                    # GOLDSET_URL and GOLDSET_TOKEN from the environment
    qrels = client.qrels("wiki-demo", 3, expected_hash="0b5d7c1e...")   # pinned, cached, checked
    run = client.upload_run("wiki-demo", "bm25.run", system="bm25", stage="first_stage")
    evaluation = client.wait_for_scores("wiki-demo", run["id"], version=3)
    print(evaluation["scores"]["recall@100"])

What `qrels` checks: Goldset's content hash covers more than the labels (the version's
settings, every query's and page's snapshotted slice values, page dates and hashes:
lib/hashing.py version_hash), so it cannot be recomputed from the qrels alone. Instead the
server re-checks the version's stored rows against its hash before it streams a byte (a
damaged version is refused, 409 version_damaged), and names the hash in the answer's ETag.
The client checks that ETag equals the hash pinned by the caller (`expected_hash`), or the
version's `content_hash` as the API lists it when nothing is pinned, and that a cached body
still has the sha256 recorded when it was downloaded (see cache.py).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar, cast
from urllib.parse import quote

import requests

from goldset_client.answers import AnswerCalls
from goldset_client.api_types import JudgmentImport
from goldset_client.audit import AuditCalls
from goldset_client.cache import CacheEntry, QrelsCache, default_cache_dir
from goldset_client.endpoints import EndpointCalls
from goldset_client.errors import EvaluationFailed, GoldsetAPIError, GoldsetClientError, PublishFailed, QrelsIntegrityError, WaitTimeout
from goldset_client.http import RetryPolicy, Transport, connection_error
from goldset_client.monitoring import MonitoringCalls
from goldset_client.paths import set_path
from goldset_client.runs import RunCalls
from goldset_client.types import (
    Chunk,
    Chunking,
    ChunkingImport,
    Completeness,
    Document,
    Evaluation,
    GoldenSet,
    PublishJob,
    QrelsFormat,
    Run,
    RunComparison,
    RunUploadJob,
    Stage,
    Version,
    VersionAnswer,
    VersionQuery,
    VersionTag,
    VersionTagDetail,
)
from goldset_client.versions import VersionCalls

RunSource = str | os.PathLike[str] | bytes | BinaryIO
QREL_FORMATS = ("trec", "json", "beir", "csv", "jsonl")
# A spreadsheet formula start that Goldset's CSV export guards with a leading `'` (undone on reading).
CSV_GUARDED_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")
DOWNLOAD_CHUNK = 1 << 16
log = logging.getLogger("goldset_client")
# The jobs a client waits on (publish, run upload): each has `status` and its own `url`.
JobT = TypeVar("JobT", PublishJob, RunUploadJob)


class _Waiting:
    """The pauses of a poll: `poll_first` seconds, then 1.5 times longer each time up to
    `poll_max`, until `timeout` seconds have gone by; `status` is the last one seen."""

    def __init__(self, timeout: float, poll_first: float, poll_max: float, sleep: Callable[[float], None]) -> None:
        self.deadline = time.monotonic() + timeout
        self.next, self.poll_max, self.sleep = poll_first, poll_max, sleep
        self.status: str | None = None

    def pause(self, timed_out: Callable[[str | None], Exception]) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise timed_out(self.status)
        self.sleep(min(self.next, left))
        self.next = min(self.poll_max, self.next * 1.5)


def is_number(version: int | str) -> bool:
    """Whether `version` is a version number (not `latest` or a tag such as `prod`)."""
    return isinstance(version, int) or (isinstance(version, str) and version.isascii() and version.isdigit())


def strip_etag(etag: str) -> str:
    """The hash inside an ETag: `"abc"` and the weak `W/"abc"` (a gzipping proxy's) both give abc."""
    return etag.strip().removeprefix("W/").strip('"')


@dataclass(frozen=True)
class Qrels:
    """A version's qrels on disk, checked. `path` is the cached body, exactly the bytes the
    API sent (a gzip Content-Encoding undone); `from_cache` says whether the server answered 304 (nothing downloaded)."""

    golden_set: str
    version: int
    format: str
    slice: str | None
    content_hash: str
    path: Path
    from_cache: bool

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def text(self) -> str:
        return self.read_bytes().decode("utf-8")

    def to_dict(self) -> dict[str, dict[str, int]]:
        """{query_id: {doc_id: grade}} (ranx.Qrels.from_dict and pytrec_eval take it), from any format."""
        text = self.text()
        if self.format == "json":
            return {q: {d: int(g) for d, g in docs.items()} for q, docs in json_qrels(json.loads(text)).items()}
        if self.format == "jsonl":
            return {q: {d: label["grade"] for d, label in docs.items()} for q, docs in self.labels().items()}
        qrels: dict[str, dict[str, int]] = {}
        for query_id, doc_id, grade in qrel_rows(text, self.format):
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
        return qrels

    def labels(self) -> dict[str, dict[str, dict[str, Any]]]:
        """{query_id: {doc_id: {"grade", "hop"?, "spans"?}}} of a jsonl or json download: each
        label with its hop and evidence spans ([{start, end, grade}]) when it has them."""
        text = self.text()
        found: dict[str, dict[str, dict[str, Any]]] = {}
        if self.format == "jsonl":
            for line in text.splitlines():
                record = json.loads(line) if line.strip() else {}
                if "query_id" in record:
                    found.setdefault(record.pop("query_id"), {})[record.pop("doc_id")] = record
            return found
        if self.format != "json":
            raise GoldsetClientError(f"labels with their evidence come in the json and jsonl forms, not {self.format}")
        document = json.loads(text)
        qrels = json_qrels(document)
        wrapped = qrels is not document
        for query_id, docs in qrels.items():
            for doc_id, grade in docs.items():
                label: dict[str, Any] = {"grade": grade}
                if wrapped and doc_id in document.get("hops", {}).get(query_id, {}):
                    label["hop"] = document["hops"][query_id][doc_id]
                if wrapped and doc_id in document.get("spans", {}).get(query_id, {}):
                    label["spans"] = document["spans"][query_id][doc_id]
                found.setdefault(query_id, {})[doc_id] = label
        return found

    def duplicates(self) -> dict[str, str]:
        """{doc_id: the first document of its duplicate group} of a json or jsonl download."""
        text = self.text()
        if self.format == "jsonl":
            records = (json.loads(line) for line in text.splitlines() if line.strip())
            return {r["doc_id"]: r["duplicate_of"] for r in records if "duplicate_of" in r and "query_id" not in r}
        document = json.loads(text) if self.format == "json" else {}
        return dict(document.get("duplicates", {})) if json_qrels(document) is not document else {}


def json_qrels(document: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The {query_id: {doc_id: grade}} of a json download: the document itself, or its
    `qrels` when the version has evidence (then it is {"qrels", "hops"?, "spans"?, "duplicates"?})."""
    inner = document.get("qrels")
    if (
        isinstance(inner, dict)
        and set(document) <= {"qrels", "hops", "spans", "duplicates"}
        and all(isinstance(v, dict) for v in inner.values())
    ):
        return inner
    return document


def qrel_rows(text: str, fmt: str) -> Iterator[tuple[str, str, str]]:
    """(query_id, doc_id, grade) of a text export: trec, beir (a header line) or csv (one too)."""
    if fmt == "trec":
        for line in text.splitlines():
            if line.strip():
                query_id, _, doc_id, grade = line.split()
                yield query_id, doc_id, grade
    elif fmt == "beir":
        for line in text.splitlines()[1:]:
            if line:
                query_id, doc_id, grade = line.split("\t")
                yield query_id, doc_id, grade
    else:
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader, None)
        for query_id, doc_id, grade in reader:
            yield unguard(query_id), unguard(doc_id), grade


def unguard(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(CSV_GUARDED_STARTS) else cell


class GoldsetClient(MonitoringCalls, EndpointCalls, RunCalls, VersionCalls, AnswerCalls, AuditCalls):
    """A client of one Goldset server, acting with one API token.

    `base_url` and `token` default to GOLDSET_URL and GOLDSET_TOKEN; `cache_dir` (for qrels)
    to GOLDSET_CACHE_DIR or ~/.cache/goldset-client. `timeout` is per request, in seconds.
    Every method raises GoldsetAPIError (status, code, message, problems) on an error answer.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.http = Transport(
            base_url or os.environ.get("GOLDSET_URL", ""), token or os.environ.get("GOLDSET_TOKEN"), timeout=timeout, retry=retry
        )
        self.cache = QrelsCache(cache_dir if cache_dir is not None else default_cache_dir())

    # --- sets and versions ------------------------------------------------------------

    def golden_sets(self) -> list[GoldenSet]:
        """The sets this token may read, every page."""
        return self.http.paged("/api/v1/golden-sets/")

    def golden_set(self, slug: str) -> GoldenSet:
        return cast("GoldenSet", self.http.get_json(set_path(slug)))

    def versions(self, slug: str) -> list[Version]:
        """The set's versions, newest first."""
        return self.http.paged(set_path(slug) + "versions/")

    def version(self, slug: str, number: int | str = "latest") -> Version:
        """One version; `latest` or a tag (`prod`) follows the API's redirect to the number
        it names at this moment."""
        return cast("Version", self.http.get_json(set_path(slug) + f"versions/{number}/"))

    def queries(self, slug: str, version: int | str, *, slice: str | None = None) -> list[VersionQuery]:
        """The version's queries, every page, in natural query id order, each with its
        sampling weight (inclusion_probability, stratum, traffic_count) as the version froze
        it; `slice` (FIELD=VALUE) keeps one query slice."""
        params = {"slice": slice} if slice else None
        return self.http.paged(set_path(slug) + f"versions/{version}/queries", params)

    def tags(self, slug: str) -> list[VersionTag]:
        """The set's version tags by name, each with the number and hash it names now."""
        return cast("list[VersionTag]", self.http.get_json(set_path(slug) + "tags/"))

    def tag(self, slug: str, name: str) -> VersionTagDetail:
        """One tag with its history, newest move first."""
        return cast("VersionTagDetail", self.http.get_json(set_path(slug) + f"tags/{name}/"))

    def move_tag(self, slug: str, name: str, version: int, *, note: str = "") -> VersionTagDetail:
        """Point tag `name` at version `version`, creating it (a write token of a manager)."""
        body = {"version": version, "note": note}
        return cast("VersionTagDetail", self.http.request("PUT", set_path(slug) + f"tags/{name}/", body=lambda: {"json": body}).json())

    def compare_runs(
        self, slug: str, run_id: int, *, baseline: str, max_drop: float, metrics: Sequence[str] = (), slices: Sequence[str] = ()
    ) -> RunComparison:
        """Ask once for run `run_id` compared with `baseline` (a tag, or a run's name) query by
        query (the server's paired test): `status` "pending" (202) while either run is still
        being scored on the version, then "done" with every figure. Asking schedules the scores."""
        body = {"baseline": baseline, "max_drop": max_drop, "metrics": list(metrics), "slices": list(slices)}
        return cast(
            "RunComparison",
            self.http.request("POST", set_path(slug) + f"runs/{run_id}/comparisons/", body=lambda: {"json": body}, ok=(200, 202)).json(),
        )

    # --- qrels --------------------------------------------------------------------------

    def qrels(
        self, slug: str, version: int | str, *, format: QrelsFormat = "trec", slice: str | None = None, expected_hash: str | None = None
    ) -> Qrels:
        """Version `version`'s qrels, from the disk cache when the server says (304) it is current.

        The answer's ETag must be `expected_hash` when given (the hash the job pinned), else
        the version's content_hash as listed; QrelsIntegrityError otherwise. A cached body
        that no longer has the sha256 recorded at download is dropped and downloaded again.
        `slice` keeps one query or page slice (`lang=de`, `page:kind=faq`). `version` may be
        "latest" or a tag (`prod`), resolved to the number and hash it names at this moment
        first; a job should pin the number it got (Qrels.version).
        """
        if format not in QREL_FORMATS:
            raise GoldsetClientError(f"unknown qrels format {format!r}; choose one of {', '.join(QREL_FORMATS)}")
        listed = None if is_number(version) else self.version(slug, str(version))
        number = listed["number"] if listed is not None else int(version)
        if expected_hash:
            wanted = strip_etag(expected_hash)
        else:
            wanted = (listed or self.version(slug, number))["content_hash"]
        key = json.dumps([self.http.base_url, slug, number, format, slice or ""])
        entry = self.cache.get(key)
        if entry is not None and not QrelsCache.intact(entry):
            # Edited, truncated or swapped since it was downloaded: never answered from.
            log.warning("cached qrels %s no longer have the sha256 recorded at download; downloading them again", entry.body_path)
            self.cache.drop(key)
            entry = None
        path = set_path(slug) + f"versions/{number}/qrels"
        params = {"format": format, **({"slice": slice} if slice else {})}
        headers = {"If-None-Match": entry.etag} if entry is not None else {}
        response = self.http.request("GET", path, params=params, headers=headers, ok=(200, 304), stream=True)
        with response:
            served = strip_etag(response.headers.get("ETag", ""))
            if served != wanted:
                raise QrelsIntegrityError(
                    f"{slug} version {number}: the server's qrels carry content hash {served or '(none)'!r}, "
                    f"not the {'pinned' if expected_hash else 'listed'} {wanted!r}; nothing was kept"
                )
            if response.status_code == 304 and entry is not None:
                return Qrels(slug, number, format, slice, served, entry.body_path, from_cache=True)
            if response.status_code == 304:
                raise QrelsIntegrityError(f"{slug} version {number}: 304 Not Modified for a copy this client does not hold")
            try:
                fresh: CacheEntry = self.cache.put(key, response.headers["ETag"], response.iter_content(DOWNLOAD_CHUNK))
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
                # Cut mid-body: the part written is dropped (cache.put); say so as the client's error.
                raise connection_error(exc, "GET", response.url, self.http.timeout) from exc
        return Qrels(slug, number, format, slice, served, fresh.body_path, from_cache=False)

    def answers(self, slug: str, version: int | str, *, expected_hash: str | None = None) -> list[VersionAnswer]:
        """The reference answers version `version` froze, every page, in natural query id
        order ([] for a version without answers). Each page's ETag must be `expected_hash`
        when given (the hash the job pinned), else the version's content_hash as listed:
        QrelsIntegrityError otherwise, as for qrels (the hash covers the answers). `version`
        may be "latest" or a tag (resolved to its number first)."""
        listed = self.version(slug, version) if not is_number(version) or not expected_hash else None
        number = listed["number"] if listed is not None else int(version)
        if expected_hash:
            wanted = strip_etag(expected_hash)
        else:
            assert listed is not None  # listed above whenever no hash was pinned
            wanted = listed["content_hash"]
        items: list[VersionAnswer] = []
        path: str | None = set_path(slug) + f"versions/{number}/answers"
        params: dict[str, Any] | None = {"limit": self.http.page_size}
        while path:
            response = self.http.request("GET", path, params=params)
            served = strip_etag(response.headers.get("ETag", ""))
            if served != wanted:
                raise QrelsIntegrityError(
                    f"{slug} version {number}: the server's answers carry content hash {served or '(none)'!r}, "
                    f"not the {'pinned' if expected_hash else 'listed'} {wanted!r}"
                )
            page = response.json()
            items.extend(page["results"])
            path, params = page.get("next"), None
        return items

    # --- chunkings, documents, labels ---------------------------------------------------

    def chunkings(self, slug: str) -> list[Chunking]:
        """The chunkings of the set's corpus (the implicit `documents` is not listed)."""
        return cast("list[Chunking]", self.http.get_json(set_path(slug) + "chunkings/"))

    def chunks(self, slug: str, chunking: str) -> list[Chunk]:
        """Every chunk of one chunking, in document and text order (every page)."""
        return self.http.paged(set_path(slug) + f"chunkings/{quote(chunking, safe='')}/chunks/")

    def document(self, slug: str, doc_id: str, *, chunking: str | None = None) -> Document:
        """One document with its chunks, of every chunking or of `chunking`."""
        params = {"doc_id": doc_id, **({"chunking": chunking} if chunking else {})}
        return cast("Document", self.http.get_json(set_path(slug) + "document/", params))

    def upload_chunks(
        self, slug: str, chunking: str, chunks: list[Chunk] | str | os.PathLike[str], *, replace: bool = False, description: str = ""
    ) -> ChunkingImport:
        """Upload a chunking (manager): a list of {chunk_id, doc_id, start, end, text?} or the
        path of a JSON lines file of them. All or nothing; GoldsetAPIError lists every bad line."""
        if isinstance(chunks, list):
            text = "".join(json.dumps(chunk, ensure_ascii=False) + "\n" for chunk in chunks)
        else:
            text = Path(chunks).read_text(encoding="utf-8")
        params = {"name": chunking, "replace": "true" if replace else "false", **({"description": description} if description else {})}
        data = text.encode("utf-8")

        headers = {"Content-Type": "text/plain; charset=utf-8"}
        path = set_path(slug) + "chunkings/"
        return cast(
            "ChunkingImport", self.http.request("POST", path, params=params, headers=headers, body=lambda: {"data": data}, ok=(201,)).json()
        )

    def import_labels(
        self, slug: str, labels: list[dict[str, Any]], *, create_missing: bool = False, chunking: str | None = None
    ) -> JudgmentImport:
        """Import labels as `imported` judgments (manager): each {query_id, doc_id, grade}, with
        `start` and `end` for a span of the document and `hop`; with `chunking`, doc ids are
        chunk ids of it. Publish a version afterwards to snapshot them."""
        payload: dict[str, Any] = {"labels": labels, "create_missing": create_missing}
        if chunking:
            payload["chunking"] = chunking
        return cast(
            "JudgmentImport", self.http.request("POST", set_path(slug) + "judgments/", body=lambda: {"json": payload}, ok=(201,)).json()
        )

    # --- runs and scores ----------------------------------------------------------------

    def upload_run(
        self,
        slug: str,
        run: RunSource,
        *,
        system: str,
        stage: Stage,
        name: str | None = None,
        format: str | None = None,
        series: str | None = None,
        measured_at: datetime | str | None = None,
        filename: str | None = None,
        chunking: str | None = None,
        timeout: float = 1800.0,
        poll_first: float = 0.5,
        poll_max: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Run:
        """Upload a run file as it is (bytes untouched: the server reads gzip, JSON, TREC...).

        `run` is a path, bytes or a binary file; `format` is the server's `format` field
        (left out, the server detects it from the content). `series` with `measured_at`
        makes the run a night of that series. `chunking` names the corpus's chunking whose
        chunk ids the run returns (left out: doc ids). Returns the stored run.

        A file over the server's inline limit is read by a worker: the API answers 202 with
        the upload job, which this polls (`poll_first` seconds, then 1.5 times longer each
        time up to `poll_max`) until it is done, and returns its run as a 201 would have. A
        refusal is raised as GoldsetAPIError with the status, code, problems and field the
        server would have answered in the request (422 for a bad line); WaitTimeout after
        `timeout` seconds (the job goes on: poll its `url` later).
        """
        opener, source_name = _run_opener(run, filename)
        fields: dict[str, str] = {"system": system, "stage": stage}
        if name:
            fields["name"] = name
        if format:
            fields["format"] = format
        if series:
            fields["series"] = series
        if chunking:
            fields["chunking"] = chunking
        if measured_at is not None:
            fields["measured_at"] = measured_at.isoformat() if isinstance(measured_at, datetime) else measured_at
        handles: list[IO[bytes]] = []

        def body() -> dict[str, Any]:
            # Each attempt sends the file from its first byte.
            for handle in handles:
                handle.close()
            handles[:] = [opener()]
            return {"data": fields, "files": {"file": (source_name, handles[0], "application/octet-stream")}}

        try:
            response = self.http.request("POST", set_path(slug) + "runs/", body=body, ok=(201, 202))
        finally:
            for handle in handles:
                handle.close()
        if response.status_code == 201:
            return cast("Run", response.json())
        return self._run_upload_wait(response.json(), slug, timeout, poll_first, poll_max, sleep)

    def _job_wait(self, job: JobT, late: str, timeout: float, poll_first: float, poll_max: float, sleep: Callable[[float], None]) -> JobT:
        """`job` (a publish or upload job of the API) read again until it is done or failed;
        WaitTimeout ("`late` within N s (status S); it goes on: GET <url> later") past `timeout`."""
        waiting = _Waiting(timeout, poll_first, poll_max, sleep)
        url = job["url"]  # a job's own URL, the same at every read

        def timed_out(status: str | None) -> Exception:
            return WaitTimeout(f"{late} within {timeout:g} s (status {status}); it goes on: GET {url} later", last_status=status)

        while job["status"] not in ("done", "failed"):
            waiting.status = job["status"]
            waiting.pause(timed_out)
            job = cast(JobT, self.http.get_json(url))
        return job

    def _run_upload_wait(
        self, job: RunUploadJob, slug: str, timeout: float, poll_first: float, poll_max: float, sleep: Callable[[float], None]
    ) -> Run:
        """The run of upload `job` once a worker stored it; its refusal raised as the API's."""
        job = self._job_wait(
            job, f"the upload of {job['source_name']} to {slug} (job {job['id']}) was not read", timeout, poll_first, poll_max, sleep
        )
        if job["status"] == "failed" or job["run"] is None:
            raise GoldsetAPIError(
                job["error_status"] or 500,
                job["error_code"] or "internal",
                job["error"] or "the upload ended without a run",
                problems=job["problems"],
                field=job["field"],
                method="GET",
                url=job["url"],
            )
        return job["run"]

    def wait_for_comparison(
        self,
        slug: str,
        run_id: int,
        *,
        baseline: str,
        max_drop: float,
        metrics: Sequence[str] = (),
        slices: Sequence[str] = (),
        timeout: float = 600.0,
        poll_first: float = 0.5,
        poll_max: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> RunComparison:
        """compare_runs asked again (`poll_first` seconds, then 1.5 times longer up to
        `poll_max`) until both runs are scored and the comparison is done; WaitTimeout past
        `timeout` seconds, naming the version it waited on."""
        waiting = _Waiting(timeout, poll_first, poll_max, sleep)
        while True:
            found = self.compare_runs(slug, run_id, baseline=baseline, max_drop=max_drop, metrics=metrics, slices=slices)
            if found["status"] == "done":
                return found
            waiting.status = found["status"]

            def late(status: str | None, found: RunComparison = found) -> Exception:
                return WaitTimeout(
                    f"run {run_id} and {found['baseline_run']!r} of {slug} not both scored on version {found['version']} "
                    f"within {timeout:g} s",
                    last_status=status,
                )

            waiting.pause(late)

    def archive_run(self, slug: str, run_id: int) -> Run:
        """Archive the run: kept with its scores, left out of leaderboards, alerts and pools."""
        return cast("Run", self.http.request("POST", set_path(slug) + f"runs/{run_id}/archive/").json())

    def run(self, slug: str, run_id: int) -> Run:
        return cast("Run", self.http.get_json(set_path(slug) + f"runs/{run_id}/"))

    def runs(self, slug: str, *, system: str | None = None, stage: Stage | None = None, series: str | None = None) -> list[Run]:
        params = {k: v for k, v in {"system": system, "stage": stage, "series": series}.items() if v is not None}
        return self.http.paged(set_path(slug) + "runs/", params)

    def run_evaluations(self, slug: str, run_id: int, *, version: int | str | None = None) -> list[Evaluation]:
        """The run's evaluations, newest version first (or only on `version`, a number or a
        tag resolved by the server now: each evaluation names its number), in any status."""
        params = {"version": version} if version is not None else {}
        return self.http.paged(set_path(slug) + f"runs/{run_id}/evaluations/", params)

    def scores(
        self, slug: str, *, version: int | str | None = None, system: str | None = None, stage: Stage | None = None
    ) -> list[Evaluation]:
        """Every run's evaluation on `version` (the latest when left out), by run name."""
        params = {k: v for k, v in {"version": version, "system": system, "stage": stage}.items() if v is not None}
        return self.http.paged(set_path(slug) + "evaluations/", params)

    def completeness(self, slug: str, run_id: int, *, version: int) -> list[Completeness]:
        """The run's completeness rows on `version`, all queries first ("" slice), then per slice."""
        found = self.run_evaluations(slug, run_id, version=version)
        if not found:
            raise GoldsetClientError(f"run {run_id} of {slug} has no evaluation on version {version}")
        return list(found[0]["completeness"])

    def wait_for_scores(
        self,
        slug: str,
        run_id: int,
        *,
        version: int | None = None,
        timeout: float = 600.0,
        poll_first: float = 0.5,
        poll_max: float = 15.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Evaluation:
        """The run's evaluation on `version` (the latest when left out) once its status is done.

        Polls the run's evaluations, waiting `poll_first` seconds then 1.5 times longer each
        time up to `poll_max`. Raises EvaluationFailed when Goldset could not score it,
        WaitTimeout after `timeout` seconds, and GoldsetClientError at once when the run can
        never be scored on `version`: Goldset scores a run on the version latest at its
        upload and on every later one, never on an older one.
        """
        number = version if version is not None else self.golden_set(slug)["latest_version"]
        if number is None:
            raise GoldsetClientError(f"{slug} has no published version yet, so run {run_id} is not scored")
        self._check_scorable(slug, run_id, number)

        def scored() -> Evaluation | None:
            found = self.run_evaluations(slug, run_id, version=number)
            status = found[0]["status"] if found else None
            if status == "failed":
                raise EvaluationFailed(
                    f"run {run_id} of {slug} could not be scored on version {number}: {found[0]['error']}", error=found[0]["error"]
                )
            if status != "done":
                waiting.status = status
                return None
            return found[0]

        waiting = _Waiting(timeout, poll_first, poll_max, sleep)
        while (evaluation := scored()) is None:
            waiting.pause(
                lambda status: WaitTimeout(  # noqa: B023  (called within this iteration)
                    f"run {run_id} of {slug} not scored on version {number} within {timeout:g} s (status {status or 'not scheduled yet'})",
                    last_status=status,
                )
            )
        return evaluation

    def _check_scorable(self, slug: str, run_id: int, number: int) -> None:
        run = self.run(slug, run_id)
        uploaded = _instant(run["created_at"])
        for later in self.versions(slug):
            if later["number"] > number and _instant(later["created_at"]) <= uploaded:
                raise GoldsetClientError(
                    f"run {run_id} of {slug} was uploaded after version {later['number']} was published, so it is "
                    f"never scored on version {number}; wait for version {later['number']} or later instead"
                )

    # --- versions -----------------------------------------------------------------------

    def publish(
        self,
        slug: str,
        *,
        note: str = "",
        wait: bool = True,
        timeout: float = 1800.0,
        poll_first: float = 0.5,
        poll_max: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> PublishJob:
        """Publish the set's resolved labels as its next version (a write token of a manager).

        Goldset publishes in a background job: the API answers 202 with the job at once. With
        `wait` (the default) this polls the job, `poll_first` seconds then 1.5 times longer
        each time up to `poll_max`, until it is done, and returns it: its `version` holds the
        number and content hash to pin. Raises PublishFailed when the job ended without a
        version, WaitTimeout after `timeout` seconds (the job goes on: poll its `url` later),
        and GoldsetAPIError 409 at once when nothing changed since the latest version or a
        publish of the set is under way. Without `wait`, returns the job as the API answered.
        """
        job = cast(
            PublishJob,
            self.http.request(
                "POST",
                set_path(slug) + "versions/",
                body=lambda: {"json": {"note": note}},
                ok=(202,),
            ).json(),
        )
        if not wait:
            return job
        job = self._job_wait(job, f"the publish of {slug} (job {job['id']}) was not done", timeout, poll_first, poll_max, sleep)
        if job["status"] == "failed":
            raise PublishFailed(f"{slug} was not published: {job['error']}", error=job["error"])
        return job


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _run_opener(run: RunSource, filename: str | None) -> tuple[Callable[[], IO[bytes]], str]:
    """A function opening the run's bytes from the start (once per attempt), and its file name."""
    if isinstance(run, (str, os.PathLike)):
        path = Path(run)
        if not path.is_file():
            raise GoldsetClientError(f"run file {str(path)!r} does not exist")
        return (lambda: open(path, "rb")), filename or path.name
    if isinstance(run, bytes):
        return (lambda: io.BytesIO(run)), filename or "run"
    # A file object (standard input, a pipe) is read once, so that a retry can send it again;
    # requests reads a multipart file whole anyway.
    data = run.read()
    return (lambda: io.BytesIO(data)), filename or os.path.basename(str(getattr(run, "name", "") or "run"))
