"""Finding 8 of the hardening probe: a manager could point alert webhooks at 127.0.0.1:6379,
[::1], 169.254.169.254 or metadata.google.internal; the worker connected to Redis, and the
alerts page told closed ports from open ones.

The receivers here are real servers on 127.0.0.1. With no network allowed (a deployment's
default), the alert's POST never reaches them, and the record says what it says for any
receiver that does not answer; with 127.0.0.0/8 allowed (the suite's setting, a deployment
with its own internal receiver) the same alert is delivered."""

import pytest
from django.test import override_settings

from evaluation.alerts.delivery import SendResult, incident_messages_send_due
from evaluation.models import IncidentMessage, WebhookDelivery
from evaluation.settings_service import evaluation_settings_update
from evaluation.tasks import alert_deliver_task
from lib.errors import GoldsetError
from lib.outbound import UNREACHABLE
from tests.evaluation.alerts.test_alerts import closed_port
from tests.evaluation.alerts.test_incident_messages import age, slice_alert, v1, webhook  # noqa: F401
from tests.support.fixtures import golden_set  # noqa: F401 - the shared one, not the API tests' set of tests/hardening/conftest.py

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set(factory="alerting_set")]  # the alerting set of test_alerts


@override_settings(ALERT_WEBHOOK_ALLOWED_NETWORKS=[])
def test_a_webhook_on_an_internal_address_is_never_connected_to(golden_set, v1, webhook):  # noqa: F811
    alert = slice_alert(golden_set, v1, webhook_url=webhook.url)
    assert alert_deliver_task.delay(alert.id).get() == SendResult.DELIVERED  # nothing left to try
    message = IncidentMessage.objects.get()
    assert webhook.received == []
    assert (message.webhook_attempts, message.webhook_error, message.webhook_delivered_at) == (1, f"refused: {UNREACHABLE}", None)


@override_settings(ALERT_WEBHOOK_ALLOWED_NETWORKS=[])
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "http://[::1]:6379/",
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://localhost:5432/",
    ],
)
def test_redis_the_metadata_service_and_loopback_are_refused_with_one_text(golden_set, v1, url):  # noqa: F811
    alert = slice_alert(golden_set, v1, webhook_url=url)
    alert_deliver_task.delay(alert.id).get()
    message = IncidentMessage.objects.get()
    assert message.webhook_error == f"refused: {UNREACHABLE}" and message.webhook_delivered_at is None


def test_an_open_and_a_closed_port_read_the_same_on_the_record(golden_set, v1, webhook):  # noqa: F811
    """The port-scanner test: an allowed receiver that is down reads like a refused one."""
    alert = slice_alert(golden_set, v1, webhook_url=f"http://127.0.0.1:{closed_port()}/hook")
    alert_deliver_task.delay(alert.id).get()
    closed = IncidentMessage.objects.get().webhook_error
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=webhook.url)
    age(IncidentMessage.objects.get())
    with override_settings(ALERT_WEBHOOK_ALLOWED_NETWORKS=[]):
        incident_messages_send_due()
    refused = IncidentMessage.objects.get().webhook_error
    assert closed == UNREACHABLE and refused == f"refused: {UNREACHABLE}" and webhook.received == []
    # The delivery history shows managers the same for both (the exact class is for staff, in the admin).
    page_errors = {delivery.shown_error for delivery in WebhookDelivery.objects.all()}
    assert page_errors == {"unreachable"}


def test_an_allowed_internal_receiver_gets_the_alert(golden_set, v1, webhook):  # noqa: F811
    alert = slice_alert(golden_set, v1, webhook_url=webhook.url)
    assert alert_deliver_task.delay(alert.id).get() == SendResult.DELIVERED
    assert len(webhook.received) == 1


def test_a_webhook_url_with_credentials_is_refused_when_saved(golden_set):  # noqa: F811
    with pytest.raises(GoldsetError, match="may not carry a user name or password"):
        evaluation_settings_update(golden_set=golden_set, user=None, webhook_url="http://user:secret@hooks.example.com/x")
