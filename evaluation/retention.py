"""Retention of series runs: old nights keep their scores, most of them lose their entries.

A monitored endpoint adds a run of up to a million entries a night. The entries are what
re-scoring and drill-down need; the trend and the alerts need only the scores. So, per
set, a series run older than `series_keep_days` keeps its entries only if it is the first
night of its ISO week in its series; the others have their entries dropped (RunData
deleted, `entries_dropped_at` set) while their Run row, evaluations, scores and
completeness stay as they are. A night without entries is never re-scored
(evaluation.services.series_runs_past_rescoring); its page says its entries were dropped.
"""

from datetime import datetime, timedelta

from django.db import transaction

from evaluation.models import Run, RunData
from evaluation.selectors import evaluation_settings
from goldenset.models import GoldenSet


def series_entries_thin(*, now: datetime) -> int:
    """Drop the entries of the series runs that retention does not keep; returns how many."""
    dropped = 0
    for golden_set in GoldenSet.objects.filter(series__isnull=False).distinct():
        keep_days = evaluation_settings(golden_set).series_keep_days
        if not keep_days:
            continue
        cutoff = now - timedelta(days=keep_days)
        old = (
            Run.objects.filter(golden_set=golden_set, series__isnull=False, measured_at__lt=cutoff)
            .order_by("series_id", "measured_at", "id")
            .values_list("id", "series_id", "measured_at", "entries_dropped_at")
        )
        weeks_kept: set[tuple[int, int, int]] = set()
        drop = []
        for run_id, series_id, measured_at, entries_dropped_at in old:
            year, week, _ = measured_at.isocalendar()
            if (series_id, year, week) not in weeks_kept:
                weeks_kept.add((series_id, year, week))  # the week's first night keeps its entries
                continue
            if entries_dropped_at is None:
                drop.append(run_id)
        if drop:
            with transaction.atomic():
                RunData.objects.filter(run_id__in=drop).delete()
                Run.objects.filter(pk__in=drop).update(entries_dropped_at=now)
            dropped += len(drop)
    return dropped
