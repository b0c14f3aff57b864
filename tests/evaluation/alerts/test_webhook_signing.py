"""Alert webhooks receivers can trust and read: Standard Webhooks signatures with a secret per
set shown once, a Slack/Teams `text` line, and the delivery history of the alerts page.

The receiver is a real http.server on 127.0.0.1 (the suite allows 127.0.0.0/8 through
ALERT_WEBHOOK_ALLOWED_NETWORKS); it keeps the raw body, since a signature covers the bytes
sent, not a re-encoding of their JSON. Signatures are checked with the Standard Webhooks
reference library (`standardwebhooks`, a test dependency) as well as Goldset's own verifier.
"""

import base64
import json
import re
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from django.urls import reverse
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from evaluation.alerts.delivery import incident_messages_send_due
from evaluation.alerts.rules import alerts_check
from evaluation.alerts.signing import WebhookSignatureError, webhook_headers, webhook_verify
from evaluation.models import IncidentMessage, WebhookDelivery
from evaluation.selectors import evaluation_settings
from evaluation.settings_service import evaluation_settings_update, webhook_secret_rotate
from evaluation.tasks import alert_deliver_task
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from tests.evaluation.alerts.test_alerts import closed_port
from tests.evaluation.alerts.test_incident_messages import age
from tests.support.factories import alerting_run as upload
from tests.support.factories import alerting_set as make_set
from tests.support.factories import score as evaluate
from tests.support.servers import serve_in_thread

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("alerting", factory="alerting_set", manager="owner")]

SECRET_PATTERN = re.compile(r"whsec_[A-Za-z0-9+/=]{40,}")


@pytest.fixture
def receiver(monkeypatch):
    """A receiver on 127.0.0.1 that keeps each request's raw body and headers and answers the
    statuses queued in `statuses` (then 200)."""
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    received, statuses = [], []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(SimpleNamespace(path=self.path, headers=dict(self.headers), body=body))
            self.send_response(statuses.pop(0) if statuses else 200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = serve_in_thread(server)
    # The path stands for the secret token of a Slack or Teams URL: it must never be recorded.
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_port}/services/T0/B0/token-xyz", received=received, statuses=statuses)
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def v1(golden_set):
    return version_publish(golden_set=golden_set, note="first labels")


def deliver(alert) -> IncidentMessage:
    """Send the alert's message, then each retry as its backoff passes, until nothing is left
    to try (the clock is moved by moving next_attempt_at)."""
    alert_deliver_task.delay(alert.id).get()
    message = IncidentMessage.objects.get(alerts=alert)
    while message.next_attempt_at is not None:
        age(message)
        incident_messages_send_due()
        message.refresh_from_db()
    return message


def raise_alert(golden_set, version):
    run = upload(golden_set, "nightly", ranks={"q17": 4, "q18": 4})
    [alert] = alerts_check(evaluation=evaluate(run, version))
    return alert


def url(name: str) -> str:
    return reverse(name, kwargs={"slug": "alerting"})


# --- signatures --------------------------------------------------------------------------


def test_a_delivered_alert_verifies_with_the_reference_library_and_goldsets_verifier(golden_set, v1, receiver):
    settings = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    assert settings.webhook_secret.startswith("whsec_")
    assert 24 <= len(base64.b64decode(settings.webhook_secret.removeprefix("whsec_"))) <= 64
    alert = raise_alert(golden_set, v1)
    assert alert_deliver_task.delay(alert.id).get() == "delivered"

    [request] = receiver.received
    assert Webhook(settings.webhook_secret).verify(request.body, request.headers)["alerts"][0]["id"] == alert.id
    webhook_verify(secret=settings.webhook_secret, headers=request.headers, body=request.body)
    assert request.headers["webhook-id"] == f"msg_goldset_incident_{alert.incident_id}_1"
    assert request.headers["webhook-timestamp"].isdigit()
    assert request.headers["webhook-signature"].startswith("v1,")


def test_a_tampered_body_or_a_wrong_secret_fails_verification(golden_set, v1, receiver):
    settings = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    alert_deliver_task.delay(raise_alert(golden_set, v1).id).get()
    [request] = receiver.received
    tampered = request.body.replace(b'"value": 0.5', b'"value": 0.9')
    assert tampered != request.body
    other_secret = evaluation_settings_update(golden_set=make_set("other"), user=None, webhook_url=receiver.url).webhook_secret

    for secret, body in [(settings.webhook_secret, tampered), (other_secret, request.body)]:
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(body, request.headers)
        with pytest.raises(WebhookSignatureError):
            webhook_verify(secret=secret, headers=request.headers, body=body)


def test_goldsets_verifier_refuses_an_old_timestamp_and_missing_headers():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    headers = webhook_headers(secret=secret, message_id="msg_1", body=b"{}", timestamp=1_700_000_000)
    webhook_verify(secret=secret, headers=headers, body=b"{}", now=1_700_000_000 + 300)
    with pytest.raises(WebhookSignatureError, match="more than 300 s"):
        webhook_verify(secret=secret, headers=headers, body=b"{}", now=1_700_000_000 + 301)
    with pytest.raises(WebhookSignatureError, match="missing"):
        webhook_verify(secret=secret, headers={"webhook-id": "msg_1"}, body=b"{}")


