"""A version's labels on a chunking, as TREC exports them and scoring reads them
(SEMANTICS.md, "Chunk level"): the chunking's chunks as arrays, the version's spans, and
the projection of its labels (lib.levels.project_labels, the one rule).

A chunking's table is kept per process and rebuilt when its chunk count changes (chunks
are only added); `forget` drops it."""

import threading
from collections import OrderedDict

import numpy as np

from goldenset.models import Chunk, Chunking, Version, VersionLabel, VersionSpan
from lib import levels
from lib.bulk import select_int_rows
from lib.errors import GoldsetError
from lib.ids import natural_key

_TABLES_KEPT = 2
_TABLES: "OrderedDict[tuple, levels.ChunkTable]" = OrderedDict()
_TABLES_LOCK = threading.Lock()


def forget() -> None:
    with _TABLES_LOCK:
        _TABLES.clear()


def chunking_named(corpus_id: int, name: str | None) -> Chunking | None:
    """The corpus's chunking `name`; None for the implicit "documents" chunking (or no name).
    GoldsetError naming it when the corpus has no such chunking."""
    name = (name or "").strip()
    if not name or name == Chunking.DOCUMENTS:
        return None
    found = Chunking.objects.filter(corpus_id=corpus_id, name=name).first()
    if found is None:
        known = list(Chunking.objects.filter(corpus_id=corpus_id).values_list("name", flat=True))
        choices = ", ".join([Chunking.DOCUMENTS, *known])
        raise GoldsetError(f"unknown chunking {name!r}: the corpus has {choices}", field="chunking")
    return found


def chunk_table(chunking: Chunking) -> levels.ChunkTable:
    """The chunking's chunks as a lib.levels.ChunkTable (kept per process)."""
    key = (chunking.pk, chunking.written_at, chunking.chunk_count)
    with _TABLES_LOCK:
        found = _TABLES.get(key)
        if found is not None:
            _TABLES.move_to_end(key)
            return found
    data = select_int_rows(Chunk.objects.filter(chunking=chunking).values_list("id", "page_id", "start", "end"))
    data = data[np.argsort(data[:, 0])]
    found = levels.ChunkTable(keys=data[:, 0].copy(), pages=data[:, 1].copy(), starts=data[:, 2].copy(), ends=data[:, 3].copy())
    with _TABLES_LOCK:
        _TABLES[key] = found
        while len(_TABLES) > _TABLES_KEPT:
            _TABLES.popitem(last=False)
    return found


def version_span_arrays(version: Version, positions: dict[str, int]) -> tuple[np.ndarray, ...]:
    """The version's evidence spans as int64 arrays (query, page key, start, end, grade),
    each query numbered by `positions` (query id -> number)."""
    if not version.span_count:
        return tuple(np.empty(0, np.int64) for _ in range(5))
    rows = VersionSpan.objects.filter(version=version).values_list("query__query_id", "page_id", "start", "end", "grade")
    spans = [(positions[query_id], page, start, end, grade) for query_id, page, start, end, grade in rows.iterator(chunk_size=50_000)]
    data = np.asarray(spans, dtype=np.int64).reshape(-1, 5)
    return tuple(data[:, i].copy() for i in range(5))


def project(
    version: Version,
    chunking: Chunking,
    label_queries: np.ndarray,
    label_pages: np.ndarray,
    label_grades: np.ndarray,
    positions: dict[str, int],
    spans: tuple[np.ndarray, ...] | None = None,
) -> tuple[levels.ChunkTable, levels.Projection]:
    """The version's labels (queries numbered by `positions`) projected onto `chunking` with
    the version's overlap settings. `spans`: version_span_arrays(version, positions), when
    the caller read them already."""
    spans = version_span_arrays(version, positions) if spans is None else spans
    span_queries, span_pages, span_starts, span_ends, span_grades = spans
    table = chunk_table(chunking)
    projection = levels.project_labels(
        label_queries=label_queries,
        label_pages=label_pages,
        label_grades=label_grades,
        span_queries=span_queries,
        span_pages=span_pages,
        span_starts=span_starts,
        span_ends=span_ends,
        span_grades=span_grades,
        chunks=table,
        min_chars=version.span_min_overlap_chars,
        min_share=version.span_min_overlap_share,
    )
    return table, projection


def version_chunk_label_rows(version: Version, chunking: Chunking) -> list[tuple[str, str, int]]:
    """(query_id, chunk_id, grade) of the version's labels projected onto `chunking`, in
    natural order of query id, then chunk id: the qrels that score a run of the chunking
    at chunk level exactly as Goldset does."""
    rows = list(VersionLabel.objects.filter(version=version).values_list("query__query_id", "page_id", "grade").iterator(chunk_size=50_000))
    positions: dict[str, int] = {}
    for query_id, _, _ in rows:
        positions.setdefault(query_id, len(positions))
    labels = np.asarray([(positions[q], page, grade) for q, page, grade in rows], dtype=np.int64).reshape(-1, 3)
    table, projection = project(version, chunking, labels[:, 0], labels[:, 1], labels[:, 2], positions)
    query_ids = list(positions)
    chunk_keys = table.keys[projection.chunk_rows]
    names = dict(Chunk.objects.filter(chunking=chunking).values_list("id", "chunk_id").iterator(chunk_size=100_000))
    out = [
        (query_ids[q], names[key], grade)
        for q, key, grade in zip(labels[projection.label_rows, 0].tolist(), chunk_keys.tolist(), projection.grades.tolist())
    ]
    out.sort(key=lambda row: (natural_key(row[0]), natural_key(row[1])))
    return out
