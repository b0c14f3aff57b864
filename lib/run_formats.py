"""Run files in the forms retrieval teams have them, read into the one `RunEntries` shape.

`read_run(data, source, problems, fmt="auto")` is the single entry point: `data` is a binary
stream (an UploadedFile, an open file, sys.stdin.buffer) or an iterable of bytes chunks.
The form is named (`fmt`) or found from the content by `detect_run_format`:

| form | what it holds | found by |
| --- | --- | --- |
| `trec` | `query_id Q0 doc_id rank score tag`, exactly 6 columns, an optional header line | the default for text |
| `tsv` | MS MARCO `qid<TAB>docid<TAB>rank` | the first data line has 3 columns |
| `json` | ranx's JSON and BEIR's results JSON, both `{query_id: {doc_id: score}}` | text opening with `{` that is not JSONL |
| `jsonl` | one `{"query_id", "doc_id", "score"}` object a line (other keys ignored) | the first line is such an object |
| `parquet` | ranx's `Run.save("run.parquet")`: columns `q_id` (or `query_id`), `doc_id`, `score` | `PAR1` magic bytes |
| `lz4` | ranx's `Run.save("run.lz4")`: LZ4 frame around an LZ4 frame of CBOR `{q: {d: score}}` | LZ4 frame magic bytes |

gzip of any text form is undone first, whatever `fmt` says (its magic bytes are checked).

Compressed forms (gzip, LZ4, parquet) are held to an `ExpansionLimit`: what decompression
produces is counted as it comes out and refused (TooLargeError, 413) past `ratio` times the
compressed bytes read so far (a floor lets small files expand freely) or past `ceiling_bytes`
whatever the ratio, so a 19 KB file cannot become 2 GB in the worker. A parquet file's rows
are priced from its footer before any page is read, since its reader allocates every row
the footer announces.
MS MARCO ranks become scores as `score = -rank`, so trec_eval's order (score descending)
is the rank order; a rank given twice for one query would be a tie and is refused.

Every form keeps the rules of lib.runs.read_trec_run: all or nothing (the caller refuses the
file when `problems` is non-empty), each problem naming its line, row or JSON key path, ids
checked by lib.ids.id_problem and never split or altered, a doc once per query, query ids
limited to `known_query_ids` when given.
"""

import gzip
import io
import json
import math
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import orjson

from lib.errors import GoldsetError, ProblemCollector, TooLargeError
from lib.ids import id_problem
from lib.runs import RunEntries, check_duplicates, read_trec_run

RUN_FORMATS = ("auto", "trec", "tsv", "json", "beir", "jsonl", "parquet", "lz4")
FORMAT_HELP = (
    "auto (found from the content), trec, tsv (MS MARCO qid docid rank), json (ranx), beir (BEIR results JSON, "
    "the same shape), jsonl, parquet, lz4 (ranx); gzip of any of them is recognised by itself"
)
_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_HEAD = 64 * 1024
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ExpansionLimit:
    """How far decompression may go: past `ratio` times the compressed bytes read (but for
    the first `floor_bytes`) or past `ceiling_bytes`, reading stops with TooLargeError.
    Real runs compress 3-20 times; 100 is Apache POI's default bound on zip entries."""

    ratio: int = 100
    floor_bytes: int = 8 << 20
    ceiling_bytes: int = 1 << 30
    setting: str = "RUN_MAX_EXPANDED_MB"  # named in the refusal, for whoever may raise the ceiling

    def check(self, source: str, compressed: int, expanded: int) -> None:
        if expanded > self.ceiling_bytes:
            raise TooLargeError(
                f"cannot import run {source}: it expands past {self.ceiling_bytes // (1 << 20):,} MB once decompressed "
                f"(the limit, {self.setting}); nothing was stored",
                field="file",
            )
        if expanded > max(self.floor_bytes, self.ratio * compressed):
            raise TooLargeError(
                f"cannot import run {source}: it expands more than {self.ratio} times its compressed size "
                f"({compressed:,} bytes to over {expanded:,}), the limit for compressed runs; nothing was stored",
                field="file",
            )


