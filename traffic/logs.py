"""Importing a team's query log: its lines read as they stream, merged by a normalised key,
stored as one QueryLog and its LoggedQuery rows (query_log_import).

Forms, as teams have them (LOG_FORMATS; "auto" tells them apart by the first line):

- JSONL: `{"query": ..., "count": ..., "timestamp" (or "ts"): ..., any slice fields}`; a
  line without "count" is one event.
- CSV or TSV with a header row: a `query` column; `count` and `timestamp` (or `ts`)
  optional; every other column is a slice field.
- gzip of any, told by its magic bytes, whatever the file is called.

Merging: two lines are the same query when their query_merge_key (traffic.normalizing) is the same: Unicode NFKC,
case-folded, every run of whitespace made one space, and punctuation at either end dropped
("How do I reset my password?" and "how do i reset my  password" merge). Punctuation
inside is kept: "c++", "node.js" and "o'brien" are what people typed, and dropping it would
merge queries that find different pages. The standard library's unicodedata does all of
it; no library of fuzzier matching is used, as a merge that guesses cannot be undone by
the team reading the log. A LoggedQuery keeps its events' count, its most frequent
original form, each slice field's most frequent value and its first and last time seen.

Memory is bounded by the distinct queries (and their distinct forms and field values),
not by the lines: a 10-million-line log of a few hundred thousand distinct queries holds
only those (bench/query_log.py measures it). Slice fields are meant to be few-valued
(language, product area): a field of a value a line (a session id) is kept per query, and
costs memory by its values.

Bad input, as the house's other importers do: every bad line is collected (up to
ProblemCollector's limit), each naming its line and field, and reported together; nothing
is written unless the whole file reads cleanly, and then in one transaction, the distinct
queries by lib.bulk.model_rows_insert (binary COPY on PostgreSQL, executemany elsewhere).
"""

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

import orjson
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from goldenset.models import GoldenSet
from lib.bulk import model_rows_insert
from lib.errors import ConflictError, GoldsetError, ProblemCollector, TooLargeError
from lib.progress import Progress, no_progress
from traffic.models import LoggedQuery, QueryLog
from traffic.normalizing import query_merge_key

LOG_FORMATS = ("auto", "jsonl", "csv", "tsv")
QUERY_FIELD = "query"
COUNT_FIELD = "count"
TIME_FIELDS = ("timestamp", "ts")
# Longest text a query may have: a line past it is someone's document pasted into the box.
MAX_QUERY_CHARS = 2000
GZIP_MAGIC = b"\x1f\x8b"
# A line's count at most: summed over a log, counts must still fit LoggedQuery.count (64 bits).
MAX_COUNT = 10**12
# Combinations of slice values remembered while reading (_read_jsonl): past it, a new one is
# worked out each time it comes, so a field of a value a line (a session id) cannot grow it.
MAX_COMBINATIONS = 100_000


@dataclass
class LogSummary:
    log: QueryLog

    def lines(self) -> list[str]:
        log = self.log
        fields = ", ".join(log.fields) or "none"
        return [
            f"query log {log.name!r} of {log.golden_set.slug}: {log.lines_read:,} lines, {log.event_count:,} events, "
            f"{log.query_count:,} distinct queries; slice fields: {fields}"
        ]


