"""What one incident message says: its e-mail and its webhook payload (reads only; sending is
evaluation.alerts.delivery).

A message lists the alerts that joined its incident since the previous message: the worst
first (the largest fall from its reference, in points), then the other whole-set alerts one a
line, then the slice alerts folded by kind and metric ("and 6 slices: query:lang=de -25.0,
..."), so a bad night reads as a handful of lines, not one message per figure. Canary alerts
keep their own message, which names the canary's query and page and, for a probe, its ranks
on the last probes.
"""

from collections import defaultdict

from django.conf import settings as django_settings
from django.urls import reverse

from evaluation.models import Alert, Incident, IncidentMessage

# Slices named one by one in a folded line; the rest are counted.
SLICES_NAMED = 8


def alerts_page_url(golden_set) -> str:
    """The absolute address of the set's alerts page (settings.SITE_URL)."""
    return django_settings.SITE_URL + reverse("alerts", kwargs={"slug": golden_set.slug})


def incident_message_id(message: IncidentMessage) -> str:
    """The message's Standard Webhooks `webhook-id`: derived from its id, the same on every retry."""
    return f"msg_goldset_incident_{message.incident_id}_{message.number}"


def message_alerts(message: IncidentMessage) -> list[Alert]:
    """The message's alerts, worst first: by fall from the reference (most points first), then
    alerts without a reference, then by id."""
    alerts = list(message.alerts.select_related("version", "run", "canary__query", "canary__page").order_by("id"))
    return sorted(alerts, key=_severity)


def _severity(alert: Alert) -> tuple:
    if alert.reference is None:
        return (1, 0.0, alert.id)
    return (0, alert.value - alert.reference, alert.id)


def _delta(alert: Alert) -> str:
    return "" if alert.reference is None else f" {(alert.value - alert.reference) * 100:+.1f}"


def _line(alert: Alert) -> str:
    where = f" in slice {alert.slice}" if alert.slice else ""
    figure = f"{alert.metric}{where} = {alert.value:.3f}"
    if alert.reference is not None:
        figure += f" vs {alert.reference:.3f} ({(alert.value - alert.reference) * 100:+.1f} points)"
    return f"{alert.get_kind_display()}: {figure}. {alert.message}"


def message_lines(alerts: list[Alert]) -> list[str]:
    """The alerts as the e-mail and the webhook's `text` list them: the worst, the other
    whole-set alerts, then each (kind, metric)'s slices folded into one line."""
    if not alerts:
        return []
    worst, rest = alerts[0], alerts[1:]
    lines = [_line(worst)]
    folded: dict[tuple[str, str], list[Alert]] = defaultdict(list)
    for alert in rest:
        if alert.slice:
            folded[(alert.get_kind_display(), alert.metric)].append(alert)
        else:
            lines.append(_line(alert))
    for (kind, metric), group in folded.items():
        named = ", ".join(f"{a.slice}{_delta(a)}" for a in group[:SLICES_NAMED])
        more = f" and {len(group) - SLICES_NAMED} more" if len(group) > SLICES_NAMED else ""
        lines.append(f"and {len(group)} {'slice' if len(group) == 1 else 'slices'} ({kind}, {metric}): {named}{more}")
    return lines


def message_subject(message: IncidentMessage, alerts: list[Alert]) -> str:
    incident = message.incident
    what = "opened" if message.number == 1 else f"update {message.number}"
    count = f"{len(alerts)} alert{'' if len(alerts) == 1 else 's'}"
    subject = f"[Goldset] {incident.golden_set.slug}: incident {incident.pk} {what} ({incident.subject}, {count}): {incident.title}"
    return " ".join(subject.split())[:250]  # a line break in a run name would make send_mail refuse the header


def message_text(message: IncidentMessage, alerts: list[Alert]) -> str:
    """The e-mail's body, and (first line and link) the webhook's `text` for Slack and Teams."""
    incident = message.incident
    lines = [
        f"Goldset incident {incident.pk} on {incident.golden_set.slug} ({incident.get_kind_display()} {incident.subject}), "
        f"{incident.state}: {len(alerts)} new alert{'' if len(alerts) == 1 else 's'}",
        "",
        *message_lines(alerts),
        "",
        f"Acknowledge, mute or assign it: {alerts_page_url(incident.golden_set)}",
    ]
    return "\n".join(lines)


def message_chat_text(message: IncidentMessage, alerts: list[Alert]) -> str:
    """Two lines for a chat channel (Slack's and Teams' incoming webhooks show `text`): the
    incident, its worst alert (what fell where, against what), and the alerts page."""
    incident = message.incident
    worst = alerts[0]
    where = f"run {worst.run.name} ({worst.run.system}, {worst.run.stage})" if worst.run else f"endpoint {worst.subject}"
    figure = f"{worst.metric}{' in slice ' + worst.slice if worst.slice else ''} = {worst.value:.3f}"
    if worst.reference is not None:
        figure += f" vs {worst.reference:.3f} ({(worst.value - worst.reference) * 100:+.1f} points)"
    others = f" and {len(alerts) - 1} more" if len(alerts) > 1 else ""
    headline = (
        f"Goldset incident {incident.pk} on {incident.golden_set.slug} v{worst.version.number}: "
        f"{worst.get_kind_display()}, {figure}, {where}{others}"
    )
    return f"{' '.join(headline.split())}\n{alerts_page_url(incident.golden_set)}"


def _alert_data(alert: Alert) -> dict:
    return {
        "id": alert.id,
        "kind": alert.kind,
        "metric": alert.metric,
        "slice": alert.slice,
        "value": alert.value,
        "reference": alert.reference,
        "message": alert.message,
        "version": {"number": alert.version.number, "content_hash": alert.version.content_hash},
        "run": {"name": alert.run.name, "system": alert.run.system, "stage": alert.run.stage} if alert.run else None,
        "night": alert.run.measured_at.isoformat() if alert.run and alert.run.measured_at else None,
        "endpoint": alert.subject or None,
        "canary": {"query_id": alert.canary.query.query_id, "doc_id": alert.canary.page.doc_id} if alert.canary else None,
        "p_value": alert.p_value,
        "created_at": alert.created_at.isoformat(),
    }


def message_payload(message: IncidentMessage, alerts: list[Alert]) -> dict:
    """The message as the webhook receives it. `value` and `reference` are fractions; the
    alerts come worst first; `text` is the same message for Slack and Teams."""
    incident: Incident = message.incident
    return {
        "type": "incident",
        "text": message_chat_text(message, alerts),
        "golden_set": incident.golden_set.slug,
        "incident": {
            "id": incident.pk,
            "kind": incident.kind,
            "subject": incident.subject,
            "title": incident.title,
            "state": incident.state,
            "owner": incident.owner.get_username() if incident.owner else None,
            "opened_at": incident.opened_at.isoformat(),
        },
        "message": message.number,
        "alerts": [_alert_data(alert) for alert in alerts],
    }