class _ChunkReader(io.RawIOBase):
    """An iterable of bytes chunks as a readable raw stream (for io.BufferedReader);
    `consumed` counts the bytes handed out."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks: Iterator[bytes] = iter(chunks)
        self._pending = memoryview(b"")
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not len(self._pending):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        self.consumed += count
        return count


class _CountingReader:
    """What a decompressor reads from `inner`, counted (`consumed`): the compressed side of
    the ratio, read by gzip 128 KB at a time, so a bomb stops within a few MB of its start."""

    def __init__(self, inner: io.BufferedReader):
        self._inner = inner
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(size)
        self.consumed += len(data)
        return data


class _ExpansionGuard(io.RawIOBase):
    """A decompressing stream whose output is checked against an ExpansionLimit as it is read."""

    def __init__(self, inner: BinaryIO, source: str, compressed: _CountingReader, limit: ExpansionLimit):
        self._inner, self._source, self._compressed, self._limit = inner, source, compressed, limit
        self.expanded = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._inner.readinto(buffer)
        self.expanded += count
        self._limit.check(self._source, self._compressed.consumed, self.expanded)
        return count


def _chunk_reader(data: BinaryIO | Iterable[bytes]) -> _ChunkReader:
    if hasattr(data, "chunks"):  # a Django UploadedFile: its chunks() stream a temporary file or memory
        data = data.chunks(_CHUNK)
    elif hasattr(data, "read"):
        reader = data
        data = iter(lambda: reader.read(_CHUNK), b"")
    return _ChunkReader(data)


def _head(stream: io.BufferedReader) -> bytes:
    head = stream.peek(_HEAD)
    return head[:_HEAD]


def detect_run_format(head: bytes) -> str:
    """The form of a run whose (ungzipped) content starts with `head`: one of RUN_FORMATS but auto."""
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    if head.startswith(_LZ4_FRAME_MAGIC):
        return "lz4"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("{"):
            try:
                record = json.loads(stripped)
            except (ValueError, RecursionError):  # nested past Python's stack: reported by the reader
                record = None
            if isinstance(record, dict) and ("query_id" in record or "doc_id" in record):
                return "jsonl"
            if record is None and '"query_id"' in stripped and stripped.endswith("}"):
                return "jsonl"  # a JSONL record with a fault of its own: reported by its line
            return "json"
        return "tsv" if len(stripped.split()) == 3 else "trec"
    return "trec"  # nothing but blanks and comments: the TREC reader says the file is empty


def read_run(
    data: BinaryIO | Iterable[bytes],
    source: str,
    problems: ProblemCollector,
    *,
    fmt: str = "auto",
    known_query_ids: Collection[str] | None = None,
    progress: Callable[[Iterable, str], Iterable] | None = None,
    limit: ExpansionLimit = ExpansionLimit(),
) -> RunEntries:
    """Read a run in any form of the module docstring, adding every fault to `problems`.

    Raises GoldsetError (field "format") for an unknown `fmt`, and for a file that cannot be
    read at all (bytes that are not UTF-8 naming the line, a broken gzip, parquet or LZ4
    stream); TooLargeError for a compressed file past `limit`. `progress(lines, label)`
    wraps the lines of text forms, for a progress bar.
    """
    if fmt not in RUN_FORMATS:
        raise GoldsetError(f"unknown run format {fmt!r}; choose one of {', '.join(RUN_FORMATS)}", field="format")
    raw = _chunk_reader(data)
    stream = io.BufferedReader(raw, _CHUNK)
    if _head(stream).startswith(_GZIP_MAGIC):
        compressed = _CountingReader(stream)
        stream = io.BufferedReader(_ExpansionGuard(gzip.GzipFile(fileobj=compressed, mode="rb"), source, compressed, limit), _CHUNK)
    try:
        if fmt == "auto":
            fmt = detect_run_format(_head(stream))
        if fmt in ("trec", "tsv", "jsonl"):
            lines = _text_lines(stream, source)
            if progress is not None:
                lines = progress(lines, f"reading {source}")
            if fmt == "trec":
                return read_trec_run(lines, source, problems, known_query_ids=known_query_ids)
            records = _tsv_records(lines, source, problems) if fmt == "tsv" else _jsonl_records(lines, source, problems)
            entries = _collect(records, source, problems, known_query_ids, lambda n: f"{source}:{n}")
            if fmt == "tsv":
                _check_rank_ties(entries, problems)
            return entries
        content = stream.read()
        if fmt in ("json", "beir"):
            return _read_json_object(content, source, problems, known_query_ids)
        if fmt == "lz4":
            return _read_lz4(content, source, problems, known_query_ids, lambda expanded: limit.check(source, raw.consumed, expanded))
        return _read_parquet(content, source, problems, known_query_ids, lambda expanded: limit.check(source, raw.consumed, expanded))
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise GoldsetError(f"cannot read run {source}: {exc}; nothing was stored", problems=[f"{source}: {exc}"], field="file") from exc


def _text_lines(stream: io.BufferedReader, source: str) -> Iterator[str]:
    for number, raw in enumerate(stream, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GoldsetError(
                f"cannot import run {source}: it is not UTF-8 text; nothing was stored",
                problems=[f"{source}:{number}: bytes that are not UTF-8 ({exc.reason})"],
                field="file",
            ) from exc


Record = tuple[int, object, object, object]  # (line, row or entry number; query id; doc id; score)


def _tsv_records(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[Record]:
    """MS MARCO `qid docid rank` lines as records scored -rank; a first line whose rank is not a
    number is its header."""
    header_allowed = True
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = raw.lstrip("\ufeff")
        parts = raw.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 3:
            hint = " (an id cannot hold whitespace)" if len(parts) > 3 else ""
            problems.add(f"{source}:{number}: expected 3 columns 'qid docid rank', found {len(parts)}{hint}: {raw.strip()[:80]!r}")
            header_allowed = False
            continue
        query_id, doc_id, raw_rank = parts
        if not (raw_rank.isascii() and raw_rank.isdigit() and int(raw_rank) >= 1):
            if header_allowed and not raw_rank.lstrip("-").isdigit():
                header_allowed = False
                continue
            problems.add(f"{source}:{number}: rank {raw_rank!r} is not a whole number from 1")
            continue
        header_allowed = False
        yield number, query_id, doc_id, -float(int(raw_rank))


def _jsonl_records(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[Record]:
    loads = orjson.loads  # three times json's speed on a million small records; as strict (no NaN)
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = raw.lstrip("\ufeff")
        if not raw.strip():
            continue
        try:
            record = loads(raw)
        except ValueError as exc:
            problems.add(f"{source}:{number}: not a JSON object ({exc})")
            continue
        if not isinstance(record, dict):
            problems.add(f"{source}:{number}: expected a JSON object with query_id, doc_id and score")
            continue
        try:
            yield number, record["query_id"], record["doc_id"], record["score"]
        except KeyError as exc:
            problems.add(f"{source}:{number}: the record has no {exc.args[0]!r} (it needs query_id, doc_id and score)")


def _collect(
    records: Iterable[Record],
    source: str,
    problems: ProblemCollector,
    known_query_ids: Collection[str] | None,
    place: Callable[[int], str],
) -> RunEntries:
    """RunEntries from records, with read_trec_run's checks; `place(number)` names a record."""
    known = None if known_query_ids is None else frozenset(known_query_ids)
    query_positions: dict[str, int] = {}
    doc_positions: dict[str, int] = {}
    query_index: list[int] = []
    doc_index: list[int] = []
    scores: list[float] = []
    numbers: list[int] = []
    unknown: dict[str, list[int]] = {}
    isfinite = math.isfinite
    for number, query_id, doc_id, score in records:
        q = query_positions.get(query_id) if type(query_id) is str else None
        if q is None:
            bad = _id_fault(query_id, "query id")
            if bad:
                problems.add(f"{place(number)}: {bad}")
                continue
        d = doc_positions.get(doc_id) if type(doc_id) is str else None
        if d is None:
            bad = _id_fault(doc_id, "doc id")
            if bad:
                problems.add(f"{place(number)}: {bad}")
                continue
        if type(score) not in (float, int) or not isfinite(score):
            problems.add(f"{place(number)}: score {score!r} is not a finite number")
            continue
        if q is None:
            if known is not None and query_id not in known:
                seen = unknown.get(query_id)
                if seen is None:
                    unknown[query_id] = [number, 1]
                else:
                    seen[1] += 1
                continue
            q = query_positions[query_id] = len(query_positions)
        if d is None:
            d = doc_positions[doc_id] = len(doc_positions)
        query_index.append(q)
        doc_index.append(d)
        scores.append(float(score))
        numbers.append(number)
    entries = RunEntries(
        source=source,
        query_ids=list(query_positions),
        doc_ids=list(doc_positions),
        query_index=np.asarray(query_index, dtype=np.int64),
        doc_index=np.asarray(doc_index, dtype=np.int64),
        scores=np.asarray(scores, dtype=np.float64),
        line_numbers=np.asarray(numbers, dtype=np.int64),
        run_tags=(),
        extra_column_lines=0,
    )
    check_duplicates(entries, problems, place)
    for query_id, (first, count) in unknown.items():
        word = "entry" if count == 1 else "entries"
        problems.add(f"{place(first)}: query id {query_id!r} is not in the golden set ({count} {word} from here on)")
    if not len(entries) and not problems:
        problems.add(f"{source}: no run entries found")
    return entries


