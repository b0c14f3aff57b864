"""With a real Celery worker running (Redis, PostgreSQL), a receiver answering 503 gets the
retry on the backoff schedule: the failed round sets next_attempt_at a minute on, the
sweeper sent through the worker before then sends nothing, and once that time has come
(moved into the past here, never slept through) the sweeper's next pass delivers it.
The same schedule without a worker is test_incident_messages.py's."""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from evaluation.alerts.delivery import delivery_backoff_seconds
from evaluation.alerts.rules import alerts_check
from evaluation.models import IncidentMessage, WebhookDelivery
from evaluation.settings_service import evaluation_settings_update
from evaluation.tasks import alert_deliver_task, send_incident_messages_task
from goldenset.services import version_publish
from tests.evaluation.alerts.test_incident_messages import webhook  # noqa: F401 - a real receiver
from tests.evaluation.test_worker import wait_until, workers  # noqa: F401 - real workers on Redis
from tests.support.factories import alerting_run as upload
from tests.support.factories import alerting_set as make_set
from tests.support.factories import score as evaluate

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(not settings.REDIS_AVAILABLE, reason=f"Redis does not answer at {settings.TEST_REDIS_URL}"),
    pytest.mark.skipif(not settings.POSTGRES_AVAILABLE, reason="a worker process needs the PostgreSQL test database"),
]


def test_a_503_is_retried_by_the_sweeper_on_its_schedule_with_a_worker_running(workers, webhook):  # noqa: F811
    worker = workers.start(env={"ALERT_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "no_proxy": "127.0.0.1"}, wait=False)
    golden_set = make_set()
    v1 = version_publish(golden_set=golden_set, note="first labels")
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=webhook.url)
    [alert] = alerts_check(evaluation=evaluate(upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4}), v1))
    webhook.statuses.append(503)
    worker.wait_ready()

    # The alert's own task (sent as its transaction committed) tried once; sent again now,
    # straight after the failure, it finds the retry not due.
    wait_until(lambda: WebhookDelivery.objects.filter(status=503).exists(), "the first attempt, answered 503", workers)
    alert_deliver_task.delay(alert.id)
    wait_until(lambda: "succeeded" in worker.log() and "'not due'" in worker.log(), "a second send, found not due", workers)
    message = IncidentMessage.objects.get()
    first = WebhookDelivery.objects.get(status=503)
    # A minute on from the round (claimed just before its POST went out).
    assert abs(message.next_attempt_at - first.sent_at - timedelta(seconds=delivery_backoff_seconds(0))) < timedelta(seconds=1)

    # The sweeper, through the worker, before the minute has passed: nothing goes out.
    send_incident_messages_task.delay()
    passed = re.compile(r"send_incident_messages_task\[[^\]]+\] succeeded in [0-9.e-]+s: \{\}")
    wait_until(lambda: passed.search(worker.log()), "the sweeper's pass that found nothing due", workers)
    assert len(webhook.received) == 1

    IncidentMessage.objects.filter(pk=message.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    send_incident_messages_task.delay()
    wait_until(lambda: IncidentMessage.objects.filter(pk=message.pk, webhook_delivered_at__isnull=False).exists(), "the retry", workers)
    assert [r["json"]["incident"]["id"] for r in webhook.received] == [alert.incident_id] * 2
    assert list(WebhookDelivery.objects.order_by("attempt").values_list("attempt", "status")) == [(1, 503), (2, 200)]
