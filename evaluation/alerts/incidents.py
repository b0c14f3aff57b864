"""Incidents: the alerts of one night (or one recompute) of one endpoint, grouped so that a
team gets one message for them, and triaged by a person.

Every alert that is sent joins an incident through `incident_alert_add`: the open (not
resolved) incident of its (set, kind, subject), or a new one. A later night of the same
endpoint joins the incident that is still open instead of opening another one.

Paging. An alert that joins an incident also joins the incident's gathering message (an
IncidentMessage not yet sent; evaluation.alerts.delivery sends it), unless nobody should be
paged for it: the incident is acknowledged, or muted until a time still to come, or the
alert's slice is muted (SliceMute). Such an alert still belongs to its incident and shows on
the alerts page; it is never sent later. A mute that has ended opens the incident again on
its next alert, which pages. A within-noise alert joins no incident and pages nobody.

Triage (acknowledge, mute, assign, resolve, reopen, mute a slice) is done here, by the
alerts page, the API and nobody else; the callers check that the user manages the set.
"""

from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import ExpressionWrapper, F, FloatField, Max
from django.utils import timezone

from evaluation.models import Alert, Incident, IncidentMessage, SliceMute
from goldenset.audit import audit_record, changed_fields
from goldenset.models import GoldenSet, Membership
from goldenset.selectors import holders_of
from lib.errors import ConflictError, GoldsetError

# Who may own an incident: the people who can act on what it says.
OWNER_ROLES = (Membership.Role.MANAGER, Membership.Role.ANNOTATOR)


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


def incident_alert_add(alert: Alert, *, kind: str | None = None, subject: str | None = None) -> Incident | None:
    """Attach `alert` to the unresolved incident of its (set, kind, subject), opening one when
    there is none, and to that incident's gathering message when it pages (see the module
    docstring). kind and subject default to `incident_subject(alert)`. Call it inside the
    transaction that stores the alert. Returns None, and does nothing, for a within-noise
    alert: it joins no incident and is never sent."""
    if alert.within_noise:
        return None
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
    alert.incident_message = _gathering_message(incident) if _pages(incident, alert) else None
    alert.save(update_fields=["incident", "incident_message"])
    _title_update(incident)
    return incident


def _title_update(incident: Incident) -> None:
    """Title the incident by its worst alert (the largest fall from its reference)."""
    worst = (
        incident.alerts.exclude(reference=None)
        .annotate(fall=ExpressionWrapper(F("value") - F("reference"), output_field=FloatField()))
        .order_by("fall", "id")
        .first()
    ) or incident.alerts.order_by("id").first()
    title = _headline(worst)[:300]
    if title != incident.title:
        incident.title = title
        incident.save(update_fields=["title", "updated_at"])


def _pages(incident: Incident, alert: Alert) -> bool:
    """Whether `alert` should reach a person; a mute that has ended opens the incident again."""
    now = timezone.now()
    if incident.state == Incident.State.MUTED:
        if incident.muted_until is not None and incident.muted_until > now:
            return False
        incident.state, incident.muted_until = Incident.State.OPEN, None
        incident.save(update_fields=["state", "muted_until", "updated_at"])
    if incident.state == Incident.State.ACKNOWLEDGED:
        return False
    if alert.slice and SliceMute.objects.filter(golden_set_id=alert.golden_set_id, slice=alert.slice, until__gt=now).exists():
        return False
    return True


def _gathering_message(incident: Incident) -> IncidentMessage:
    """The incident's message still gathering alerts, made when there is none (the incident
    row is locked by the caller, so two workers never make two). Locked too: a sender
    closing it waits for this alert's transaction and sends it with the rest."""
    message = IncidentMessage.objects.select_for_update().filter(incident=incident, closed_at=None).first()
    if message is None:
        number = (IncidentMessage.objects.filter(incident=incident).aggregate(last=Max("number"))["last"] or 0) + 1
        message = IncidentMessage.objects.create(incident=incident, number=number)
    return message


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


# --- triage ------------------------------------------------------------------------------


def incident_get(*, golden_set: GoldenSet, incident_id: int) -> Incident:
    """The set's incident `incident_id`; GoldsetError naming the id when the set has none."""
    incident = Incident.objects.filter(golden_set=golden_set, pk=incident_id).select_related("owner").first()
    if incident is None:
        raise GoldsetError(f"golden set {golden_set.slug} has no incident {incident_id}", field="incident")
    return incident


def _locked(incident: Incident) -> Incident:
    return Incident.objects.select_for_update().get(pk=incident.pk)


def _unresolved_only(incident: Incident, action: str) -> None:
    if incident.state == Incident.State.RESOLVED:
        raise ConflictError(f"incident {incident.pk} is resolved: reopen it before you {action} it", field="state")


@transaction.atomic
def incident_acknowledge(*, incident: Incident, user) -> Incident:
    """Someone is on it: later alerts join the incident without paging anyone."""
    incident = _locked(incident)
    _unresolved_only(incident, "acknowledge")
    incident.state, incident.muted_until = Incident.State.ACKNOWLEDGED, None
    if incident.owner_id is None and user is not None:
        incident.owner = user  # who acknowledged it is its owner until someone is assigned
    incident.save(update_fields=["state", "muted_until", "owner", "updated_at"])
    return incident