def _id_fault(value: object, what: str) -> str | None:
    if type(value) is not str:
        return f"{what} {value!r} is not a string"
    return id_problem(value, what)


def _check_rank_ties(entries: RunEntries, problems: ProblemCollector) -> None:
    """A rank twice for one query of an MS MARCO run: two docs tied, an order the file does not give."""
    if len(entries) < 2:
        return
    pair = np.stack((entries.query_index, entries.scores))
    order = np.lexsort(pair[::-1])
    same = (np.diff(entries.query_index[order]) == 0) & (np.diff(entries.scores[order]) == 0)
    for i in np.flatnonzero(same)[:100]:
        first, row = sorted((order[i], order[i + 1]))
        problems.add(
            f"{entries.source}:{entries.line_numbers[row]}: rank {int(-entries.scores[row])} is given twice for query "
            f"{entries.query_ids[entries.query_index[row]]!r} (first on line {entries.line_numbers[first]})"
        )


def _json_path(query_id: object, doc_id: object | None = None) -> str:
    path = f"[{json.dumps(query_id, ensure_ascii=False)}]"
    return path if doc_id is None else path + f"[{json.dumps(doc_id, ensure_ascii=False)}]"


def _mapping_records(
    run: object,
    source: str,
    problems: ProblemCollector,
    paths: list[tuple[object, object]],
) -> Iterator[Record]:
    """Records of a `{query_id: {doc_id: score}}` mapping; entry n's key path is paths[n - 1]."""
    if not isinstance(run, dict):
        problems.add(f"{source}: expected an object {{query_id: {{doc_id: score}}}}, found {type(run).__name__}")
        return
    for query_id, ranking in run.items():
        if not isinstance(ranking, dict):
            problems.add(f"{source}: {_json_path(query_id)}: expected an object {{doc_id: score}}, found {type(ranking).__name__}")
            continue
        for doc_id, score in ranking.items():
            paths.append((query_id, doc_id))
            yield len(paths), query_id, doc_id, score


