"""The judging figures of a large pool, summarised by a worker (PoolJudgingSummary).

The completeness page shows, per pool, its closed tasks counted, its pace and its
relevant-found curve: aggregates over every closed task, read live for pools of up to
POOL_SUMMARY_PAIRS pairs and from a summary for larger ones (see
labeling.completeness.selectors.pools_judging_figures). This is the one write of that
summary: the page hands it to a worker (labeling.tasks.pool_summary_task) when a large
pool's summary is missing or older than POOL_SUMMARY_MAX_AGE.
"""

from datetime import datetime, timedelta

from django.utils import timezone

from labeling.completeness.selectors import pools_closed_figures, pools_found_curves
from labeling.models import Pool, PoolJudgingSummary


def pool_summary_refresh(pool_id: int, *, now: datetime | None = None, recent_hours: int = 24) -> PoolJudgingSummary | None:
    """Count the pool's closed tasks and draw its curve now, and store them as its summary
    (replacing the one before); None when the pool is gone. Two queries over the pool's
    closed tasks, then one write."""
    pool = Pool.objects.filter(pk=pool_id).select_related("golden_set").first()
    if pool is None:
        return None
    now = now or timezone.now()
    closed = pools_closed_figures([pool], since=now - timedelta(hours=recent_hours))[pool.pk]
    curve = pools_found_curves([pool]).get(pool.pk, [])
    summary, _ = PoolJudgingSummary.objects.update_or_create(
        pool=pool,
        defaults=dict(
            computed_at=now,
            recent_hours=recent_hours,
            done=closed.done,
            skipped=closed.skipped,
            relevant=closed.relevant,
            recent=closed.recent,
            first_done_at=closed.first_done_at,
            last_done_at=closed.last_done_at,
            curve=[list(point) for point in curve],
        ),
    )
    return summary
