"""What each run pools on a version (which labels of the version its top `depth` holds),
kept per process and stored once built (RunPooledLabels), for leave-one-run-out.

When it is rebuilt: never, for a given run, version, depth and labels fingerprint, since
runs are immutable once uploaded and versions once published. A process decodes a run the
first time a completeness figure needs what it pools there, unless another process stored
it already, and then stores it; an id a rolled-back transaction gave out again finds
nothing, as the key holds the run's upload time. The process keeps up to
_POOLED_CACHE_MAX_LABELS labels, dropping the least recently stored. `forget` drops what
this process holds."""

import hashlib
import io
import os
import random
import threading
from collections import OrderedDict

import numpy as np

from evaluation import chunk_inputs
from evaluation.completeness import pooled_labels
from evaluation.engine import QrelsArrays
from evaluation.models import Run, RunPooledLabels
from evaluation.selectors import run_data
from goldenset.models import Chunking, Version
from lib.runs import RankedRun


def get_or_build(
    version: Version,
    qrels: QrelsArrays,
    *,
    exclude_system: str,
    depth: int,
    own_run_id: int | None = None,
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
    rows = (
        Run.objects.filter(golden_set_id=version.golden_set_id)
        .exclude(system=exclude_system)
        .order_by("created_at", "id")
        .values_list("id", "created_at", "chunking_id")
    )
    keys, chunking_of = {}, {}
    for run_id, created_at, chunking_id in rows:
        keys[run_id] = (run_id, created_at.isoformat(), version.id, fingerprint, depth)
        chunking_of[run_id] = chunking_id
    chunkings = Chunking.objects.in_bulk({c for c in chunking_of.values() if c is not None})
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
                data = run_data(run_id)
                if data is None:  # a run whose data is not stored yet has nothing to pool
                    continue
                # A run of a chunking pools the documents of its chunks (its document level).
                ranked = chunk_inputs.documents_pooled(
                    ranked=RankedRun.from_bytes(data), version=version, chunking=chunkings.get(chunking_of[run_id]), depth=depth
                )
                labels = pooled_labels(qrels, ranked, depth)
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
    return {found_run: np.load(io.BytesIO(bytes(data)), allow_pickle=False) for found_run, data in rows.values_list("run_id", "labels")}


def _store_pooled(run_id: int, version: Version, depth: int, fingerprint: str, labels: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, labels.astype(np.int32 if len(labels) and labels[-1] < 2**31 else np.int64), allow_pickle=False)
    RunPooledLabels.objects.bulk_create(
        [
            RunPooledLabels(
                run_id=run_id,
                version=version,
                depth=depth,
                fingerprint=fingerprint,
                labels=buffer.getvalue(),
            )
        ],
        ignore_conflicts=True,
    )


# A version's re-score fans out one task per run and each pools against all the others:
# without this a worker (or the `evaluate` command, which scores every run in one process)
# would decode each run once per other run; with it, once per process and version. The
# arrays are small (a run's labelled pages), so the bound, in labels, holds a few versions
# of a large set.
_POOLED_CACHE: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_POOLED_CACHE_MAX_LABELS = 20_000_000
_POOLED_LOCK = threading.Lock()


def _pooled_cache_put(key: tuple, labels: np.ndarray) -> None:
    """Keep `labels` under `key`, dropping the least recently stored past the bound."""
    _POOLED_CACHE[key] = labels
    _POOLED_CACHE.move_to_end(key)
    while len(_POOLED_CACHE) > 1 and sum(len(found) for found in _POOLED_CACHE.values()) > _POOLED_CACHE_MAX_LABELS:
        _POOLED_CACHE.popitem(last=False)


def forget() -> None:
    """Drop what this process holds (the next use reads what was stored)."""
    with _POOLED_LOCK:
        _POOLED_CACHE.clear()
