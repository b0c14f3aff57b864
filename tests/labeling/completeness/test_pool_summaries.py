"""Large pools' judging figures come from a summary a worker keeps
(labeling.completeness.summaries): equal to the live figures when made, dated on the page,
refreshed through a worker when missing or old, at most once a minute per pool.

Every pool counts as large here (POOL_SUMMARY_PAIRS = 0), on the small set of the
completeness page's tests."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from labeling.completeness.selectors import POOL_SUMMARY_MAX_AGE, pools_found_curves, pools_judging, pools_judging_figures
from labeling.completeness.summaries import pool_summary_refresh
from labeling.models import JudgingTask, PoolJudgingSummary
from labeling.pools.selectors import pool_queue
from tests.labeling.completeness.test_completeness_page import JUDGING_SET, cell, golden_set, judge, page, pool  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.django_db, JUDGING_SET]


@pytest.fixture(autouse=True)
def every_pool_summarised(settings):
    settings.POOL_SUMMARY_PAIRS = 0
    cache.clear()


def test_a_summary_holds_the_live_figures_of_its_moment(pool):
    now = timezone.now()
    summary = pool_summary_refresh(pool.pk, now=now)
    live = pools_judging([pool], now=now)[pool.pk]
    judging, curves, as_of = pools_judging_figures([pool], now=now)
    assert judging[pool.pk] == live
    assert curves[pool.pk] == pools_found_curves([pool])[pool.pk] == [(0, 0), (1, 1), (2, 1)]
    assert as_of == {pool.pk: summary.computed_at}


def test_the_first_view_reads_live_and_asks_a_worker_for_the_summary(client, pool, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        body = page(client, owner)
    assert cell(body, f"pool-{pool.pk}", "done") == "2" and "as of" not in body
    assert len(callbacks) == 1  # the refresh, run in-process here as the test settings run tasks
    summary = PoolJudgingSummary.objects.get(pool=pool)
    assert (summary.done, summary.relevant, summary.curve) == (2, 1, [[0, 0], [1, 1], [2, 1]])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        body = page(client, owner)
    assert callbacks == []  # fresh: nothing asked
    assert f"Pool {pool.pk} holds 4 pairs" in body and "as of" in body


def test_a_judgment_shows_once_the_old_summary_is_refreshed(client, pool, owner, django_capture_on_commit_callbacks):
    pool_summary_refresh(pool.pk)
    judge(pool_queue(pool).first(), 1, owner)
    assert cell(page(client, owner), f"pool-{pool.pk}", "done") == "2"  # the summary's moment
    assert cell(page(client, owner), f"pool-{pool.pk}", "queued") == str(pool_queue(pool).count())  # the queue: live
    PoolJudgingSummary.objects.filter(pool=pool).update(computed_at=timezone.now() - POOL_SUMMARY_MAX_AGE - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        page(client, owner)
        page(client, owner)  # a second view within the minute asks nothing more
    assert len(callbacks) == 1
    assert cell(page(client, owner), f"pool-{pool.pk}", "done") == "3"
    assert JudgingTask.objects.filter(pool=pool, status="done").count() == 3


def test_a_summary_of_a_pool_gone_is_nothing(pool):
    pool_id = pool.pk
    pool.delete()
    assert pool_summary_refresh(pool_id) is None
