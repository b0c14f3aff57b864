"""Delivery of an incident message (evaluation.alerts.messages): one e-mail to the settings'
addresses and the set's managers, and one JSON POST to the set's webhook when one is set.

When a message goes. Alerts gather in their incident's open message (evaluation.alerts.
incidents); it is sent once it is *gathered*: no evaluation is still pending or running on a
version or run of its alerts (a publish's fan-out finishes in any order over minutes, and
the last one to finish completes the message), or GATHER_LIMIT after it was opened, so that a
stuck evaluation delays the page by minutes, not forever. alert_deliver_task (evaluation.
tasks) tries as soon as an alert's transaction commits; incident_messages_send_due, on the
beat (and the web process's in-process beat when there is no broker), sends the rest.

Retries. A round that fails for a reason that may pass (network error, timeout, 5xx, 408,
425, 429, an SMTP error) sets the message's next_attempt_at 1, 2, 4, 8 then 16 minutes on
(delivery_backoff_seconds); only the sweeper sends it again, when that time has come, with a
worker or without one: a retry never goes out milliseconds after the failure. After
DELIVERY_MAX_RETRIES retries it is given up (gave_up_at). What was delivered (emailed_at,
webhook_delivered_at) is never sent again; a worker that dies between sending and recording
may send once more, so the `webhook-id` header is the same on every attempt of a message.

Every POST is signed the Standard Webhooks way with the set's secret (evaluation.alerts.signing)
and recorded as a WebhookDelivery (host, status or error class, duration), refused addresses
included; the test event of the alerts page goes through the same `_webhook_attempt`.
"""

import json
import logging
import smtplib
import time
import uuid
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.alerts.messages import (
    alerts_page_url,
    incident_message_id,
    message_alerts,
    message_payload,
    message_subject,
    message_text,
)
from evaluation.alerts.signing import webhook_headers
from evaluation.models import Alert, Evaluation, EvaluationSettings, Incident, IncidentMessage, WebhookDelivery
from evaluation.selectors import evaluation_settings
from goldenset.models import GoldenSet, Membership
from goldenset.selectors import holders_of
from lib import outbound

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 10
DELIVERY_MAX_RETRIES = 5
# Answers worth trying again: the receiver is down, overloaded or asks us to slow down.
# Any other 3xx or 4xx means the URL or the receiver is wrong, and retrying cannot help.
_TRANSIENT_STATUSES = {408, 425, 429}
# A message waits for the evaluations of its alerts at most this long (see the docstring).
GATHER_LIMIT = timedelta(minutes=10)


def alert_recipients(golden_set: GoldenSet, settings: EvaluationSettings) -> list[str]:
    """The settings' addresses, then the set's active managers who have one; each once."""
    managers = (
        get_user_model()
        .objects.filter(holders_of(golden_set, [Membership.Role.MANAGER]), is_active=True)
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    recipients: dict[str, str] = {}
    for address in [*settings.alert_emails, *managers]:
        recipients.setdefault(address.lower(), address)
    return list(recipients.values())


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
    incident_message: IncidentMessage | None,
) -> tuple[str, str]:
    """POST `body`, signed when the set has a secret, to the set's webhook once; record it as a
    WebhookDelivery. Returns (WebhookOutcome, error as the message records it, "" when delivered)."""
    headers = {"Content-Type": "application/json", "User-Agent": "Goldset-alerts"}
    if incident_message is not None:
        headers["X-Goldset-Incident-Id"] = str(incident_message.incident_id)
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
        incident_message=incident_message,
        message_id=message_id,
        attempt=attempt,
        sent_at=sent_at,
        host=(urlsplit(settings.webhook_url).hostname or "")[:255],
        status=status,
        error=error_class[:100],
        duration_ms=round((time.monotonic() - started) * 1000),
    )
    return outcome, error


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
        incident_message=None,
    )


def delivery_backoff_seconds(retries: int) -> int:
    """Seconds before retry number `retries` + 1: 1, 2, 4, 8 then 16 minutes."""
    return 60 * 2**retries


# --- incident messages -------------------------------------------------------------------


class SendResult:
    GONE = "gone"
    GATHERING = "gathering"  # evaluations of its alerts are still running
    NOT_DUE = "not due"  # a failed round waits for next_attempt_at
    DONE = "done"  # delivered (or refused, or given up) before
    SILENCED = "silenced"  # acknowledged or muted before it went: nobody is paged
    DELIVERED = "delivered"
    RETRY = "retry"  # a round failed; next_attempt_at says when the sweeper tries again
    GAVE_UP = "gave up"


def message_gathered(message: IncidentMessage, now: datetime) -> bool:
    """Whether the message's alerts are all in: no evaluation of a version or run of its
    alerts is pending or running, or GATHER_LIMIT has passed since the message was opened."""
    if message.created_at + GATHER_LIMIT <= now:
        return True
    scored = Alert.objects.filter(incident_message=message).exclude(run=None)
    busy = Evaluation.objects.filter(status__in=Evaluation.ACTIVE).filter(
        Q(version_id__in=scored.values("version_id")) | Q(run_id__in=scored.values("run_id"))
    )
    return not busy.exists()


