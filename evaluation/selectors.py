"""Reads the evaluation needs: runs and their entries, a version's labels and slices as arrays."""

import hashlib
import io
import json
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import numpy as np
from django.db.models import Exists, OuterRef, Q, TextField
from django.db.models.functions import Cast
from django.http import Http404

from evaluation.completeness import pooled_labels
from evaluation.engine import QrelsArrays
from evaluation.metrics import Metric, default_metrics, parse_metrics
from evaluation.models import Evaluation, EvaluationSettings, Run, RunData, RunPooledLabels, VersionScoringInputs
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
    return Exists(Run.objects.filter(
        series=OuterRef(f"{run_path}series"), measured_at__gt=OuterRef(f"{run_path}measured_at"),
    ))


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
    run = Run.objects.filter(golden_set=golden_set, pk=run_id).select_related("uploaded_by", "golden_set", "series", "archived_by", "completed_by").first()
    if run is None:
        raise Http404("no such run")
    return run


def run_ranked(run: Run) -> RankedRun:
    data = _run_data(run.pk)
    if data is None:
        raise Run.DoesNotExist(f"run {run.pk} has no stored entries")
    return RankedRun.from_bytes(data)


def _run_data(run_id: int) -> bytes | None:
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
class _SliceParts:
    """What a version's slices are cut from, whatever the set's age buckets: the query
    and page slices of the snapshotted metadata, and the labelled pages with a publication
    date and that date (microseconds since the epoch, UTC)."""

    query: dict[str, set[str]]
    page: dict[str, np.ndarray]
    dated_pages: np.ndarray
    published_us: np.ndarray


_EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _microseconds(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _slice_parts(version: Version) -> _SliceParts:
    """The version's _SliceParts, from its query and page snapshots (two queries)."""
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
    return _SliceParts(
        query=query, page={name: np.asarray(keys, dtype=np.int64) for name, keys in pages.items()},
        dated_pages=np.asarray(dated_pages, dtype=np.int64), published_us=np.asarray(published, dtype=np.int64),
    )


def _slices_of(parts: _SliceParts, version: Version, buckets: list[int]) -> VersionSlices:
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
        dated_pages=parts.dated_pages, published_at=parts.published_us.astype("datetime64[us]"),
    )


def version_slices(version: Version) -> VersionSlices:
    """Query slices from the snapshotted query metadata; page slices from the snapshotted page
    metadata, plus the age of each labelled page at the version's publish time."""
    buckets = evaluation_settings(version.golden_set).age_buckets or DEFAULT_AGE_BUCKETS
    return _slices_of(_slice_parts(version), version, buckets)


def slice_label(name: str) -> str:
    """'query:lang=de' -> 'queries lang = de'; 'page:age=0-30d' -> 'pages age = 0-30d'."""
    kind, _, rest = name.partition(":")
    key, _, value = rest.partition("=")
    return f"{'queries' if kind == 'query' else 'pages'} {key} = {value}"


def _as_text(field: str) -> Cast:
    """A JSON column as its text. The snapshot's metadata holds only slice values, so a
    version's tens of thousands of rows share a handful of distinct texts: decoding each
    text once (_slice_names) instead of every row's document took the slices from 0.4 s to
    0.1 s at 55,000 pages (bench/recompute.py)."""
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


# A publish scores every run of the set against one version, one task a run, and a
# version never changes: a process keeps what scoring needs of the last versions it scored
# instead of reading and building it again for each run. That was a fifth of the CPU of
# every evaluation after the first at 10,000 queries (bench/recompute.py).
_SCORING_INPUTS: "OrderedDict[tuple, tuple[QrelsArrays, VersionSlices]]" = OrderedDict()
_SCORING_INPUTS_KEPT = 2
_SCORING_INPUTS_LOCK = threading.Lock()


def version_scoring_inputs(version: Version) -> tuple[QrelsArrays, VersionSlices]:
    """The version's labels over all its queries (version_labels, version_query_ids) as
    QrelsArrays, and its slices (version_slices): what evaluation_compute scores a run
    against. Shared by the evaluations of one process: callers must not modify them.

    Kept per process, and stored once built (VersionScoringInputs): a process that starts
    cold reads the stored arrays rather than every label and page snapshot."""
    buckets = evaluation_settings(version.golden_set).age_buckets or DEFAULT_AGE_BUCKETS
    # Hash and publish time as well as the id: SQLite gives a rolled-back version's id out
    # again, and the age slices depend on the settings' buckets, which may change.
    key = (version.pk, version.content_hash, version.created_at, tuple(buckets))
    with _SCORING_INPUTS_LOCK:
        found = _SCORING_INPUTS.get(key)
        if found is not None:
            _SCORING_INPUTS.move_to_end(key)
            return found
    stored = _stored_inputs(version)
    if stored is None:
        qrels = QrelsArrays.from_rows(version_labels(version), query_ids=version_query_ids(version))
        parts = _slice_parts(version)
        _store_inputs(version, qrels, parts)
    else:
        qrels, parts = stored
    found = (qrels, _slices_of(parts, version, buckets))
    with _SCORING_INPUTS_LOCK:
        _SCORING_INPUTS[key] = found
        while len(_SCORING_INPUTS) > _SCORING_INPUTS_KEPT:
            _SCORING_INPUTS.popitem(last=False)
    return found


