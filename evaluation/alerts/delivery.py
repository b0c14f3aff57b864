"""Delivery of an alert: e-mail to the settings' addresses and the set's managers, and a JSON
POST to the set's webhook when one is set. alert_deliver_task (evaluation.tasks) runs both
once the alert's transaction commits, and retries what failed for a reason that may pass
with backoff, up to 5 times. What was delivered is recorded on the alert and never sent
again; a worker that dies between sending and recording may send once more, so the webhook
payload carries the alert's id, and its `webhook-id` header is the same on every attempt.

Every POST is signed the Standard Webhooks way with the set's secret (evaluation.alerts.signing)
and recorded as a WebhookDelivery (host, status or error class, duration), refused addresses
included; the test event of the alerts page goes through the same `_webhook_attempt`.
"""

import json
import logging
import time
import uuid
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from evaluation.alerts.signing import webhook_headers
from evaluation.models import Alert, EvaluationSettings, WebhookDelivery
from goldenset.models import GoldenSet, Membership
from lib import outbound

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 10
DELIVERY_MAX_RETRIES = 5
# Answers worth trying again: the receiver is down, overloaded or asks us to slow down.
# Any other 3xx or 4xx means the URL or the receiver is wrong, and retrying cannot help.
_TRANSIENT_STATUSES = {408, 425, 429}


