"""Reads of a set's query logs for their pages: the list, one log's head queries and its
slice fields' values with their shares of the traffic. Access checks are the views'."""

from dataclasses import dataclass

from django.db.models import Count, Sum
from django.db.models.fields.json import KeyTextTransform
from django.http import Http404

from goldenset.models import GoldenSet
from traffic.models import LoggedQuery, QueryLog

HEAD_QUERIES = 50
# Values shown a field; the rest are summed into one "other values" row.
VALUES_SHOWN = 20
# A log's slice fields shown, in first-seen order: a log of fifty fields is someone's mistake.
FIELDS_SHOWN = 12


def query_logs_of(golden_set: GoldenSet) -> list[QueryLog]:
    """The set's query logs, newest first, with their importer. One query."""
    return list(QueryLog.objects.filter(golden_set=golden_set).select_related("imported_by").order_by("-imported_at", "-pk"))


def query_log_get(golden_set: GoldenSet, log_id: int) -> QueryLog:
    """The set's query log `log_id`; Http404 when the set has none of that id."""
    log = QueryLog.objects.filter(golden_set=golden_set, pk=log_id).select_related("imported_by").first()
    if log is None:
        raise Http404("no such query log")
    return log


@dataclass(frozen=True)
class ValueShare:
    value: str  # "" for the events whose query has no value of the field
    queries: int
    events: int
    share: float  # of the log's events, a fraction in [0, 1]

    @property
    def percent(self) -> str:
        return f"{self.share * 100:.1f}%"


@dataclass(frozen=True)
class FieldShares:
    field: str
    values: list[ValueShare]
    other: ValueShare | None  # the values past VALUES_SHOWN, summed


@dataclass(frozen=True)
class HeadQuery:
    text: str  # its most frequent form
    events: int
    values: list[str]  # its value of each of the log's fields, in their order ("" for none)


def query_log_head(log: QueryLog, limit: int = HEAD_QUERIES) -> list[HeadQuery]:
    """The log's `limit` queries of most events (the loggedquery_log_count index). One query."""
    rows = LoggedQuery.objects.filter(log=log).order_by("-count", "normalized").values_list("text", "count", "fields")[:limit]
    return [HeadQuery(text, count, [str(fields.get(field, "")) for field in log.fields]) for text, count, fields in rows]


def query_log_field_shares(log: QueryLog) -> list[FieldShares]:
    """Each slice field's values by events, with their share of the log's events. A query
    counts under the value most of its events carried (LoggedQuery.fields). One query a field."""
    total = log.event_count or 1
    result = []
    for field in log.fields[:FIELDS_SHOWN]:
        rows = (
            LoggedQuery.objects.filter(log=log)
            .annotate(value=KeyTextTransform(field, "fields"))
            .values("value")
            .annotate(queries=Count("pk"), events=Sum("count"))
            .order_by("-events", "value")
        )
        shares = [ValueShare(row["value"] or "", row["queries"], row["events"], row["events"] / total) for row in rows]
        shown, rest = shares[:VALUES_SHOWN], shares[VALUES_SHOWN:]
        other = None
        if rest:
            events = sum(share.events for share in rest)
            other = ValueShare(f"{len(rest)} other values", sum(share.queries for share in rest), events, events / total)
        result.append(FieldShares(field, shown, other))
    return result
