"""Reads the evaluation needs: runs and their entries, a version's labels and slices as arrays."""

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db.models import Exists, OuterRef, Q, TextField
from django.db.models.functions import Cast
from django.http import Http404

from evaluation.metrics import Metric, default_metrics, parse_metrics
from evaluation.models import Evaluation, EvaluationSettings, Run, RunData, RunUploadJob
from goldenset.models import GoldenSet, Version, VersionLabel, VersionPage, VersionQuery
from lib.bulk import select_binary
from lib.ids import natural_key
from lib.runs import RankedRun, npz_bytes

DEFAULT_AGE_BUCKETS = [30, 365]


def evaluation_settings(golden_set: GoldenSet) -> EvaluationSettings:
    """The set's evaluation settings, with the seed's defaults when none were saved."""
    found = EvaluationSettings.objects.filter(golden_set=golden_set).first()
    return found or EvaluationSettings(golden_set=golden_set)


def metrics_for(golden_set: GoldenSet, version: Version) -> tuple[Metric, ...]:
    """The metrics to score, in display order: the set's choice, or the defaults at the version's k."""
    chosen = evaluation_settings(golden_set).metrics
    return parse_metrics(chosen) if chosen else default_metrics(version.k_first, version.k_final)


def later_night(run_path: str = "") -> Exists:
    """True for a run of a series that has a later night: leaderboards, trends and coverage
    show each series by its latest night (the monitoring page shows the rest). `run_path`
    is the path from the queried model to its run ("run__" from an Evaluation, "" from a Run)."""
    return Exists(
        Run.objects.filter(
            series=OuterRef(f"{run_path}series"),
            measured_at__gt=OuterRef(f"{run_path}measured_at"),
        )
    )


def run_not_archived(run_path: str = "") -> Q:
    """True for a run that is not archived: leaderboards, pools, default lists and choices
    show only these. `run_path` as for later_night."""
    return Q(**{f"{run_path}archived_at": None})


def run_counted(run_path: str = "") -> Q:
    """True for a run whose figures raise coverage flags and alerts: not archived, and not
    partial unless a manager marked it complete (Run.held_back is its negation, in Python)."""
    return run_not_archived(run_path) & (Q(**{f"{run_path}partial": False}) | Q(**{f"{run_path}completed_at__isnull": False}))


def run_get(golden_set: GoldenSet, run_id: int) -> Run:
    """Run `run_id` of the set, or Http404 (a run of another set is as absent as none)."""
    run = (
        Run.objects.filter(golden_set=golden_set, pk=run_id)
        .select_related("uploaded_by", "golden_set", "series", "archived_by", "completed_by", "chunking")
        .first()
    )
    if run is None:
        raise Http404("no such run")
    return run


def run_upload_jobs_active(golden_set: GoldenSet, *, limit: int = 20) -> list[RunUploadJob]:
    """The set's uploads a worker has yet to finish, newest first: the runs page links them,
    for whoever left a job's page before it ended."""
    return list(RunUploadJob.objects.filter(golden_set=golden_set, status__in=RunUploadJob.ACTIVE).select_related("created_by")[:limit])


def run_upload_job_get(golden_set: GoldenSet, job_id: int) -> RunUploadJob:
    """The set's run upload job `job_id`, with its run and who asked for it, or Http404 (a
    job of another set is as absent as none)."""
    job = (
        RunUploadJob.objects.filter(golden_set=golden_set, pk=job_id)
        .select_related("golden_set", "created_by", "run__uploaded_by", "run__series", "run__archived_by", "run__chunking")
        .first()
    )
    if job is None:
        raise Http404("no such run upload")
    return job


def run_ranked(run: Run) -> RankedRun:
    data = run_data(run.pk)
    if data is None:
        raise Run.DoesNotExist(f"run {run.pk} has no stored entries")
    return RankedRun.from_bytes(data)


def run_data(run_id: int) -> bytes | None:
    """The stored entries of run `run_id` (RunData.ranked), None when there are none."""
    rows = select_binary(f"SELECT ranked FROM {RunData._meta.db_table} WHERE run_id = %s", [run_id])
    return bytes(rows[0][0]) if rows else None


@dataclass
class VersionSlices:
    """The slices of a version. Keys are slice names as stored in Score.slice:
    "query:FIELD=VALUE" maps to a set of query ids, "page:FIELD=VALUE" to an array of page keys."""

    query: dict[str, set[str]]
    page: dict[str, np.ndarray]
    # The labelled pages that have a publication date, and that date (datetime64[us], UTC:
    # what the age slices were cut from), aligned: what the
    # coverage page's canary suggestions pick the newest from without sending the database
    # a list of every relevant page.
    dated_pages: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    published_at: np.ndarray = field(default_factory=lambda: np.empty(0, dtype="datetime64[us]"))


