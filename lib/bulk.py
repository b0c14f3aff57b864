"""Bulk writes that suit the database in use.

On PostgreSQL rows go through COPY, the fastest way in (imports of 100,000 pages are
judged against a plain COPY in bench/import_export.py). Elsewhere, executemany.
Callers pass plain tuples and must run inside a transaction they own.
"""

import gc
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from django.db import connection


def bulk_insert(table: str, columns: Sequence[str], rows: Iterable[Sequence], types: Sequence[str] | None = None) -> int:
    """Insert rows (tuples in `columns` order) into `table`; return how many were written.

    `types` (PostgreSQL type names, one per column) sends the rows in COPY's binary
    format: large bytea values then go as they are, not as hex text twice their size.
    """
    count = 0
    quoted_columns = ", ".join(connection.ops.quote_name(c) for c in columns)
    quoted_table = connection.ops.quote_name(table)
    if connection.vendor == "postgresql":
        binary = " (FORMAT BINARY)" if types else ""
        with connection.cursor() as cursor:
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
