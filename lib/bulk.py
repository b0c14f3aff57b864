"""Bulk writes, and bulk reads of integer columns, that suit the database in use.

On PostgreSQL rows go through COPY, the fastest way in (imports of 100,000 pages are
judged against a plain COPY in bench/import_export.py). Elsewhere, executemany.
Callers must run inside a transaction they own.

The binary COPY's layout of a model's rows (each column's PostgreSQL type and, for
numpy's rows, its byte form) is derived from the model's fields in one place,
copy_columns, so a migration that changes a field changes the COPY with it:
model_rows_insert writes tuples, model_arrays_insert numpy columns. bulk_insert's
`types` and copy_arrays' `columns` are the older hand-typed forms, kept for
labeling.pools until it moves to these.
"""

import functools
import gc
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
from django.db import connection
from django.db.models import Model, QuerySet

from lib.progress import Progress, no_progress

# Rows per block of copy_arrays: bounds the memory of the binary buffer.
COPY_CHUNK_ROWS = 250_000


def bulk_insert(table: str, columns: Sequence[str], rows: Iterable[Sequence], types: Sequence[str] | None = None) -> int:
    """Insert rows (tuples in `columns` order) into `table`; return how many were written.

    `types` (PostgreSQL type names, one per column) sends the rows in COPY's binary
    format: large bytea values then go as they are, not as hex text twice their size; a
    jsonb value is then given as its JSON text, as executemany takes it.
    """
    count = 0
    quoted_columns = ", ".join(connection.ops.quote_name(c) for c in columns)
    quoted_table = connection.ops.quote_name(table)
    if connection.vendor == "postgresql":
        binary = " (FORMAT BINARY)" if types else ""
        with connection.cursor() as cursor:
            if types and "jsonb" in types:
                cursor.cursor.adapters.register_dumper(None, _jsonb_text_dumper())
            with cursor.cursor.copy(f"COPY {quoted_table} ({quoted_columns}) FROM STDIN{binary}") as copy:
                if types:
                    copy.set_types(list(types))
                for row in rows:
                    copy.write_row(row)
                    count += 1
        return count
    placeholders = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {quoted_table} ({quoted_columns}) VALUES ({placeholders})"
    batch: list[Sequence] = []
    with connection.cursor() as cursor:
        for row in rows:
            batch.append(row)
            if len(batch) >= 5000:
                cursor.executemany(sql, batch)
                count += len(batch)
                batch.clear()
        if batch:
            cursor.executemany(sql, batch)
            count += len(batch)
    return count


class CopyColumn(NamedTuple):
    name: str  # the column's name in the table
    type: str  # its PostgreSQL type, as psycopg names it: "bigint", "varchar", "jsonb"


# PostgreSQL types whose binary value numpy writes as a big-endian number of this dtype.
_NUMBER_DTYPES = {"bigint": ">i8", "integer": ">i4", "smallint": ">i2", "boolean": "?", "timestamp with time zone": ">i8"}
# Types whose binary value is the bytes themselves (a text's in UTF-8).
_BYTES_TYPES = {"text", "varchar", "bytea"}
# PostgreSQL's binary timestamps count microseconds from here.
_POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def copy_columns(model: type[Model], fields: Sequence[str]) -> list[CopyColumn]:
    """The column and PostgreSQL type of each of `fields` of `model` (names or attnames,
    "query" or "query_id"), as the model's migrations create them: the one source of a
    binary COPY's layout. Only where the database is PostgreSQL."""
    columns = []
    for name in fields:
        field = model._meta.get_field(name)
        # "varchar(64)" -> "varchar": the length is the server's to check, not the wire's.
        columns.append(CopyColumn(field.column, re.sub(r"\(.*\)$", "", field.db_type(connection))))
    return columns