def _round_claim(message_id: int, now: datetime) -> tuple[IncidentMessage | None, str]:
    """Lock the message and, when a round is due, claim it: close the message (its first
    round) and move next_attempt_at past this round's backoff, so that a sender beside this
    one finds it not due. Returns (the claimed message or None, the SendResult)."""
    message = (
        IncidentMessage.objects.select_for_update(of=("self",))
        .select_related("incident__golden_set", "incident__owner")
        .filter(pk=message_id)
        .first()
    )
    if message is None:
        return None, SendResult.GONE
    fields = ["rounds", "next_attempt_at"]
    if message.closed_at is None:
        if not message_gathered(message, now):
            return None, SendResult.GATHERING
        message.closed_at = now
        fields.append("closed_at")
        incident = message.incident
        silenced = incident.state == Incident.State.ACKNOWLEDGED or (
            incident.state == Incident.State.MUTED and incident.muted_until is not None and incident.muted_until > now
        )
        if silenced or not message.alerts.exists():
            message.save(update_fields=["closed_at"])
            return None, SendResult.SILENCED
    elif message.next_attempt_at is None:
        return None, SendResult.DONE
    elif message.next_attempt_at > now:
        return None, SendResult.NOT_DUE
    message.rounds += 1
    message.next_attempt_at = now + timedelta(seconds=delivery_backoff_seconds(message.rounds - 1))
    message.save(update_fields=fields)
    return message, ""


def incident_message_send(*, message_id: int) -> str:
    """Send the message's e-mail and webhook POST when a round is due (see the module
    docstring), record what happened, and return a SendResult. Idempotent and safe to call
    from several workers at once: a round is claimed under the message's lock."""
    now = timezone.now()
    with transaction.atomic():
        message, result = _round_claim(message_id, now)
    if message is None:
        return result
    golden_set = message.incident.golden_set
    settings = evaluation_settings(golden_set)
    alerts = message_alerts(message)
    failed = []
    if message.emailed_at is None:
        try:
            if _email_send(message, alerts, settings):
                message.emailed_at = timezone.now()
        except (smtplib.SMTPException, OSError) as exc:
            logger.warning("incident message %s: e-mail failed: %s", message.pk, exc)
            failed.append("e-mail")
    if settings.webhook_url and message.webhook_delivered_at is None and not message.webhook_error.startswith(_REFUSED):
        body = json.dumps(message_payload(message, alerts)).encode()
        message.webhook_attempts += 1
        outcome, error = _webhook_attempt(
            golden_set=golden_set,
            settings=settings,
            message_id=incident_message_id(message),
            attempt=message.webhook_attempts,
            body=body,
            incident_message=message,
        )
        message.webhook_error = error
        if outcome == WebhookOutcome.DELIVERED:
            message.webhook_delivered_at = timezone.now()
        elif outcome == WebhookOutcome.RETRY:
            failed.append("webhook")
        else:
            logger.error("incident message %s: webhook refused, not retried: %s", message.pk, error)
            message.webhook_error = f"{_REFUSED}{error}"
    result = SendResult.DELIVERED
    if not failed:
        message.next_attempt_at = None
    elif message.rounds > DELIVERY_MAX_RETRIES:
        logger.error("incident message %s: gave up on %s after %d retries", message.pk, " and ".join(failed), message.rounds - 1)
        message.next_attempt_at, message.gave_up_at, result = None, timezone.now(), SendResult.GAVE_UP
    else:
        result = SendResult.RETRY
    message.save(update_fields=["emailed_at", "webhook_attempts", "webhook_error", "webhook_delivered_at", "next_attempt_at", "gave_up_at"])
    return result


# A refused POST (a 4xx, a forbidden address) is not sent again in a later round.
_REFUSED = "refused: "


def _email_send(message: IncidentMessage, alerts: list[Alert], settings: EvaluationSettings) -> bool:
    """E-mail the message; False when nobody is there to receive it. SMTP errors propagate."""
    recipients = alert_recipients(message.incident.golden_set, settings)
    if not recipients:
        return False
    send_mail(message_subject(message, alerts), message_text(message, alerts), None, recipients)
    return True


def incident_messages_due(now: datetime | None = None) -> list[int]:
    """Ids of the messages a send may be due for: still gathering, or a failed round whose
    next_attempt_at has come. incident_message_send decides, under the message's lock."""
    now = now or timezone.now()
    return list(
        IncidentMessage.objects.filter(Q(closed_at=None) | Q(next_attempt_at__lte=now))
        .order_by("next_attempt_at", "id")
        .values_list("id", flat=True)
    )


def incident_messages_release(*, version_id: int) -> list[str]:
    """Send the gathering messages with alerts scored on the version, now that one of its
    evaluations finished: the last of a publish's fan-out completes them, whether or not it
    raised an alert itself. Returns each one's SendResult."""
    gathering = IncidentMessage.objects.filter(closed_at=None, alerts__version_id=version_id).distinct()
    return [incident_message_send(message_id=pk) for pk in gathering.values_list("id", flat=True)]


def incident_messages_send_due() -> dict[str, int]:
    """Send every message that is due; returns how many ended how ({SendResult: count})."""
    counts: dict[str, int] = {}
    for message_id in incident_messages_due():
        result = incident_message_send(message_id=message_id)
        counts[result] = counts.get(result, 0) + 1
    return counts