def alert_recipients(golden_set: GoldenSet, settings: EvaluationSettings) -> list[str]:
    """The settings' addresses, then the set's active managers who have one; each once."""
    managers = (
        get_user_model()
        .objects.filter(memberships__golden_set=golden_set, memberships__role=Membership.Role.MANAGER, is_active=True)
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    recipients: dict[str, str] = {}
    for address in [*settings.alert_emails, *managers]:
        recipients.setdefault(address.lower(), address)
    return list(recipients.values())


def alerts_page_url(golden_set: GoldenSet) -> str:
    """The absolute address of the set's alerts page (settings.SITE_URL)."""
    return django_settings.SITE_URL + reverse("alerts", kwargs={"slug": golden_set.slug})


def alert_text(alert: Alert) -> str:
    """Two lines for a chat channel (Slack's and Teams' incoming webhooks show `text`):
    what fell where, against what, and a link to the set's alerts page."""
    where = f"run {alert.run.name} ({alert.run.system}, {alert.run.stage})" if alert.run else f"endpoint {alert.subject}"
    figure = f"{alert.metric}{' in slice ' + alert.slice if alert.slice else ''} = {alert.value:.3f}"
    if alert.reference is not None:
        figure += f" vs {alert.reference:.3f} ({(alert.value - alert.reference) * 100:+.1f} points)"
    headline = f"Goldset alert on {alert.golden_set.slug} v{alert.version.number}: {alert.get_kind_display()}, {figure}, {where}"
    return f"{' '.join(headline.split())}\n{alerts_page_url(alert.golden_set)}"


def alert_message_id(alert: Alert) -> str:
    """The alert's `webhook-id`: derived from its id, so every retry carries the same one."""
    return f"msg_goldset_alert_{alert.id}"


def alert_payload(alert: Alert) -> dict:
    """The alert as the webhook receives it. `value` and `reference` are fractions; `id` lets a
    receiver drop a repeat (a delivery cut off after the POST but before it was recorded);
    `text` is the same alert in two lines for Slack and Teams."""
    return {
        "text": alert_text(alert),
        "id": alert.id,
        "kind": alert.kind,
        "metric": alert.metric,
        "slice": alert.slice,
        "value": alert.value,
        "reference": alert.reference,
        "message": alert.message,
        "golden_set": alert.golden_set.slug,
        "version": {"number": alert.version.number, "content_hash": alert.version.content_hash},
        "run": {"name": alert.run.name, "system": alert.run.system, "stage": alert.run.stage} if alert.run else None,
        "endpoint": alert.subject or None,
        "canary": {"query_id": alert.canary.query.query_id, "doc_id": alert.canary.page.doc_id} if alert.canary else None,
        "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
        "created_at": alert.created_at.isoformat(),
    }


def alert_email_send(*, alert: Alert, settings: EvaluationSettings) -> bool:
    """E-mail the alert (Django's mail settings) unless it was already; record `emailed_at`.

    Returns True when the alert has been e-mailed (now or before), False when nobody is
    there to receive it. SMTP errors propagate, for the task to retry.
    """
    if alert.emailed_at is not None:
        return True
    recipients = alert_recipients(alert.golden_set, settings)
    if not recipients:
        return False
    version, run = alert.version, alert.run
    about = f"run {run.name}" if run else f"endpoint {alert.subject}"
    subject = f"[Goldset] {alert.golden_set.slug} v{version.number}, {about}: {alert.get_kind_display()}"
    subject = " ".join(subject.split())  # a line break in a run name would make send_mail refuse the header
    lines = [
        alert.message,
        "",
        f"Golden set: {alert.golden_set.name} ({alert.golden_set.slug})",
        f"Version:    v{version.number} ({version.content_hash})",
        f"Run:        {run.name} (system {run.system}, stage {run.stage})" if run else f"Endpoint:   {alert.subject}",
        f"Metric:     {alert.metric}{' in slice ' + alert.slice if alert.slice else ''}",
        f"Value:      {alert.value:.3f}" + (f" (compared with {alert.reference:.3f})" if alert.reference is not None else ""),
        "",
        f"Every alert of the set: {reverse('alerts', kwargs={'slug': alert.golden_set.slug})}",
    ]
    send_mail(subject, "\n".join(lines), None, recipients)
    alert.emailed_at = timezone.now()
    alert.save(update_fields=["emailed_at"])
    return True


class WebhookOutcome:
    DELIVERED = "delivered"  # now or before
    RETRY = "retry"  # a failure that may pass: network error, timeout, 5xx, 408, 425, 429
    REFUSED = "refused"  # any other 3xx or 4xx: the URL or the receiver is wrong, retrying cannot help


def _webhook_attempt(
    *,
    golden_set: GoldenSet,
    settings: EvaluationSettings,
    message_id: str,
    attempt: int,
    body: bytes,
    alert: Alert | None,
) -> tuple[str, str]:
    """POST `body`, signed when the set has a secret, to the set's webhook once; record it as a
    WebhookDelivery. Returns (WebhookOutcome, error as the alert records it, "" when delivered)."""
    headers = {"Content-Type": "application/json", "User-Agent": "Goldset-alerts"}
    if alert is not None:
        headers["X-Goldset-Alert-Id"] = str(alert.id)
    if settings.webhook_secret:
        headers.update(webhook_headers(secret=settings.webhook_secret, message_id=message_id, body=body))
    outcome, error, status, error_class = WebhookOutcome.REFUSED, outbound.UNREACHABLE, None, ""
    sent_at, started = timezone.now(), time.monotonic()
    try:
        # Resolved, checked against internal and metadata addresses, and connected to as
        # checked, at send time (lib.outbound); redirects are answered, never followed.
        response = outbound.post(
            settings.webhook_url,
            body,
            headers,
            timeout=WEBHOOK_TIMEOUT_SECONDS,
            allowed_networks=django_settings.ALERT_WEBHOOK_ALLOWED_NETWORKS,
        )
    except outbound.OutboundRefused as exc:
        logger.warning("%s: webhook %s refused: %s", message_id, settings.webhook_url, exc.detail)
        error_class = "refused address"
    except ConnectionError as exc:  # no answer, refused, reset, timed out, TLS, DNS: may pass
        outcome = WebhookOutcome.RETRY
        error_class = type(exc.__cause__ or exc).__name__
    else:
        status = response.status
        if 200 <= response.status < 300:
            outcome, error = WebhookOutcome.DELIVERED, ""
        else:
            # Only the status goes into the record: the body of an arbitrary URL is not ours to show.
            error = f"HTTP {response.status} {response.reason}"
            if response.status >= 500 or response.status in _TRANSIENT_STATUSES:
                outcome = WebhookOutcome.RETRY
    WebhookDelivery.objects.create(
        golden_set=golden_set,
        alert=alert,
        message_id=message_id,
        attempt=attempt,
        sent_at=sent_at,
        host=(urlsplit(settings.webhook_url).hostname or "")[:255],
        status=status,
        error=error_class[:100],
        duration_ms=round((time.monotonic() - started) * 1000),
    )
    return outcome, error


def alert_webhook_post(*, alert: Alert, settings: EvaluationSettings) -> str:
    """POST the alert as signed JSON to the set's webhook unless it was delivered already, and
    record the attempt (webhook_attempts, webhook_error, webhook_delivered_at, a
    WebhookDelivery). Returns a WebhookOutcome."""
    if alert.webhook_delivered_at is not None:
        return WebhookOutcome.DELIVERED
    body = json.dumps(alert_payload(alert)).encode()
    alert.webhook_attempts += 1
    outcome, alert.webhook_error = _webhook_attempt(
        golden_set=alert.golden_set,
        settings=settings,
        message_id=alert_message_id(alert),
        attempt=alert.webhook_attempts,
        body=body,
        alert=alert,
    )
    if outcome == WebhookOutcome.DELIVERED:
        alert.webhook_delivered_at = timezone.now()
    alert.save(update_fields=["webhook_attempts", "webhook_delivered_at", "webhook_error"])
    return outcome


def webhook_test_send(*, golden_set: GoldenSet, settings: EvaluationSettings) -> tuple[str, str]:
    """POST a signed test event to the set's webhook now, once, through the same path as an
    alert (recorded as a WebhookDelivery without an alert). Returns (WebhookOutcome, error)."""
    body = json.dumps(
        {
            "type": "test",
            "text": f"Goldset test event for {golden_set.slug}: this webhook receives its alerts.\n{alerts_page_url(golden_set)}",
            "golden_set": golden_set.slug,
            "created_at": timezone.now().isoformat(),
        }
    ).encode()
    return _webhook_attempt(
        golden_set=golden_set,
        settings=settings,
        message_id=f"msg_goldset_test_{uuid.uuid4().hex}",
        attempt=1,
        body=body,
        alert=None,
    )


def delivery_backoff_seconds(retries: int) -> int:
    """Seconds before retry number `retries` + 1: 1, 2, 4, 8 then 16 minutes."""
    return 60 * 2**retries
