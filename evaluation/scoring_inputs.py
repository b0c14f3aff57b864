"""The arrays a version is scored against (its labels as QrelsArrays and its slices),
kept per process and stored once built (VersionScoringInputs).

When it is rebuilt: never for a version as published, which never changes. A process
builds a version's inputs the first time it scores against it, from the stored blob when
another process stored one, else from the labels and snapshots (and then stores them); it
keeps the last _SCORING_INPUTS_KEPT versions it used. A blob is taken only by the version
it was stored for (same id, content hash and publish time: SQLite gives a rolled-back
version's id out again), and the age slices are cut again whenever the set's age buckets
change, as they are part of the key. `forget` drops what this process holds."""

import io
import json
import threading
from collections import OrderedDict

import numpy as np

from evaluation.engine import QrelsArrays
from evaluation.models import VersionScoringInputs
from evaluation.selectors import (
    DEFAULT_AGE_BUCKETS,
    SliceParts,
    VersionSlices,
    evaluation_settings,
    slice_parts,
    slices_of,
    version_labels,
    version_query_ids,
)
from goldenset.models import Version
from lib.runs import npz_bytes

# A publish scores every run of the set against one version, one task a run: kept, the
# inputs are not read and built again for each run (a fifth of the CPU of every evaluation
# after the first at 10,000 queries, bench/recompute.py).
_SCORING_INPUTS: "OrderedDict[tuple, tuple[QrelsArrays, VersionSlices]]" = OrderedDict()
_SCORING_INPUTS_KEPT = 2
_SCORING_INPUTS_LOCK = threading.Lock()


def get_or_build(version: Version) -> tuple[QrelsArrays, VersionSlices]:
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
        parts = slice_parts(version)
        _store_inputs(version, qrels, parts)
    else:
        qrels, parts = stored
    found = (qrels, slices_of(parts, version, buckets))
    with _SCORING_INPUTS_LOCK:
        _SCORING_INPUTS[key] = found
        while len(_SCORING_INPUTS) > _SCORING_INPUTS_KEPT:
            _SCORING_INPUTS.popitem(last=False)
    return found


def forget() -> None:
    """Drop the inputs this process holds (the next use reads the stored blob)."""
    with _SCORING_INPUTS_LOCK:
        _SCORING_INPUTS.clear()


def _text_array(values) -> np.ndarray:
    return np.frombuffer(json.dumps(list(values)).encode(), dtype=np.uint8)


def _text_list(array: np.ndarray) -> list:
    return json.loads(array.tobytes().decode())


def _store_inputs(version: Version, qrels: QrelsArrays, parts: SliceParts) -> None:
    """Store the version's inputs (VersionScoringInputs) unless another process did first.
    Query slices are kept as positions in the version's query order; int32 and int8 where
    the values fit, so that the blob is small to read."""
    position = {query_id: i for i, query_id in enumerate(qrels.query_ids)}
    query_names = list(parts.query)
    query_members = [np.sort(np.fromiter((position[q] for q in parts.query[name]), dtype=np.int64)) for name in query_names]
    page_names = list(parts.page)
    fits_int8 = not len(qrels.grades) or (qrels.grades.min() >= -128 and qrels.grades.max() <= 127)
    data = npz_bytes(
        dict(
            query_ids=_text_array(qrels.query_ids),
            counts=np.diff(qrels.offsets).astype(np.int32),
            doc_keys=qrels.doc_keys,
            grades=qrels.grades.astype(np.int8 if fits_int8 else np.int64),
            query_slices=_text_array(query_names),
            query_slice_sizes=np.asarray([len(m) for m in query_members], dtype=np.int64),
            query_slice_members=np.concatenate(query_members).astype(np.int32) if query_members else np.empty(0, np.int32),
            page_slices=_text_array(page_names),
            page_slice_sizes=np.asarray([len(parts.page[name]) for name in page_names], dtype=np.int64),
            page_slice_keys=np.concatenate([parts.page[name] for name in page_names]) if page_names else np.empty(0, np.int64),
            dated_pages=parts.dated_pages,
            published_us=parts.published_us,
        )
    )
    # A row of an earlier version with this id (see _stored_inputs) gives way.
    VersionScoringInputs.objects.filter(version=version).exclude(
        content_hash=version.content_hash,
        version_created_at=version.created_at,
    ).delete()
    VersionScoringInputs.objects.bulk_create(
        [
            VersionScoringInputs(
                version=version,
                content_hash=version.content_hash,
                version_created_at=version.created_at,
                data=data,
            )
        ],
        ignore_conflicts=True,
    )


def _stored_inputs(version: Version) -> tuple[QrelsArrays, SliceParts] | None:
    """The inputs _store_inputs stored for this very version (same hash and publish time), or None."""
    row = (
        VersionScoringInputs.objects.filter(
            version=version,
            content_hash=version.content_hash,
            version_created_at=version.created_at,
        )
        .values_list("data", flat=True)
        .first()
    )
    if row is None:
        return None
    with np.load(io.BytesIO(bytes(row)), allow_pickle=False) as stored:
        query_ids = tuple(_text_list(stored["query_ids"]))
        offsets = np.concatenate(([0], np.cumsum(stored["counts"], dtype=np.int64)))
        qrels = QrelsArrays(
            query_ids=query_ids,
            offsets=offsets,
            doc_keys=stored["doc_keys"],
            grades=stored["grades"].astype(np.int64),
        )
        members = np.split(stored["query_slice_members"], np.cumsum(stored["query_slice_sizes"])[:-1])
        query = {name: {query_ids[i] for i in m.tolist()} for name, m in zip(_text_list(stored["query_slices"]), members)}
        keys = np.split(stored["page_slice_keys"], np.cumsum(stored["page_slice_sizes"])[:-1])
        page = dict(zip(_text_list(stored["page_slices"]), keys))
        parts = SliceParts(query=query, page=page, dated_pages=stored["dated_pages"], published_us=stored["published_us"])
    return qrels, parts
