"""Delivery of an alert: e-mail to the settings' addresses and the set's managers, and a JSON
POST to the set's webhook when one is set. alert_deliver_task (evaluation.tasks) runs both
once the alert's transaction commits, and retries what failed for a reason that may pass
with backoff, up to 5 times. What was delivered is recorded on the alert and never sent
again; a worker that dies between sending and recording may send once more, so the webhook
payload carries the alert's id.
"""

import json
import logging

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Alert, EvaluationSettings
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
        get_user_model().objects.filter(
            memberships__golden_set=golden_set, memberships__role=Membership.Role.MANAGER, is_active=True
        )
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    recipients: dict[str, str] = {}
    for address in [*settings.alert_emails, *managers]:
        recipients.setdefault(address.lower(), address)
    return list(recipients.values())


def alert_payload(alert: Alert) -> dict:
    """The alert as the webhook receives it. `value` and `reference` are fractions; `id` lets a
    receiver drop a repeat (a delivery cut off after the POST but before it was recorded)."""
    return {
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


def alert_webhook_post(*, alert: Alert, url: str) -> str:
    """POST the alert as JSON to `url` unless it was delivered already, and record the attempt
    (webhook_attempts, webhook_error, webhook_delivered_at). Returns a WebhookOutcome."""
    if alert.webhook_delivered_at is not None:
        return WebhookOutcome.DELIVERED
    body = json.dumps(alert_payload(alert)).encode()
    alert.webhook_attempts += 1
    outcome = WebhookOutcome.REFUSED
    headers = {"Content-Type": "application/json", "User-Agent": "Goldset-alerts", "X-Goldset-Alert-Id": str(alert.id)}
    try:
        # Resolved, checked against internal and metadata addresses, and connected to as
        # checked, at send time (lib.outbound); redirects are answered, never followed.
        response = outbound.post(url, body, headers, timeout=WEBHOOK_TIMEOUT_SECONDS,
                                 allowed_networks=django_settings.ALERT_WEBHOOK_ALLOWED_NETWORKS)
    except outbound.OutboundRefused as exc:
        logger.warning("alert %s: webhook %s refused: %s", alert.id, url, exc.detail)
        alert.webhook_error = outbound.UNREACHABLE
    except ConnectionError:  # no answer, refused, reset, timed out, TLS, DNS: may pass
        alert.webhook_error = outbound.UNREACHABLE
        outcome = WebhookOutcome.RETRY
    else:
        if 200 <= response.status < 300:
            alert.webhook_delivered_at = timezone.now()
            alert.webhook_error = ""
            outcome = WebhookOutcome.DELIVERED
        else:
            # Only the status goes into the record: the body of an arbitrary URL is not ours to show.
            alert.webhook_error = f"HTTP {response.status} {response.reason}"
            if response.status >= 500 or response.status in _TRANSIENT_STATUSES:
                outcome = WebhookOutcome.RETRY
    alert.save(update_fields=["webhook_attempts", "webhook_delivered_at", "webhook_error"])
    return outcome


def delivery_backoff_seconds(retries: int) -> int:
    """Seconds before retry number `retries` + 1: 1, 2, 4, 8 then 16 minutes."""
    return 60 * 2**retries