def _text_array(values) -> np.ndarray:
    return np.frombuffer(json.dumps(list(values)).encode(), dtype=np.uint8)


def _text_list(array: np.ndarray) -> list:
    return json.loads(array.tobytes().decode())


def _store_inputs(version: Version, qrels: QrelsArrays, parts: _SliceParts) -> None:
    """Store the version's inputs (VersionScoringInputs) unless another process did first.
    Query slices are kept as positions in the version's query order; int32 and int8 where
    the values fit, so that the blob is small to read."""
    position = {query_id: i for i, query_id in enumerate(qrels.query_ids)}
    query_names = list(parts.query)
    query_members = [np.sort(np.fromiter((position[q] for q in parts.query[name]), dtype=np.int64)) for name in query_names]
    page_names = list(parts.page)
    fits_int8 = not len(qrels.grades) or (qrels.grades.min() >= -128 and qrels.grades.max() <= 127)
    data = npz_bytes(dict(
        query_ids=_text_array(qrels.query_ids), counts=np.diff(qrels.offsets).astype(np.int32),
        doc_keys=qrels.doc_keys, grades=qrels.grades.astype(np.int8 if fits_int8 else np.int64),
        query_slices=_text_array(query_names),
        query_slice_sizes=np.asarray([len(m) for m in query_members], dtype=np.int64),
        query_slice_members=np.concatenate(query_members).astype(np.int32) if query_members else np.empty(0, np.int32),
        page_slices=_text_array(page_names),
        page_slice_sizes=np.asarray([len(parts.page[name]) for name in page_names], dtype=np.int64),
        page_slice_keys=np.concatenate([parts.page[name] for name in page_names]) if page_names else np.empty(0, np.int64),
        dated_pages=parts.dated_pages, published_us=parts.published_us,
    ))
    # A row of an earlier version with this id (see _stored_inputs) gives way.
    VersionScoringInputs.objects.filter(version=version).exclude(
        content_hash=version.content_hash, version_created_at=version.created_at,
    ).delete()
    VersionScoringInputs.objects.bulk_create([VersionScoringInputs(
        version=version, content_hash=version.content_hash, version_created_at=version.created_at, data=data,
    )], ignore_conflicts=True)


def _stored_inputs(version: Version) -> tuple[QrelsArrays, _SliceParts] | None:
    """The inputs _store_inputs stored for this very version (same hash and publish time), or None."""
    row = VersionScoringInputs.objects.filter(
        version=version, content_hash=version.content_hash, version_created_at=version.created_at,
    ).values_list("data", flat=True).first()
    if row is None:
        return None
    with np.load(io.BytesIO(bytes(row)), allow_pickle=False) as stored:
        query_ids = tuple(_text_list(stored["query_ids"]))
        offsets = np.concatenate(([0], np.cumsum(stored["counts"], dtype=np.int64)))
        qrels = QrelsArrays(
            query_ids=query_ids, offsets=offsets, doc_keys=stored["doc_keys"], grades=stored["grades"].astype(np.int64),
        )
        members = np.split(stored["query_slice_members"], np.cumsum(stored["query_slice_sizes"])[:-1])
        query = {name: {query_ids[i] for i in m.tolist()} for name, m in zip(_text_list(stored["query_slices"]), members)}
        keys = np.split(stored["page_slice_keys"], np.cumsum(stored["page_slice_sizes"])[:-1])
        page = dict(zip(_text_list(stored["page_slices"]), keys))
        parts = _SliceParts(query=query, page=page, dated_pages=stored["dated_pages"], published_us=stored["published_us"])
    return qrels, parts