def _pairs_refusing_repeats(source: str, problems: ProblemCollector):
    """json object_pairs_hook: a key given twice would silently keep only its last value."""

    def hook(pairs):
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set = set()
            for key, _ in pairs:
                if key in seen:
                    problems.add(f"{source}: key {json.dumps(key, ensure_ascii=False)} appears twice in one object")
                seen.add(key)
        return result

    return hook


def _read_mapping(run: object, source: str, problems: ProblemCollector, known: Collection[str] | None) -> RunEntries:
    paths: list[tuple[object, object]] = []
    records = _mapping_records(run, source, problems, paths)
    return _collect(records, source, problems, known, lambda n: f"{source}: {_json_path(*paths[n - 1])}")


def _read_json_object(content: bytes, source: str, problems: ProblemCollector, known: Collection[str] | None) -> RunEntries:
    try:
        text = content.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start) + 1
        raise GoldsetError(
            f"cannot import run {source}: it is not UTF-8 text; nothing was stored",
            problems=[f"{source}:{line}: bytes that are not UTF-8 ({exc.reason})"],
            field="file",
        ) from exc
    try:
        run = json.loads(text, object_pairs_hook=_pairs_refusing_repeats(source, problems))
    except (ValueError, RecursionError) as exc:
        where = f"{source}:{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else source
        problems.add(f"{where}: not JSON ({exc})")
        return _collect((), source, problems, known, lambda n: source)
    return _read_mapping(run, source, problems, known)