def model_rows_insert(model: type[Model], fields: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Insert rows (tuples in `fields` order) into `model`'s table; return how many. On
    PostgreSQL in COPY's binary format typed by copy_columns (a jsonb value given as its
    JSON text), elsewhere by executemany."""
    columns = [model._meta.get_field(name).column for name in fields]
    types = [column.type for column in copy_columns(model, fields)] if connection.vendor == "postgresql" else None
    return bulk_insert(model._meta.db_table, columns, rows, types)


def model_arrays_insert(model: type[Model], values: Mapping[str, object], count: int, *, chunk_rows: int = COPY_CHUNK_ROWS) -> int:
    """Insert `count` rows into `model`'s table from columns: `values` maps each field to an
    array of `count` items or to one value for every row; return `count`.

    For writes of hundreds of thousands of rows whose columns are already arrays, where a
    Python tuple a row would cost more than the server's side of the write. On PostgreSQL
    numpy builds the rows in COPY's binary format, laid out by copy_columns: integers and
    booleans as arrays or Python values, a text or bytea column as one str or bytes or as
    a numpy "S" (or "V") array whose every item fills its width (so that every row's
    length is the same), a timestamp as one aware datetime. Elsewhere the same rows go by
    executemany. No value may be NULL. `chunk_rows` rows at a time bound the memory.
    """
    fields = list(values)
    blocks = range(0, count, chunk_rows)
    if connection.vendor != "postgresql":
        columns = [model._meta.get_field(name).column for name in fields]
        for start in blocks:
            block = slice(start, min(start + chunk_rows, count))
            bulk_insert(model._meta.db_table, columns, zip(*(_python_values(values[name], block) for name in fields)))
        return count
    layout = [(column.name, *_binary_form(column, values[name])) for column, name in zip(copy_columns(model, fields), fields)]
    values = {column: _binary_value(values[name]) for (column, _, _), name in zip(layout, fields)}
    with connection.cursor() as cursor, cursor.cursor.copy(_copy_arrays_sql(model._meta.db_table, layout)) as copy:
        _send_arrays(copy, layout, values, count, blocks, chunk_rows)
    return count


def _binary_form(column: CopyColumn, value: object) -> tuple[str, int]:
    """(numpy dtype, byte width) of `column`'s binary COPY value, given what is written."""
    if column.type in _NUMBER_DTYPES:
        dtype = np.dtype(_NUMBER_DTYPES[column.type])
        return dtype.str, dtype.itemsize
    if column.type not in _BYTES_TYPES:
        raise TypeError(f"model_arrays_insert writes no {column.type} column ({column.name})")
    if isinstance(value, np.ndarray):
        width = value.dtype.itemsize
        if value.dtype.kind == "S" and len(value) and not (np.char.str_len(value) == width).all():
            raise ValueError(f"the values of {column.name} must all be {width} bytes long")
        return f"V{width}" if value.dtype.kind == "V" else f"S{width}", width
    width = len(_binary_value(value))
    return f"S{width}", width


def _binary_value(value: object) -> object:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, datetime):
        return (value - _POSTGRES_EPOCH) // timedelta(microseconds=1)
    return value


def _python_values(value: object, block: slice) -> Iterable:
    """The values of one block of a model_arrays_insert column, as executemany takes them."""
    if not isinstance(value, np.ndarray):
        return itertools.repeat(value)
    part = value[block]
    return np.char.decode(part).tolist() if part.dtype.kind == "S" else part.tolist()


def copy_arrays(
    table: str,
    columns: Sequence[tuple[str, str, int]],
    values: Mapping[str, object],
    count: int,
    *,
    progress: Progress = no_progress,
    chunk_rows: int = COPY_CHUNK_ROWS,
) -> None:
    """COPY `count` rows into `table` in PostgreSQL's binary format, rows built by numpy,
    the layout given by hand: `columns` are (name, numpy big-endian type, byte width), e.g.
    ("pool_id", ">i8", 8) or ("status", "S4", 4). model_arrays_insert derives it from the
    model instead; see there."""
    with connection.cursor() as cursor:
        with cursor.cursor.copy(_copy_arrays_sql(table, columns)) as copy:
            _send_arrays(copy, columns, values, count, progress(range(0, count, chunk_rows), f"writing {count} rows"), chunk_rows)


def _copy_arrays_sql(table: str, columns: Sequence[tuple[str, str, int]]) -> str:
    quoted_columns = ", ".join(connection.ops.quote_name(name) for name, _, _ in columns)
    return f"COPY {connection.ops.quote_name(table)} ({quoted_columns}) FROM STDIN (FORMAT BINARY)"


def _send_arrays(
    copy,
    columns: Sequence[tuple[str, str, int]],
    values: Mapping[str, object],
    count: int,
    starts: Iterable[int],
    chunk_rows: int,
) -> None:
    layout = [("count", ">i2")]
    for name, type_, _ in columns:
        layout += [(f"{name}_length", ">i4"), (name, type_)]
    copy.write(b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8)  # signature, flags, no header extension
    for start in starts:
        chunk = slice(start, min(start + chunk_rows, count))
        block = np.empty(chunk.stop - chunk.start, dtype=np.dtype(layout))
        block["count"] = len(columns)
        for name, _, length in columns:
            block[f"{name}_length"] = length
            value = values[name]
            block[name] = value[chunk] if isinstance(value, np.ndarray) else value
        copy.write(block.tobytes())
    copy.write(b"\xff\xff")  # end of data