@transaction.atomic
def incident_mute(*, incident: Incident, user, until: datetime) -> Incident:
    """No message until `until` (an aware time in the future); the next alert after it pages."""
    if until is None or until <= timezone.now():
        raise GoldsetError("muted_until must be a time in the future", field="muted_until")
    incident = _locked(incident)
    _unresolved_only(incident, "mute")
    incident.state, incident.muted_until = Incident.State.MUTED, until
    incident.save(update_fields=["state", "muted_until", "updated_at"])
    return incident


@transaction.atomic
def incident_assign(*, incident: Incident, user, owner_username: str) -> Incident:
    """Make `owner_username` (a manager or annotator of the set) the incident's owner; an
    empty name clears the owner."""
    incident = _locked(incident)
    owner = None
    if owner_username:
        owner = (
            get_user_model().objects.filter(holders_of(incident.golden_set, OWNER_ROLES), username=owner_username, is_active=True).first()
        )
        if owner is None:
            raise GoldsetError(f"owner {owner_username!r} is not a manager or annotator of this golden set", field="owner")
    incident.owner = owner
    incident.save(update_fields=["owner", "updated_at"])
    return incident


@transaction.atomic
def incident_reopen(*, incident: Incident, user) -> Incident:
    """Open a resolved, acknowledged or muted incident again: its next alert pages. A resolved
    one cannot be reopened while a later incident of its subject is open (ConflictError)."""
    incident = _locked(incident)
    if incident.state == Incident.State.RESOLVED:
        later = _unresolved(incident.golden_set_id, incident.kind, incident.subject)
        if later is not None:
            raise ConflictError(f"incident {later.pk} about {incident.subject} is open: it holds the new alerts", field="state")
    incident.state, incident.muted_until, incident.resolved_at, incident.resolved_by = Incident.State.OPEN, None, None, None
    incident.save(update_fields=["state", "muted_until", "resolved_at", "resolved_by", "updated_at"])
    return incident


def slice_mute(*, golden_set: GoldenSet, user, slice_name: str, until: datetime | None) -> SliceMute | None:
    """Mute alerts of `slice_name` until `until` (moved when muted already); None unmutes it
    and returns None. The alerts are stored and shown all the same."""
    if not slice_name.strip():
        raise GoldsetError("slice must name a slice, e.g. query:lang=de", field="slice")
    if until is not None and until <= timezone.now():
        raise GoldsetError("until must be a time in the future", field="until")
    with transaction.atomic():
        before = SliceMute.objects.filter(golden_set=golden_set, slice=slice_name).values_list("until", flat=True).first()
        if until is None:
            mute = None
            if SliceMute.objects.filter(golden_set=golden_set, slice=slice_name).delete()[0]:
                audit_record(user=user, action="slice.unmute", golden_set=golden_set, before={"until": before}, label=slice_name)
        else:
            mute, _ = SliceMute.objects.update_or_create(
                golden_set=golden_set, slice=slice_name, defaults={"until": until, "created_by": user}
            )
            audit_record(
                user=user,
                action="slice.mute",
                obj=mute,
                golden_set=golden_set,
                before={"until": before},
                after={"until": until},
                label=slice_name,
            )
    return mute


INCIDENT_ACTIONS = ("acknowledge", "mute", "assign", "resolve", "reopen")


def _triage_fields(incident: Incident) -> dict:
    return {"state": incident.state, "muted_until": incident.muted_until, "owner": incident.owner.username if incident.owner else None}


def incident_act(*, incident: Incident, user, action: str, muted_until: datetime | None = None, owner: str = "") -> Incident:
    """One state change by name, as the page's buttons and the API send it, recorded in the
    audit trail in the same transaction."""
    if action not in INCIDENT_ACTIONS:
        raise GoldsetError(f"action must be one of {', '.join(INCIDENT_ACTIONS)}, not {action!r}", field="action")
    with transaction.atomic():
        before = _triage_fields(Incident.objects.select_related("owner").get(pk=incident.pk))
        done = _incident_act(incident=incident, user=user, action=action, muted_until=muted_until, owner=owner)
        changed_before, changed_after = changed_fields(before, _triage_fields(done))
        audit_record(
            user=user,
            action=f"incident.{action}",
            obj=done,
            golden_set=done.golden_set,
            before=changed_before,
            after=changed_after,
            label=f"incident {done.pk}: {done.title}" if getattr(done, "title", "") else f"incident {done.pk}",
        )
    return done


def _incident_act(*, incident: Incident, user, action: str, muted_until: datetime | None, owner: str) -> Incident:
    if action == "acknowledge":
        return incident_acknowledge(incident=incident, user=user)
    if action == "mute":
        return incident_mute(incident=incident, user=user, until=muted_until)
    if action == "assign":
        return incident_assign(incident=incident, user=user, owner_username=owner)
    if action == "resolve":
        return incident_resolve(incident=incident, user=user)
    if action == "reopen":
        return incident_reopen(incident=incident, user=user)
    raise GoldsetError(f"action must be one of {', '.join(INCIDENT_ACTIONS)}, not {action!r}", field="action")