def _lz4_decompress(content: bytes, check: Callable[[int], None]) -> bytes:
    """An LZ4 frame's content, decompressed a chunk at a time so that `check(bytes so far)`
    can stop a bomb before it is held whole."""
    import lz4.frame

    decompressor = lz4.frame.LZ4FrameDecompressor()
    parts, expanded = [], 0
    pending = content
    while not decompressor.eof:
        part = decompressor.decompress(pending, max_length=_CHUNK)
        pending = b""
        if not part and decompressor.needs_input:
            raise RuntimeError("the LZ4 frame ends early")
        expanded += len(part)
        check(expanded)
        parts.append(part)
    return b"".join(parts)


def _read_lz4(
    content: bytes,
    source: str,
    problems: ProblemCollector,
    known: Collection[str] | None,
    check: Callable[[int], None],
) -> RunEntries:
    import cbor2

    try:
        inner = _lz4_decompress(content, check)
        if inner.startswith(_LZ4_FRAME_MAGIC):  # ranx compresses twice: a frame inside lz4.frame.open's frame
            inner = _lz4_decompress(inner, check)
        run = cbor2.loads(inner)
    except (RuntimeError, ValueError, cbor2.CBORDecodeError) as exc:
        problems.add(f"{source}: not a ranx LZ4 run ({exc})")
        return _collect((), source, problems, known, lambda n: source)
    return _read_mapping(run, source, problems, known)


# What a parquet row costs once read, per column: a value in Arrow's buffers and a Python
# object in the lists the records are made from.
_PARQUET_ROW_COLUMN_BYTES = 40


def _read_parquet(
    content: bytes,
    source: str,
    problems: ProblemCollector,
    known: Collection[str] | None,
    check: Callable[[int], None],
) -> RunEntries:
    import pyarrow
    import pyarrow.parquet

    try:
        parquet = pyarrow.parquet.ParquetFile(pyarrow.BufferReader(content))
        names = list(parquet.schema_arrow.names)
    except (pyarrow.ArrowException, OSError, ValueError) as exc:
        problems.add(f"{source}: not a parquet file ({exc})")
        return _collect((), source, problems, known, lambda n: source)
    query_column = next((name for name in ("q_id", "query_id") if name in names), None)
    missing = [
        name
        for name, present in (("q_id or query_id", query_column), ("doc_id", "doc_id" in names), ("score", "score" in names))
        if not present
    ]
    if missing:
        shown = ", ".join(map(str, names[:20])) + (f" and {len(names) - 20:,} more" if len(names) > 20 else "")
        problems.add(f"{source}: the parquet file has no column {', '.join(missing)} (it has {shown})")
        return _collect((), source, problems, known, lambda n: source)
    wanted = [query_column, "doc_id", "score"]
    # Priced from the footer before a page is read: a reader allocates every row the footer
    # announces, and pages may expand (dictionaries, run lengths) far past their bytes.
    metadata = parquet.metadata
    uncompressed = sum(
        group.column(index).total_uncompressed_size
        for group in (metadata.row_group(number) for number in range(metadata.num_row_groups))
        for index in range(group.num_columns)
        if group.column(index).path_in_schema.split(".")[0] in wanted
    )
    check(uncompressed + metadata.num_rows * len(wanted) * _PARQUET_ROW_COLUMN_BYTES)
    try:
        table = parquet.read(columns=wanted)
    except (pyarrow.ArrowException, OSError, ValueError) as exc:
        problems.add(f"{source}: not a parquet file ({exc})")
        return _collect((), source, problems, known, lambda n: source)
    columns = [_column_values(table.column(query_column)), _column_values(table.column("doc_id")), _scores(table.column("score"))]
    records = zip(range(1, table.num_rows + 1), *columns)
    return _collect(records, source, problems, known, lambda n: f"{source}: row {n}")


def _column_values(column) -> list:
    """A parquet id column's values: strings as they are, integers as their exact decimal
    text (a column of numeric ids), anything else left for the id check to name."""
    import pyarrow.types

    values = column.to_pylist()
    if pyarrow.types.is_integer(column.type):
        return [None if value is None else str(value) for value in values]
    return values


def _scores(column) -> list:
    """A parquet score column's values as Python numbers; a missing value is NaN, which the
    score check names as not finite (as pandas read it)."""
    return [math.nan if value is None else value for value in column.to_pylist()]
