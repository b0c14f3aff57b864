"""A published version's queries as a file: what an eval job needs to weight its scores.

Each query with its current text (versions freeze ids, slice values and weights, not
texts), the slice values the version snapshotted, and its sampling weight as frozen at
publish (traffic.sampling): `inclusion_probability` (null for a query not drawn from a
query log: added by hand, weight unknown), `stratum` ("" for none) and `traffic_count` (its
events in the log, null when not drawn). JSON (a list), JSON lines (an object a line) or
CSV (a header, metadata as its JSON text), in natural query id order, after the version's
integrity check.
"""

import json
from collections.abc import Iterator

from goldenset.models import Version, VersionQuery
from goldenset.selectors import version_check_intact
from lib.formats import csv_cell
from lib.ids import natural_key

QUERY_FORMATS = ("jsonl", "json", "csv")
COLUMNS = ("query_id", "text", "inclusion_probability", "stratum", "traffic_count", "metadata")


def version_query_records(version: Version) -> list[dict]:
    """The version's queries as export records (COLUMNS), in natural query id order: one query."""
    rows = VersionQuery.objects.filter(version=version).values_list(
        "query__query_id", "query__text", "inclusion_probability", "stratum", "traffic_count", "metadata"
    )
    return [dict(zip(COLUMNS, row)) for row in sorted(rows, key=lambda row: natural_key(row[0]))]


def version_queries_chunks(version: Version, fmt: str) -> Iterator[str]:
    """The version's queries in `fmt` (QUERY_FORMATS), as text chunks; VersionIntegrityError
    first when the version no longer matches its hash."""
    version_check_intact(version)
    records = version_query_records(version)
    if fmt == "jsonl":
        for record in records:
            yield json.dumps(record, ensure_ascii=False) + "\n"
    elif fmt == "json":
        yield json.dumps(records, ensure_ascii=False, indent=1) + "\n"
    elif fmt == "csv":
        # csv_cell quotes as the csv module would, after the spreadsheet guard.
        lines = [",".join(COLUMNS)]
        for record in records:
            probability, count = record["inclusion_probability"], record["traffic_count"]
            cells = [
                csv_cell(record["query_id"]),
                csv_cell(record["text"]),
                "" if probability is None else repr(probability),
                csv_cell(record["stratum"]),
                "" if count is None else str(count),
                csv_cell(json.dumps(record["metadata"], ensure_ascii=False, sort_keys=True)),
            ]
            lines.append(",".join(cells))
        yield "\n".join(lines) + "\n"
    else:
        raise ValueError(f"unknown query export format {fmt!r}")
