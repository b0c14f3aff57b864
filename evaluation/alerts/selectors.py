"""Reads of the alert pages: a set's incidents (state first), its alerts, newest first, with
how far each is from its reference, and who may own an incident."""

from django.contrib.auth import get_user_model
from django.db.models import Case, Count, ExpressionWrapper, F, FloatField, IntegerField, Prefetch, Q, QuerySet, Value, When
from django.utils import timezone

from evaluation.alerts.incidents import OWNER_ROLES
from evaluation.models import Alert, Incident, IncidentMessage, SliceMute, WebhookDelivery
from evaluation.selectors import run_counted
from goldenset.models import GoldenSet
from goldenset.selectors import holders_of


def alerts_for(golden_set: GoldenSet) -> QuerySet[Alert]:
    """The set's alerts, newest first, with version and run, and `delta_points`:
    (value - reference) in points, None when there is no reference.

    Alerts of an archived run, or of a partial one not marked complete, are left out:
    hidden, not resolved, so that unarchiving the run shows them again as they were."""
    return (
        Alert.objects.filter(Q(run=None) | run_counted("run__"), golden_set=golden_set)
        .select_related("version", "run", "incident")
        .annotate(delta_points=ExpressionWrapper((F("value") - F("reference")) * 100, output_field=FloatField()))
        .order_by("-created_at", "-id")
    )


def alerts_latest(golden_set: GoldenSet, limit: int = 5) -> list[Alert]:
    """The `limit` newest alerts of the set, as `alerts_for` gives them: the context of
    templates/evaluation/_alerts_summary.html."""
    return list(alerts_for(golden_set)[:limit])


WEBHOOK_DELIVERIES_SHOWN = 50


def webhook_deliveries_latest(golden_set: GoldenSet, limit: int = WEBHOOK_DELIVERIES_SHOWN) -> list[WebhookDelivery]:
    """The set's `limit` latest webhook attempts, newest first, alerts and test events alike."""
    return list(
        WebhookDelivery.objects.filter(golden_set=golden_set)
        .select_related("alert", "incident_message")
        .order_by("-sent_at", "-id")[:limit]
    )


# The order the alerts page and the API list incidents in: what needs someone first.
_STATE_RANK = [
    When(state=state, then=Value(rank))
    for rank, state in enumerate([Incident.State.OPEN, Incident.State.MUTED, Incident.State.ACKNOWLEDGED, Incident.State.RESOLVED])
]


def incidents_for(golden_set: GoldenSet, *, state: str | None = None, with_messages: bool = False) -> QuerySet[Incident]:
    """The set's incidents, unresolved first and newest first within, each with `alert_count`
    and `slice_alert_count` (of them, the slice alerts, which the page folds); only those in
    `state` when given. `with_messages` prefetches each one's messages, oldest first, for the
    readers that show them (the alerts page, the API); lists that do not read no messages."""
    incidents = Incident.objects.filter(golden_set=golden_set)
    if state:
        incidents = incidents.filter(state=state)
    incidents = (
        incidents.select_related("owner", "resolved_by")
        .annotate(alert_count=Count("alerts"), slice_alert_count=Count("alerts", filter=~Q(alerts__slice="")))
        .order_by(Case(*_STATE_RANK, output_field=IntegerField()), "-opened_at", "-id")
    )
    if with_messages:
        incidents = incidents.prefetch_related(Prefetch("messages", queryset=IncidentMessage.objects.order_by("number")))
    return incidents


INCIDENTS_UNRESOLVED_SHOWN = 10


def incidents_unresolved(golden_set: GoldenSet, limit: int = INCIDENTS_UNRESOLVED_SHOWN) -> list[Incident]:
    """The set's incidents not yet resolved (open first), as incidents_for gives them: what the
    monitoring page lists above its charts."""
    return list(incidents_for(golden_set).exclude(state=Incident.State.RESOLVED)[:limit])


def incidents_open_count(golden_set: GoldenSet) -> int:
    """Incidents that still page someone: open ones (the home page's "what needs you today")."""
    return Incident.objects.filter(golden_set=golden_set, state=Incident.State.OPEN).count()


def incident_owner_candidates(golden_set: GoldenSet) -> list:
    """Who may own one of the set's incidents: its active managers and annotators, by name."""
    return list(get_user_model().objects.filter(holders_of(golden_set, OWNER_ROLES), is_active=True).order_by("username"))


def slice_mutes_active(golden_set: GoldenSet) -> list[SliceMute]:
    """The set's slices muted now, by slice."""
    return list(SliceMute.objects.filter(golden_set=golden_set, until__gt=timezone.now()).order_by("slice"))


# The state the `alerts` command and its JSON give a within-noise alert: it has no incident.
WITHIN_NOISE_STATE = "within_noise"


def alert_records(golden_set: GoldenSet, *, state: str | None = None) -> list[dict]:
    """Every alert of the set as the `alerts` command prints it, newest first: its figures
    (fractions), whether it was within noise, its incident's id and state ("within_noise"
    for a within-noise alert, which joins none; None for an alert from before incidents),
    and its run's name and night (measured_at, ISO 8601; None outside a series). `state`
    keeps the alerts whose incident is in it."""
    alerts = alerts_for(golden_set)
    if state:
        alerts = alerts.filter(incident__state=state)
    return [
        {
            "id": alert.id,
            "kind": alert.kind,
            "metric": alert.metric,
            "slice": alert.slice,
            "value": alert.value,
            "reference": alert.reference,
            "within_noise": alert.within_noise,
            "p_value": alert.p_value,
            "incident": alert.incident_id,
            "state": WITHIN_NOISE_STATE if alert.within_noise else (alert.incident.state if alert.incident else None),
            "sent": alert.incident_message_id is not None,
            "version": alert.version.number,
            "run": alert.run.name if alert.run else None,
            "night": alert.run.measured_at.isoformat() if alert.run and alert.run.measured_at else None,
            "endpoint": alert.subject or None,
            "created_at": alert.created_at.isoformat(),
            "message": alert.message,
        }
        for alert in alerts
    ]