def version_numbers(golden_set: GoldenSet) -> list[int]:
    """The set's version numbers, newest first, for the version choosers."""
    return list(golden_set.versions.order_by("-number").values_list("number", flat=True))


def version_query_ids(version: Version) -> list[str]:
    """The version's query ids in natural order."""
    ids = VersionQuery.objects.filter(version=version).values_list("query__query_id", flat=True)
    return sorted(ids, key=natural_key)


def version_labels(version: Version) -> list[tuple[str, int, int]]:
    """(query_id, page key, grade) of every label of the version."""
    rows = VersionLabel.objects.filter(version=version).values_list("query__query_id", "page_id", "grade")
    return list(rows.iterator(chunk_size=50_000))


def age_bucket_names(bounds: list[int]) -> list[tuple[str, int | None]]:
    """[(name, upper bound in days or None)], e.g. 0-30d, 31-365d, 366d+."""
    names, low = [], 0
    for bound in sorted(bounds):
        names.append((f"{low}-{bound}d", bound))
        low = bound + 1
    names.append((f"{low}d+", None))
    return names


@dataclass
class SliceParts:
    """What a version's slices are cut from, whatever the set's age buckets: the query
    and page slices of the snapshotted metadata, and the labelled pages with a publication
    date and that date (microseconds since the epoch, UTC)."""

    query: dict[str, set[str]]
    page: dict[str, np.ndarray]
    dated_pages: np.ndarray
    published_us: np.ndarray


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _microseconds(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def slice_parts(version: Version) -> SliceParts:
    """The version's SliceParts, from its query and page snapshots (two queries)."""
    query: dict[str, set[str]] = {}
    query_slices = _slice_names("query", version.query_slice_fields)
    rows = VersionQuery.objects.filter(version=version).values_list("query__query_id", _as_text("metadata"))
    for query_id, metadata in rows:
        for name in query_slices(metadata):
            query.setdefault(name, set()).add(query_id)

    pages: dict[str, list[int]] = {}
    dated_pages: list[int] = []
    published: list[int] = []
    page_slices = _slice_names("page", version.page_slice_fields)
    rows = VersionPage.objects.filter(version=version).values_list("page_id", _as_text("metadata"), "published_at")
    for page_id, metadata, published_at in rows:
        for name in page_slices(metadata):
            pages.setdefault(name, []).append(page_id)
        if published_at is not None:
            dated_pages.append(page_id)
            published.append(_microseconds(published_at))
    return SliceParts(
        query=query,
        page={name: np.asarray(keys, dtype=np.int64) for name, keys in pages.items()},
        dated_pages=np.asarray(dated_pages, dtype=np.int64),
        published_us=np.asarray(published, dtype=np.int64),
    )


def slices_of(parts: SliceParts, version: Version, buckets: list[int]) -> VersionSlices:
    """The version's slices: `parts` with the age slices cut by `buckets` (upper bounds in
    days). A page is in the first bucket whose bound its age at the version's publish time
    does not exceed (ages in whole microseconds, as the datetimes subtract)."""
    pages = dict(parts.page)
    if len(parts.dated_pages):
        names = age_bucket_names(buckets)
        bounds = np.asarray([bound * 86_400_000_000 for _, bound in names if bound is not None], dtype=np.int64)
        ages = _microseconds(version.created_at) - parts.published_us
        bucket = np.searchsorted(bounds, ages, side="left")
        for i, (name, _) in enumerate(names):
            keys = parts.dated_pages[bucket == i]
            if len(keys):
                pages[f"page:age={name}"] = keys
    return VersionSlices(
        query=dict(sorted(parts.query.items(), key=lambda item: natural_key(item[0]))),
        page=dict(sorted(pages.items(), key=lambda item: natural_key(item[0]))),
        dated_pages=parts.dated_pages,
        published_at=parts.published_us.astype("datetime64[us]"),
    )


def version_slices(version: Version) -> VersionSlices:
    """Query slices from the snapshotted query metadata; page slices from the snapshotted page
    metadata, plus the age of each labelled page at the version's publish time."""
    buckets = evaluation_settings(version.golden_set).age_buckets or DEFAULT_AGE_BUCKETS
    return slices_of(slice_parts(version), version, buckets)


def slice_label(name: str) -> str:
    """'query:lang=de' -> 'queries lang = de'; 'page:age=0-30d' -> 'pages age = 0-30d'."""
    kind, _, rest = name.partition(":")
    key, _, value = rest.partition("=")
    return f"{'queries' if kind == 'query' else 'pages'} {key} = {value}"


def _as_text(field: str) -> Cast:
    """A JSON column as its text. The snapshot's metadata holds only slice values, so a
    version's tens of thousands of rows share a handful of distinct texts: decoding each
    text once (_slice_names) instead of every row's document is the larger part of cutting
    the slices (bench/recompute.py)."""
    return Cast(field, output_field=TextField())


def _slice_names(kind: str, fields: list[str]) -> Callable[[str], tuple[str, ...]]:
    """A function from a metadata document's JSON text to the names of the `kind` slices
    ("query" or "page") it belongs to, "kind:FIELD=VALUE", decoding each distinct text once."""
    known: dict[str, tuple[str, ...]] = {}

    def names(text: str) -> tuple[str, ...]:
        found = known.get(text)
        if found is None:
            metadata = json.loads(text)
            found = known[text] = tuple(f"{kind}:{field}={metadata[field]}" for field in fields if field in metadata)
        return found

    return names


@dataclass
class SliceQueries:
    """One slice's per-query values inside a PerQuery: `positions` index the PerQuery's
    `query_ids` (the slice's queries, each a query the overall averaged too), and `values`
    holds, per recall metric, the page slice's own per-query values (a page slice recounts
    relevant pages); a query slice has none and reads the overall's values at its positions."""

    positions: np.ndarray
    values: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class PerQuery:
    """Per-query values of an evaluation: query ids, and one float array per metric (fractions).

    `slices` holds every slice's queries (and a page slice's recall values): what the
    paired drop test (evaluation.alerts.noise) compares slice by slice. Evaluations stored
    before it have none, which `slice_values` answers with None."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    answered: np.ndarray
    relevant_counts: np.ndarray
    slices: dict[str, SliceQueries] = field(default_factory=dict)

    def slice_values(self, slice_name: str, metric: str) -> tuple[tuple[str, ...], np.ndarray] | None:
        """(query ids, values of `metric`) of the slice ("" for all queries), aligned; None
        when the blob holds no per-query values for it (an older evaluation, a metric a page
        slice did not store)."""
        if slice_name == "":
            return (self.query_ids, self.values[metric]) if metric in self.values else None
        found = self.slices.get(slice_name)
        if found is None:
            return None
        ids = tuple(self.query_ids[i] for i in found.positions.tolist())
        if slice_name.startswith("page:"):
            return (ids, found.values[metric]) if metric in found.values else None
        return (ids, self.values[metric][found.positions]) if metric in self.values else None

    def to_bytes(self) -> bytes:
        arrays = {f"metric:{name}": array for name, array in self.values.items()}
        # Slice names hold any metadata text, so members are numbered, the names kept apart.
        for number, found in enumerate(self.slices.values()):
            arrays[f"slice{number}:positions"] = found.positions
            arrays |= {f"slice{number}:metric:{metric}": values for metric, values in found.values.items()}
        return npz_bytes(
            {
                "query_ids": _text_bytes(self.query_ids),
                "answered": self.answered,
                "relevant_counts": self.relevant_counts,
                # JSON: a slice name is metadata text and may hold a line break.
                "slice_names": np.frombuffer(json.dumps(list(self.slices)).encode(), dtype=np.uint8),
                **arrays,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> "PerQuery":
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            slice_names = json.loads(stored["slice_names"].tobytes()) if "slice_names" in stored.files else []
            slices = {}
            for number, name in enumerate(slice_names):
                prefix = f"slice{number}:metric:"
                slices[name] = SliceQueries(
                    positions=stored[f"slice{number}:positions"],
                    values={key.removeprefix(prefix): stored[key] for key in stored.files if key.startswith(prefix)},
                )
            return cls(
                query_ids=_text_tuple(stored["query_ids"]),
                values={key.removeprefix("metric:"): stored[key] for key in stored.files if key.startswith("metric:")},
                answered=stored["answered"],
                relevant_counts=stored["relevant_counts"],
                slices=slices,
            )


def _text_bytes(texts: tuple[str, ...]) -> np.ndarray:
    return np.frombuffer("\n".join(texts).encode(), dtype=np.uint8)


def _text_tuple(array: np.ndarray) -> tuple[str, ...]:
    raw = array.tobytes().decode()
    return tuple(raw.split("\n")) if raw else ()


def evaluation_per_query(evaluation: Evaluation) -> PerQuery | None:
    data = Evaluation.objects.filter(pk=evaluation.pk).values_list("per_query", flat=True).get()
    return PerQuery.from_bytes(bytes(data)) if data else None
