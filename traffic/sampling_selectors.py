"""Reads of the draw pages: a set's or a log's draws, newest first."""

from django.db.models import QuerySet

from goldenset.models import GoldenSet
from traffic.models import QueryDraw, QueryLog


def draws_of_set(golden_set: GoldenSet, limit: int = 50) -> list[QueryDraw]:
    """The set's latest `limit` draws with their log and author (one query)."""
    return list(_draws().filter(golden_set=golden_set)[:limit])


def draws_of_log(log: QueryLog, limit: int = 50) -> list[QueryDraw]:
    """The log's latest `limit` draws (one query): what the log's page lists
    (templates/traffic/sampling/_draws.html, with `draws` in its context)."""
    return list(_draws().filter(log=log)[:limit])


def _draws() -> QuerySet[QueryDraw]:
    return QueryDraw.objects.select_related("log", "created_by").order_by("-created_at", "-pk")