def test_signatures_match_the_reference_library_and_its_published_example():
    """The reference's sign() and the spec's test vector, byte for byte; a list of several
    signatures (a rotation) verifies when any one is right."""
    from datetime import datetime

    secret, body = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", b'{"test": 2432232314}'
    headers = webhook_headers(secret=secret, message_id="msg_p5jXN8AQM9LWM0D4loKWxJek", body=body, timestamp=1614265330)
    assert headers["webhook-signature"] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    reference = Webhook(secret).sign("msg_p5jXN8AQM9LWM0D4loKWxJek", datetime.fromtimestamp(1614265330, tz=UTC), body.decode())
    assert reference == headers["webhook-signature"]
    rotating = {**headers, "webhook-signature": "v1,bm90IHRoaXMgb25l " + headers["webhook-signature"]}
    webhook_verify(secret=secret, headers=rotating, body=body, now=1614265330)


def test_a_rotated_secret_invalidates_signatures_made_with_the_old_one(golden_set, v1, receiver):
    old = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url).webhook_secret
    new = webhook_secret_rotate(golden_set=golden_set, user=None)
    assert new != old and evaluation_settings(golden_set).webhook_secret == new
    alert_deliver_task.delay(raise_alert(golden_set, v1).id).get()
    [request] = receiver.received
    Webhook(new).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(request.body, request.headers)


def test_retries_keep_the_webhook_id_and_sign_each_attempt(golden_set, v1, receiver):
    settings = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    receiver.statuses.extend([503, 500])
    alert = raise_alert(golden_set, v1)
    message = deliver(alert)
    assert len(receiver.received) == 3
    assert {request.headers["webhook-id"] for request in receiver.received} == {f"msg_goldset_incident_{alert.incident_id}_1"}
    for request in receiver.received:
        Webhook(settings.webhook_secret).verify(request.body, request.headers)
    rows = list(WebhookDelivery.objects.filter(incident_message=message).order_by("attempt").values_list("attempt", "status", "host"))
    assert rows == [(1, 503, "127.0.0.1"), (2, 500, "127.0.0.1"), (3, 200, "127.0.0.1")]


# --- the text line -----------------------------------------------------------------------


@override_settings(SITE_URL="https://goldset.example.com")
def test_the_payload_has_a_slack_and_teams_text_line_linking_to_the_alerts_page(golden_set, v1, receiver):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    alert_deliver_task.delay(raise_alert(golden_set, v1).id).get()
    text = json.loads(receiver.received[0].body)["text"]
    headline, link = text.split("\n")
    for part in [
        "alerting v1",
        "slice under the recall floor",
        "recall@3",
        "query:lang=de",
        "0.500 vs 0.750",
        "-25.0 points",
        "run nightly",
    ]:
        assert part in headline
    assert link == "https://goldset.example.com/sets/alerting/alerts/"


# --- delivery history and the test event ------------------------------------------------


def test_every_attempt_is_recorded_with_the_host_only_refused_addresses_included(golden_set, v1, receiver):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    with override_settings(ALERT_WEBHOOK_ALLOWED_NETWORKS=[]):
        alert_deliver_task.delay(raise_alert(golden_set, v1).id).get()
    [row] = WebhookDelivery.objects.all()
    assert (row.host, row.status, row.error, row.shown_error, row.attempt) == ("127.0.0.1", None, "refused address", "unreachable", 1)
    assert receiver.received == []


def test_an_unreachable_receiver_is_recorded_with_its_error_class(golden_set, v1):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=f"http://127.0.0.1:{closed_port()}/hook")
    deliver(raise_alert(golden_set, v1))
    rows = list(WebhookDelivery.objects.order_by("attempt"))
    assert len(rows) == 6 and {row.error for row in rows} == {"ConnectionRefusedError"} and rows[-1].attempt == 6


def test_managers_see_the_history_on_the_alerts_page_without_the_urls_path(client, golden_set, v1, owner, receiver):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    receiver.statuses.append(500)
    deliver(raise_alert(golden_set, v1))
    client.force_login(owner)
    body = client.get(url("alerts")).content.decode()
    assert "Webhook deliveries" in body and "HTTP 500" in body and "HTTP 200" in body
    assert body.count("<code>127.0.0.1</code>") == 2 and "token-xyz" not in body


def test_the_history_costs_the_same_queries_for_many_deliveries(client, golden_set, v1, owner, receiver, django_assert_max_num_queries):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    receiver.statuses.extend([500] * 5)
    deliver(raise_alert(golden_set, v1))
    client.force_login(owner)
    with django_assert_max_num_queries(12):
        assert client.get(url("alerts")).status_code == 200


