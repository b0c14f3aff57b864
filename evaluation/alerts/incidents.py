"""Incidents: the alerts of one night (or one recompute) of one endpoint, grouped so that a
team gets one message for them, and triaged by a person.

Every alert that is sent joins an incident through `incident_alert_add`: the open (not
resolved) incident of its (set, kind, subject), or a new one. A later night of the same
endpoint joins the incident that is still open instead of opening another one.
"""

from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.models import Alert, Incident


def incident_subject(alert: Alert) -> tuple[str, str]:
    """(Incident.Kind, subject) an alert is grouped under: a series run's or an endpoint's
    alerts under the endpoint (its series' name), an index alert under its endpoint, any
    other run's under the version it was scored on (one recompute)."""
    if alert.kind == Alert.Kind.INDEX_RECALL:
        return Incident.Kind.INDEX, alert.subject
    if alert.subject:
        return Incident.Kind.NIGHT, alert.subject
    run = alert.run
    if run is not None and run.series_id is not None:
        return Incident.Kind.NIGHT, run.series.name
    return Incident.Kind.RECOMPUTE, f"v{alert.version.number}"


def incident_alert_add(alert: Alert, *, kind: str | None = None, subject: str | None = None) -> Incident:
    """Attach `alert` to the unresolved incident of its (set, kind, subject), opening one when
    there is none. kind and subject default to `incident_subject(alert)`. Call it inside the
    transaction that stores the alert."""
    if kind is None or subject is None:
        kind, subject = incident_subject(alert)
    incident = _unresolved(alert.golden_set_id, kind, subject)
    if incident is None:
        try:
            with transaction.atomic():
                incident = Incident.objects.create(
                    golden_set_id=alert.golden_set_id, kind=kind, subject=subject, title=_headline(alert)[:300]
                )
        except IntegrityError:  # another worker opened it meanwhile: join theirs
            incident = _unresolved(alert.golden_set_id, kind, subject)
    alert.incident = incident
    alert.save(update_fields=["incident"])
    return incident


def _unresolved(golden_set_id: int, kind: str, subject: str) -> Incident | None:
    return (
        Incident.objects.select_for_update()
        .filter(golden_set_id=golden_set_id, kind=kind, subject=subject)
        .exclude(state=Incident.State.RESOLVED)
        .first()
    )


def _headline(alert: Alert) -> str:
    return alert.message.split(";")[0]


def incident_resolve(*, incident: Incident, user=None) -> Incident:
    """Mark `incident` resolved (by `user`, or by Goldset itself when None: its probe passed
    again). A later alert of its subject opens a new incident."""
    if incident.state != Incident.State.RESOLVED:
        incident.state = Incident.State.RESOLVED
        incident.resolved_at = timezone.now()
        incident.resolved_by = user
        incident.save(update_fields=["state", "resolved_at", "resolved_by", "updated_at"])
    return incident