class _Tally:
    """What the lines read so far say of each distinct query.

    entries[key] = [events, tallies, first seen, last seen], tallies counting the events of
    each original form (a str) and of each (field, value) pair (a tuple) in one dict: one
    object a query, not one a field, as most queries of a log are seen once or twice. The
    pairs are the ones of `pairs`, one tuple for all the queries that share it.
    """

    def __init__(self) -> None:
        self.entries: dict[str, list] = {}
        # Original text -> its key: the same forms come back line after line, and
        # normalising costs more than a dict look-up.
        self.keys: dict[str, str] = {}
        self.pairs: dict[tuple[str, str], tuple[str, str]] = {}
        self.fields: dict[str, None] = {}  # in first-seen order
        self.lines = 0

    def pair(self, field: str, value: str) -> tuple[str, str]:
        """The one tuple of (field, value), the field noted on first sight."""
        pair = (field, value)
        found = self.pairs.get(pair)
        if found is None:
            self.fields.setdefault(field, None)
            found = self.pairs[pair] = pair
        return found

    def add(self, text: str, count: int, seen: datetime | None, slices: list[tuple[str, str]]) -> bool:
        """Count one line (`slices` as pair() gives them); False, nothing counted, when its
        query is empty once normalised. _read_jsonl does the same inline, for speed."""
        key = self.keys.get(text)
        if key is None:
            key = self.keys[text] = query_merge_key(text)
        if not key:
            return False
        self.lines += 1
        entry = self.entries.get(key)
        if entry is None:
            tallies = {text: count}
            self.entries[key] = [count, tallies, seen, seen]
        else:
            entry[0] += count
            tallies = entry[1]
            tallies[text] = tallies.get(text, 0) + count
            if seen is not None:
                if entry[2] is None or seen < entry[2]:
                    entry[2] = seen
                if entry[3] is None or seen > entry[3]:
                    entry[3] = seen
        for pair in slices:
            tallies[pair] = tallies.get(pair, 0) + count
        return True

    def events(self) -> int:
        return sum(entry[0] for entry in self.entries.values())

    def span(self) -> tuple[datetime | None, datetime | None]:
        """The first and last time any event was seen; (None, None) when the log gave none."""
        firsts = [entry[2] for entry in self.entries.values() if entry[2] is not None]
        lasts = [entry[3] for entry in self.entries.values() if entry[3] is not None]
        return (min(firsts), max(lasts)) if firsts else (None, None)

    def rows(self, log_id: int) -> Iterator[tuple]:
        """LoggedQuery rows (log, normalized, text, count, fields as JSON text, first, last)."""
        for key, (count, tallies, first, last) in self.entries.items():
            text, best = "", -1
            values: dict[str, tuple[str, int]] = {}
            for item, events in tallies.items():  # ties: the first seen wins
                if type(item) is str:
                    if events > best:
                        text, best = item, events
                else:
                    field, value = item
                    if field not in values or events > values[field][1]:
                        values[field] = (value, events)
            fields = {field: values[field][0] for field in self.fields if field in values}
            yield (log_id, key, text, count, orjson.dumps(fields).decode(), first, last)


def _time(value: object) -> datetime | None:
    """An event's time: ISO 8601 text (a time without offset is UTC) or epoch seconds."""
    if type(value) is str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    if type(value) in (int, float):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _slice_value(value: object) -> str | None:
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) in (int, float):
        return str(value)
    return None