@dataclass
class PerQuery:
    """Per-query values of an evaluation: query ids, and one float array per metric (fractions)."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    answered: np.ndarray
    relevant_counts: np.ndarray

    def to_bytes(self) -> bytes:
        arrays = {f"metric:{name}": array for name, array in self.values.items()}
        return npz_bytes({
            "query_ids": np.frombuffer("\n".join(self.query_ids).encode(), dtype=np.uint8),
            "answered": self.answered, "relevant_counts": self.relevant_counts, **arrays,
        })

    @classmethod
    def from_bytes(cls, data: bytes) -> "PerQuery":
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            raw = stored["query_ids"].tobytes().decode()
            return cls(
                query_ids=tuple(raw.split("\n")) if raw else (),
                values={key.removeprefix("metric:"): stored[key] for key in stored.files if key.startswith("metric:")},
                answered=stored["answered"], relevant_counts=stored["relevant_counts"],
            )


def evaluation_per_query(evaluation: Evaluation) -> PerQuery | None:
    data = Evaluation.objects.filter(pk=evaluation.pk).values_list("per_query", flat=True).get()
    return PerQuery.from_bytes(bytes(data)) if data else None


def labels_pooled_by_others(
    version: Version, qrels: QrelsArrays, *, exclude_system: str, depth: int, own_run_id: int | None = None,
) -> tuple[np.ndarray, int]:
    """(one bool per label of `qrels`, True where a run of another system than
    `exclude_system` has the label's page in its top `depth`; how many such runs there are):
    the pool a run of `exclude_system` is left out of (evaluation.completeness).

    `qrels` must be the version's labels as evaluation_compute builds them. What a run
    pools is kept per process (_POOLED_CACHE) and stored for the other processes
    (RunPooledLabels): the runs are read, then what is stored, and only a run found in
    neither is decoded, one at a time, after one more look at what is stored. `own_run_id`,
    the run whose pool this is, sets the order they are decoded in (see below).
    """
    fingerprint = hashlib.blake2b(qrels.doc_keys.tobytes() + qrels.offsets.tobytes(), digest_size=16).hexdigest()
    # Keyed by upload time as well as id: an id that a rolled-back transaction gave out
    # (SQLite reuses them) must not find another run's figures.
    keys = {
        run_id: (run_id, created_at.isoformat(), version.id, fingerprint, depth)
        for run_id, created_at in Run.objects.filter(golden_set_id=version.golden_set_id).exclude(system=exclude_system)
        .order_by("created_at", "id").values_list("id", "created_at")
    }
    with _POOLED_LOCK:
        found = {run_id: _POOLED_CACHE[key] for run_id, key in keys.items() if key in _POOLED_CACHE}
    missing = [run_id for run_id in keys if run_id not in found]
    if missing:
        found.update(_stored_pooled(version, depth, fingerprint, missing))
        unread = [run_id for run_id in missing if run_id not in found]
        # The worker's processes start a re-score at once and each needs every other
        # system's runs: each goes through them in an order of its own, and takes what
        # another has stored meanwhile, so that between them each run is decoded about once.
        # A re-score sends the runs in id order, so the processes start on neighbouring
        # runs: going round from its own run, up from an even place and down from an odd
        # one, two neighbours walk opposite ways and meet once, where two shuffles met
        # about a third of the time (27 decodes for 19 runs at bench/recompute.py's size).
        if own_run_id is None:
            random.Random(os.getpid()).shuffle(unread)
        else:
            place = sum(1 for run_id in keys if run_id < own_run_id)
            unread.sort(key=lambda run_id: (run_id < own_run_id, run_id))
            if place % 2:
                unread.reverse()
        for run_id in unread:
            labels = _stored_pooled(version, depth, fingerprint, [run_id]).get(run_id)
            if labels is None:
                data = _run_data(run_id)
                if data is None:  # a run whose data is not stored yet has nothing to pool
                    continue
                labels = pooled_labels(qrels, RankedRun.from_bytes(data), depth)
                _store_pooled(run_id, version, depth, fingerprint, labels)
            found[run_id] = labels
        with _POOLED_LOCK:
            for run_id in missing:
                if run_id in found:
                    _pooled_cache_put(keys[run_id], found[run_id])
    pooled = np.zeros(len(qrels.doc_keys), dtype=bool)
    for labels in found.values():
        pooled[labels] = True
    return pooled, len(found)


def _stored_pooled(version: Version, depth: int, fingerprint: str, run_ids: list[int]) -> dict[int, np.ndarray]:
    """{run id: labels} of the RunPooledLabels stored for `run_ids` on the version."""
    rows = RunPooledLabels.objects.filter(version=version, depth=depth, fingerprint=fingerprint, run_id__in=run_ids)
    return {
        found_run: np.load(io.BytesIO(bytes(data)), allow_pickle=False) for found_run, data in rows.values_list("run_id", "labels")
    }


def _store_pooled(run_id: int, version: Version, depth: int, fingerprint: str, labels: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, labels.astype(np.int32 if len(labels) and labels[-1] < 2**31 else np.int64), allow_pickle=False)
    RunPooledLabels.objects.bulk_create([RunPooledLabels(
        run_id=run_id, version=version, depth=depth, fingerprint=fingerprint, labels=buffer.getvalue(),
    )], ignore_conflicts=True)


# What a run pooled on a version (pooled_labels) never changes: runs are immutable once
# uploaded and versions once published. A version's re-score fans out one task per run and
# each pools against all the others, so without this a worker (or the `evaluate` command,
# which scores every run in one process) would decode each run once per other run; with
# it, once per process and version. The arrays are small (a run's labelled pages), so the
# bound, in labels, holds a few versions of a large set.
_POOLED_CACHE: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_POOLED_CACHE_MAX_LABELS = 20_000_000
_POOLED_LOCK = threading.Lock()


def _pooled_cache_put(key: tuple, labels: np.ndarray) -> None:
    """Keep `labels` under `key`, dropping the least recently stored past the bound."""
    _POOLED_CACHE[key] = labels
    _POOLED_CACHE.move_to_end(key)
    while len(_POOLED_CACHE) > 1 and sum(len(found) for found in _POOLED_CACHE.values()) > _POOLED_CACHE_MAX_LABELS:
        _POOLED_CACHE.popitem(last=False)