def test_a_manager_sends_a_signed_test_event_through_the_same_path(client, golden_set, owner, receiver):
    settings = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    client.force_login(owner)
    response = client.post(url("webhook_test"), follow=True)
    assert "Test event delivered" in response.content.decode()
    [request] = receiver.received
    payload = Webhook(settings.webhook_secret).verify(request.body, request.headers)
    assert payload["type"] == "test" and "alerting" in payload["text"]
    [row] = WebhookDelivery.objects.all()
    assert (row.alert, row.status, row.message_id) == (None, 200, request.headers["webhook-id"])
    assert "test event" in response.content.decode()


def test_a_test_event_without_a_webhook_url_says_so(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(url("webhook_test"), follow=True)
    assert "No webhook URL is set" in response.content.decode() and not WebhookDelivery.objects.exists()


# --- permissions -------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
def test_only_managers_see_the_history_and_may_rotate_or_test(client, golden_set, v1, teammate, receiver, role):
    evaluation_settings_update(golden_set=golden_set, user=None, webhook_url=receiver.url)
    alert_deliver_task.delay(raise_alert(golden_set, v1).id).get()
    secret = evaluation_settings(golden_set).webhook_secret
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    alerts = client.get(url("alerts"))
    if role == Membership.Role.ADJUDICATOR:  # reads alerts, not their delivery
        assert alerts.status_code == 200 and "Webhook deliveries" not in alerts.content.decode()
    assert client.post(url("webhook_test")).status_code == 404
    assert client.post(url("webhook_secret_rotate")).status_code == 404
    assert evaluation_settings(golden_set).webhook_secret == secret and len(receiver.received) == 1


def test_strangers_and_anonymous_visitors_may_not_rotate_or_test(client, golden_set, stranger):
    for name in ["webhook_test", "webhook_secret_rotate"]:
        assert client.post(url(name)).status_code == 302  # to log in
        client.force_login(stranger)
        assert client.post(url(name)).status_code == 404
        client.logout()


def test_rotating_and_testing_answer_only_posts(client, golden_set, owner):
    client.force_login(owner)
    for name in ["webhook_test", "webhook_secret_rotate"]:
        assert client.get(url(name)).status_code == 405


# --- shown once ---------------------------------------------------------------------------


def test_the_secret_is_shown_once_right_after_creation_and_never_again(client, golden_set, owner, make_user):
    client.force_login(owner)
    response = client.post(
        url("evaluation_settings"),
        {
            "metrics": "",
            "run_depth_cap": "1000",
            "alert_drop_points": "3",
            "alert_slice_floor": "0.75",
            "alert_rerank_loss_points": "10",
            "age_buckets": "",
            "completeness_depth": "100",
            "judged_floor": "0.9",
            "min_queries_per_slice": "30",
            "alert_emails": "",
            "webhook_url": "https://hooks.example.com/services/T0/B0/x",
            "failing_share": "0.05",
            "series_rescore_nights": "8",
            "series_keep_days": "90",
        },
    )
    secret = evaluation_settings(golden_set).webhook_secret
    assert response.status_code == 200 and SECRET_PATTERN.findall(response.content.decode()) == [secret]

    later = [
        client.get(url("evaluation_settings")),
        client.get(url("alerts")),
        client.get(reverse("golden_set", args=["alerting"])),
        client.get(reverse("api_golden_set", args=["alerting"])),
    ]
    staff = make_user("staff", is_staff=True, is_superuser=True)
    client.force_login(staff)
    settings_pk = evaluation_settings(golden_set).pk
    later += [
        client.get(reverse("admin:evaluation_evaluationsettings_change", args=[settings_pk])),
        client.get(reverse("admin:evaluation_evaluationsettings_changelist")),
    ]
    for page in later:
        assert page.status_code == 200, page.request["PATH_INFO"]
        assert secret not in page.content.decode() and not SECRET_PATTERN.search(page.content.decode())
    assert "Set, created" in later[0].content.decode()


def test_rotating_shows_the_new_secret_once(client, golden_set, owner):
    old = evaluation_settings_update(golden_set=golden_set, user=None, webhook_url="https://hooks.example.com/x").webhook_secret
    client.force_login(owner)
    response = client.post(url("webhook_secret_rotate"))
    new = evaluation_settings(golden_set).webhook_secret
    assert new != old and SECRET_PATTERN.findall(response.content.decode()) == [new]
    assert "no-store" in response["Cache-Control"]
    assert new not in client.get(url("evaluation_settings")).content.decode()


# --- the migration -----------------------------------------------------------------------


def test_the_models_and_migrations_agree():
    call_command("makemigrations", "evaluation", "--check", "--dry-run", verbosity=0)


@pytest.mark.whole_system
@pytest.mark.django_db(transaction=True)
def test_the_migration_adds_the_secret_and_history_and_reverses_cleanly():
    executor = MigrationExecutor(connection)
    executor.migrate([("evaluation", "0007_series_and_monitoring_alerts")])
    tables = connection.introspection.table_names()
    assert "evaluation_webhookdelivery" not in tables
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert "evaluation_webhookdelivery" in connection.introspection.table_names()
    with connection.cursor() as cursor:
        columns = {column.name for column in connection.introspection.get_table_description(cursor, "evaluation_evaluationsettings")}
    assert {"webhook_secret", "webhook_secret_created_at"} <= columns