def _json_line(raw: bytes, number: int, source: str, problems: ProblemCollector) -> object:
    """The value of a line orjson refused (json takes some text orjson does not); None, with
    the problem noted, when json refuses it too or it is blank."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        problems.add(f"{source}:{number}: bytes that are not UTF-8")
    except json.JSONDecodeError as exc:
        problems.add(f"{source}:{number}: not valid JSON ({exc.msg} at column {exc.colno})")
    return None


def _slices(obj: dict, tally: _Tally) -> tuple | str:
    """The (field, value) pairs of a line's slice fields (a null value is no value); the
    name of the first field whose value is not a string, number or true/false instead."""
    found = []
    for field, value in obj.items():
        if value is None:
            continue
        shown = _slice_value(value)
        if shown is None:
            return field
        found.append(tally.pair(field, shown))
    return tuple(found)


def _read_jsonl(lines: Iterator[bytes], source: str, tally: _Tally, problems: ProblemCollector) -> None:
    """The lines of a JSONL log into `tally`. The loop is _Tally.add written out, with every
    name local: it runs once a line, ten million times for a large log, and its cost is the
    import's against a plain parser's (bench/query_log.py)."""
    loads, decode_error, fromiso = orjson.loads, orjson.JSONDecodeError, datetime.fromisoformat
    keys, entries = tally.keys, tally.entries
    # The slice values of a line, as they were written -> their pairs: a log's lines repeat
    # a few combinations (lang and area) millions of times.
    combos: dict[tuple, tuple] = {}
    counted = 0
    for number, raw in enumerate(lines, start=1):
        try:
            obj = loads(raw)
        except decode_error:
            obj = _json_line(raw, number, source, problems)
            if obj is None:
                continue
        if type(obj) is not dict:
            problems.add(f"{source}:{number}: expected a JSON object, found {type(obj).__name__}")
            continue
        text = obj.pop(QUERY_FIELD, None)
        if type(text) is not str:
            problems.add(f"{source}:{number}: field 'query' is " + ("missing" if text is None else "not a string"))
            continue
        count = obj.pop(COUNT_FIELD, 1)
        if type(count) is not int or not 1 <= count <= MAX_COUNT:
            if type(count) is float:  # orjson reads an integer past 64 bits as a float: name it as written
                count = json.loads(raw).get(COUNT_FIELD)
            problems.add(f"{source}:{number}: field 'count' must be a positive integer, found {count!r}")
            continue
        time_name = "timestamp"
        raw_time = obj.pop("timestamp", None)
        if raw_time is None:
            time_name, raw_time = "ts", obj.pop("ts", None)
        seen = None
        if raw_time is not None:
            if type(raw_time) is str:
                try:
                    seen = fromiso(raw_time)
                except ValueError:
                    pass
                else:
                    if seen.tzinfo is None:
                        seen = seen.replace(tzinfo=UTC)
            else:
                seen = _time(raw_time)
            if seen is None:
                problems.add(f"{source}:{number}: field {time_name!r} is not an ISO 8601 time or epoch seconds: {raw_time!r}")
                continue
        slices = ()
        if obj:
            items = tuple(obj.items())
            try:
                slices = combos.get(items)
            except TypeError:  # a list or object among the values: _slices names it
                slices, items = None, None
            if slices is None:
                slices = _slices(obj, tally)
                if type(slices) is str:
                    problems.add(f"{source}:{number}: slice field {slices!r} must be a string, number or true/false")
                    continue
                if items is not None and len(combos) < MAX_COMBINATIONS:
                    combos[items] = slices
        if len(text) > MAX_QUERY_CHARS:
            problems.add(f"{source}:{number}: field 'query' is longer than {MAX_QUERY_CHARS} characters")
            continue
        key = keys.get(text)
        if key is None:
            key = keys[text] = query_merge_key(text)
        if not key:
            problems.add(f"{source}:{number}: field 'query' is empty once normalised")
            continue
        counted += 1
        entry = entries.get(key)
        if entry is None:
            tallies = {text: count}
            entries[key] = [count, tallies, seen, seen]
        else:
            entry[0] += count
            tallies = entry[1]
            tallies[text] = tallies.get(text, 0) + count
            if seen is not None:
                if entry[2] is None or seen < entry[2]:
                    entry[2] = seen
                if entry[3] is None or seen > entry[3]:
                    entry[3] = seen
        for pair in slices:
            tallies[pair] = tallies.get(pair, 0) + count
    tally.lines += counted


def _checked_text(text: str, source: str, number: int, problems: ProblemCollector) -> bool:
    if len(text) > MAX_QUERY_CHARS:
        problems.add(f"{source}:{number}: field 'query' is longer than {MAX_QUERY_CHARS} characters")
        return False
    return True


def _read_delimited(stream: BinaryIO, delimiter: str, source: str, tally: _Tally, problems: ProblemCollector) -> None:
    text_stream = io.TextIOWrapper(stream, encoding="utf-8", newline="")
    # TSV as text/tab-separated-values has it: no quoting, so a query `"wing flutter" nasa`
    # keeps its quotes; CSV quotes as RFC 4180 does.
    reader = csv.reader(text_stream, delimiter=delimiter, quoting=csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL)
    try:
        header = next(reader, None)
        if header is None:
            return
        header = [name.strip() for name in header]
        if header and header[0].startswith("\ufeff"):
            header[0] = header[0][1:]
        if QUERY_FIELD not in header:
            problems.add(f"{source}:1: the header has no 'query' column (it has {', '.join(map(repr, header)) or 'none'})")
            return
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            problems.add(f"{source}:1: the header names column {repeated[0]!r} twice")
            return
        query_at = header.index(QUERY_FIELD)
        count_at = header.index(COUNT_FIELD) if COUNT_FIELD in header else None
        time_at = next((header.index(name) for name in TIME_FIELDS if name in header), None)
        special = {query_at, count_at, time_at}
        slice_columns = [(at, name) for at, name in enumerate(header) if at not in special and name]
        for _, name in slice_columns:
            tally.fields[name] = None
        width = len(header)
        for row in reader:
            number = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != width:
                problems.add(f"{source}:{number}: {len(row)} columns where the header has {width}")
                continue
            count = 1
            if count_at is not None and row[count_at].strip():
                raw_count = row[count_at].strip()
                if not raw_count.isdigit() or not 1 <= int(raw_count) <= MAX_COUNT:
                    problems.add(f"{source}:{number}: column 'count' must be a positive integer, found {raw_count!r}")
                    continue
                count = int(raw_count)
            seen = None
            if time_at is not None and row[time_at].strip():
                raw_time = row[time_at].strip()
                seen = _time(float(raw_time) if _is_number(raw_time) else raw_time)
                if seen is None:
                    problems.add(f"{source}:{number}: column {header[time_at]!r} is not an ISO 8601 time or epoch seconds: {raw_time!r}")
                    continue
            text = row[query_at]
            if not _checked_text(text, source, number, problems):
                continue
            slices = [tally.pair(name, row[at]) for at, name in slice_columns if row[at] != ""]
            if not tally.add(text, count, seen, slices):
                problems.add(f"{source}:{number}: column 'query' is empty once normalised")
    except UnicodeDecodeError:
        problems.add(f"{source}:{reader.line_num + 1}: bytes that are not UTF-8")
    except csv.Error as exc:
        problems.add(f"{source}:{reader.line_num}: {exc}")
    finally:
        text_stream.detach()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class _CappedReader(io.RawIOBase):
    """A readable stream that stops with TooLargeError past `limit` bytes: counted a block at
    a time, so the lines' loop pays nothing for it."""

    def __init__(self, inner: BinaryIO, limit: int, source: str, setting: str):
        self.inner, self.limit, self.source, self.setting, self.read_bytes = inner, limit, source, setting, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = self.inner.readinto(buffer)
        self.read_bytes += size or 0
        if self.read_bytes > self.limit:
            raise TooLargeError(
                f"cannot import query log {self.source}: it holds more than {self.limit >> 20:,} MB of text (the limit, "
                f"{self.setting}); import it with manage.py import_query_log, which streams any size; nothing was stored",
                field="file",
            )
        return size