def table_analyze(model: type[Model]) -> None:
    """Refresh the planner's statistics of `model`'s table after a bulk write into it
    (ANALYZE, on either database; it may run inside the caller's transaction), as
    PostgreSQL's guide to populating a database advises. Until autovacuum gets to a table
    (a minute or more after the write), the planner plans for the rows it last counted,
    none for a new table, and picks plans that read the whole of what was written."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def select_int_columns(sql: str, width: int, params: Sequence = ()) -> np.ndarray:
    """The rows of `sql`, a SELECT of `width` integer columns none of which is NULL, as an
    int64 array of shape (rows, width), in no particular order.

    For reads of a million rows that are only numbers: on PostgreSQL the server packs every
    row into 8-byte big-endian values (int8send) of ONE bytea, sent as one binary value
    and read by numpy at once, without a Python object per value (a binary COPY out hands
    its rows over one message, one Python call, a row); elsewhere fetchall. `params` are
    bound the way cursor.execute binds them, to the %s marks in `sql`.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, width)
    names = [f"c{column}" for column in range(width)]
    packed = " || ".join(f"int8send({name}::int8)" for name in names)
    [(data,)] = select_binary(f"SELECT string_agg({packed}, ''::bytea) FROM ({sql}) AS selected ({', '.join(names)})", params)
    return np.frombuffer(data or b"", dtype=">i8").reshape(-1, width).astype(np.int64)


def select_int_rows(rows: QuerySet) -> np.ndarray:
    """The rows of `rows`, a values_list() of integer columns and expressions none of which
    is NULL, read as select_int_columns reads them: an int64 array of shape (rows, columns),
    in no particular order."""
    query = rows.order_by().query
    width = len(query.values_select) + len(query.annotation_select)
    sql, params = query.sql_with_params()
    return select_int_columns(sql, width, params)


def select_binary(sql: str, params: Sequence = ()) -> list[tuple]:
    """The rows of `sql`, fetched in PostgreSQL's binary format there (fetchall elsewhere).

    For reads of large bytea values: Django's client-side cursors receive a bytea as hex
    text that the driver then parses, where the binary format hands the bytes over as they
    are (a re-score reads a stored run per evaluation; bench/recompute.py times it).
    A bytea comes back as bytes on PostgreSQL, as the database driver gives it elsewhere.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    connection.ensure_connection()
    # A server-side-binding cursor on Django's own connection (so inside the caller's
    # transaction; Django's client-side cursors cannot ask for a binary result), wrapped as
    # Django wraps its own, so that the query is logged and counted like any other.
    raw = _binary_cursor_class()(connection.connection)
    with connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@functools.cache
def _jsonb_text_dumper() -> type:
    import psycopg  # the PostgreSQL driver, only where PostgreSQL is the database

    class JsonbTextDumper(psycopg.adapt.Dumper):
        """A jsonb value in COPY's binary format from its JSON text: a version byte, 1, then
        the text, which the server parses as it would the text format's."""

        format = psycopg.pq.Format.BINARY
        oid = psycopg.postgres.types["jsonb"].oid

        def dump(self, obj: str) -> bytes:
            return b"\x01" + obj.encode()

    return JsonbTextDumper


@functools.cache
def _binary_cursor_class() -> type:
    import psycopg  # the PostgreSQL driver, only where PostgreSQL is the database

    class BinaryCursor(psycopg.Cursor):
        """Binary results, and never prepared, whatever the connection's prepare_threshold
        (Django leaves it off unless OPTIONS set it): these are few large reads, whose
        planning is nothing beside their transfer, and a statement run by name leaves
        Django's query log no text."""

        def execute(self, query, params=None, **kwargs):
            return super().execute(query, params, binary=True, prepare=False)

    return BinaryCursor


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for a bulk job; usable as a decorator.

    An import holds every parsed record until its rows are written: hundreds of thousands
    of live dicts and objects, which the collector would scan again and again and never
    free. That scanning took about a fifth of the time of a 100,000-page import
    (bench/import_export.py). Reference counting still frees everything else at once, and
    any cycle made meanwhile is collected after. The collector is switched back on only if
    it was on, so nested uses are safe.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