def _opened(data: BinaryIO, source: str, max_text_bytes: int | None, setting: str) -> BinaryIO:
    """`data`, gunzipped when it opens with gzip's magic bytes; capped at `max_text_bytes`
    of text once decompressed, when given. Bytes, not lib.uploads.ungzipped_lines's text:
    orjson reads a line's bytes as they are, and decoding ten million lines first would
    cost the import a fifth of its time."""
    stream = data if hasattr(data, "peek") else io.BufferedReader(data)
    if stream.peek(2)[:2] == GZIP_MAGIC:
        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), buffer_size=1 << 20)
    if max_text_bytes is not None:
        stream = io.BufferedReader(_CappedReader(stream, max_text_bytes, source, setting), buffer_size=1 << 20)
    return stream


def log_format_sniff(stream: BinaryIO) -> str:
    """The form of a log by its first line: a JSON object is JSONL, a tab makes TSV,
    anything else CSV. `stream` must peek (io.BufferedReader), and is not advanced."""
    head = stream.peek(65536)[:65536]
    first = head.removeprefix(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0]
    if first.startswith(b"{"):
        return "jsonl"
    return "tsv" if b"\t" in first else "csv"


def query_log_read(
    *,
    data: BinaryIO,
    source_name: str,
    fmt: str = "auto",
    progress: Progress = no_progress,
    max_text_bytes: int | None = None,
    limit_setting: str = "QUERY_LOG_UPLOAD_MB",
) -> _Tally:
    """Read and merge a log's lines; GoldsetError listing every bad line (naming its line
    and field) when there is any. `fmt` is one of LOG_FORMATS. With `max_text_bytes`, a log
    of more text than that once decompressed is refused (TooLargeError naming `limit_setting`)."""
    if fmt not in LOG_FORMATS:
        raise GoldsetError(f"unknown query log format {fmt!r}: use one of {', '.join(LOG_FORMATS)}", field="format")
    tally = _Tally()
    problems = ProblemCollector()
    try:
        stream = _opened(data, source_name, max_text_bytes, limit_setting)
        if fmt == "auto":
            fmt = log_format_sniff(stream)
        if fmt == "jsonl":
            _read_jsonl(iter(progress(stream, "reading query log")), source_name, tally, problems)
        else:
            _read_delimited(stream, "\t" if fmt == "tsv" else ",", source_name, tally, problems)
    except (OSError, EOFError, zlib.error) as exc:
        raise GoldsetError(
            f"cannot import query log {source_name}: {exc}; nothing was stored", problems=[f"{source_name}: {exc}"], field="file"
        ) from exc
    problems.raise_if_any(f"cannot import query log {source_name}: {len(problems.problems)} bad lines; nothing was stored")
    if not tally.entries:
        raise GoldsetError(f"cannot import query log {source_name}: it holds no queries; nothing was stored", field="file")
    return tally


def query_log_name_check(*, golden_set: GoldenSet, name: str, replace: bool = False) -> str:
    """The log's name, stripped; refuses an empty one, and a name the set's logs have unless
    `replace` (ConflictError), or when the log to replace has draws, which keep its queries."""
    name = (name or "").strip()
    if not name:
        raise GoldsetError("a query log needs a name", field="name")
    if len(name) > QueryLog._meta.get_field("name").max_length:
        raise GoldsetError(f"a query log's name is at most {QueryLog._meta.get_field('name').max_length} characters", field="name")
    existing = QueryLog.objects.filter(golden_set=golden_set, name=name).first()
    if existing is not None:
        if not replace:
            raise ConflictError(
                f"golden set {golden_set.slug} has a query log named {name!r} already: choose another name, or replace it", field="name"
            )
        if existing.draws.exists():
            raise ConflictError(
                f"query log {name!r} cannot be replaced: queries of the set were drawn from it; import under another name", field="name"
            )
    return name


def query_log_import(
    *,
    golden_set: GoldenSet,
    data: BinaryIO,
    name: str,
    source_name: str,
    fmt: str = "auto",
    replace: bool = False,
    user: AbstractBaseUser | None = None,
    progress: Progress = no_progress,
    max_text_bytes: int | None = None,
) -> LogSummary:
    """Import the log `data` (bytes, gzip or not) into `golden_set` as the query log `name`;
    its summary. All or nothing: refused lines are listed together and nothing is written.
    `replace` swaps a log of the same name (that no draw used) in the same transaction.
    `max_text_bytes` caps the text read (the upload page's QUERY_LOG_UPLOAD_MB); None: any size."""
    name = query_log_name_check(golden_set=golden_set, name=name, replace=replace)
    tally = query_log_read(data=data, source_name=source_name, fmt=fmt, progress=progress, max_text_bytes=max_text_bytes)
    first_seen, last_seen = tally.span()
    with transaction.atomic():
        # Checked again inside: another import may have taken the name while this one read.
        query_log_name_check(golden_set=golden_set, name=name, replace=replace)
        if replace:
            QueryLog.objects.filter(golden_set=golden_set, name=name).delete()
        log = QueryLog.objects.create(
            golden_set=golden_set,
            name=name,
            source=source_name[:500],
            lines_read=tally.lines,
            event_count=tally.events(),
            query_count=len(tally.entries),
            fields=list(tally.fields),
            first_seen=first_seen,
            last_seen=last_seen,
            imported_by=user if user is not None and user.is_authenticated else None,
        )
        model_rows_insert(
            LoggedQuery,
            ["log", "normalized", "text", "count", "fields", "first_seen", "last_seen"],
            tally.rows(log.pk),
        )
    return LogSummary(log)
