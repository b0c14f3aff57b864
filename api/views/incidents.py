"""A golden set's incidents (the alerts of one night or one recompute, delivered as one
message): list, one incident with its alerts, and its state changed by a manager.

Reading needs the set's read roles; changing a state its manager role (a write token), as
the alerts page asks. The state change goes through evaluation.alerts.incidents, the same
services as the page's buttons.
"""

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.serializers import validated
from evaluation.alerts.incidents import incident_act
from evaluation.alerts.selectors import incidents_for
from evaluation.models import Alert, Incident
from lib.errors import GoldsetError


class IncidentAlertSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    metric = serializers.CharField()
    slice = serializers.CharField(allow_blank=True)
    value = serializers.FloatField(help_text="fraction")
    reference = serializers.FloatField(allow_null=True, help_text="what it was compared with (fraction)")
    message = serializers.CharField()
    run = serializers.CharField(source="run.name", allow_null=True, default=None)
    night = serializers.DateTimeField(source="run.measured_at", allow_null=True, default=None)
    sent = serializers.SerializerMethodField(help_text="false when the incident was acknowledged or muted, or the slice muted")
    created_at = serializers.DateTimeField()

    def get_sent(self, alert: Alert) -> bool:
        return alert.incident_message_id is not None


@extend_schema_serializer(component_name="Incident")
class IncidentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    kind = serializers.ChoiceField(choices=Incident.Kind.values)
    subject = serializers.CharField(help_text="the endpoint or series, 'v3' for a recompute")
    title = serializers.CharField(help_text="the worst alert's headline")
    state = serializers.ChoiceField(choices=Incident.State.values)
    muted_until = serializers.DateTimeField(allow_null=True)
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None)
    opened_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    alert_count = serializers.IntegerField()
    messages = serializers.IntegerField(source="messages.count", help_text="messages sent or gathering")


@extend_schema_serializer(component_name="IncidentDetail")
class IncidentDetailSerializer(IncidentSerializer):
    alerts = serializers.SerializerMethodField(help_text="every alert of the incident, oldest first")

    @extend_schema_field(IncidentAlertSerializer(many=True))
    def get_alerts(self, incident: Incident) -> list[dict]:
        alerts = incident.alerts.select_related("run").order_by("id")
        return IncidentAlertSerializer(alerts, many=True).data


class IncidentListApi(PaginatedMixin, APIView):
    """The set's incidents: open first, then muted, acknowledged and resolved, newest first
    within each; ?state= keeps one state."""

    class FilterSerializer(serializers.Serializer):
        state = serializers.ChoiceField(choices=Incident.State.values, required=False)

    @extend_schema(operation_id="incidents_list", parameters=[FilterSerializer], responses=IncidentSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        params = validated(IncidentListApi.FilterSerializer, request.query_params)
        incidents = incidents_for(golden_set, state=params.get("state"), with_messages=True)
        return self.paginated(incidents, lambda page: IncidentSerializer(page, many=True).data)


class IncidentDetailApi(APIView):
    """One incident with its alerts; PATCH changes its state (manager, write token)."""

    class UpdateSerializer(serializers.Serializer):
        state = serializers.ChoiceField(
            choices=["acknowledged", "muted", "resolved", "open"],
            required=False,
            help_text="acknowledged (nobody is paged), muted (until muted_until), resolved, or open (reopen)",
        )
        muted_until = serializers.DateTimeField(required=False, help_text="with state muted: when its alerts page again")
        owner = serializers.CharField(
            required=False, allow_blank=True, max_length=150, help_text="a manager's or annotator's user name; empty for nobody"
        )

    @extend_schema(operation_id="incidents_retrieve", responses=IncidentDetailSerializer)
    def get(self, request, slug: str, incident_id: int):
        golden_set = api_golden_set(request, slug)
        return Response(IncidentDetailSerializer(_incident(golden_set, incident_id)).data)

    @extend_schema(operation_id="incidents_update", request=UpdateSerializer, responses=IncidentDetailSerializer)
    def patch(self, request, slug: str, incident_id: int):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(IncidentDetailApi.UpdateSerializer, request.data)
        if not data:
            raise GoldsetError("give state, owner or both", field="state")
        if "muted_until" in data and data.get("state") != "muted":
            raise GoldsetError("muted_until goes with state muted", field="muted_until")
        incident = _incident(golden_set, incident_id)
        if "state" in data:
            action = {"acknowledged": "acknowledge", "muted": "mute", "resolved": "resolve", "open": "reopen"}[data["state"]]
            muted_until = data.get("muted_until")
            if action == "mute" and muted_until is None:
                raise GoldsetError("state muted needs muted_until, a time in the future", field="muted_until")
            if muted_until is not None and timezone.is_naive(muted_until):
                muted_until = timezone.make_aware(muted_until)
            incident = incident_act(incident=incident, user=request.user, action=action, muted_until=muted_until)
        if "owner" in data:
            incident = incident_act(incident=incident, user=request.user, action="assign", owner=data["owner"])
        return Response(IncidentDetailSerializer(_incident(golden_set, incident.pk)).data)


def _incident(golden_set, incident_id: int) -> Incident:
    """The set's incident with its counts; 404 naming the id when the set has none."""
    incident = incidents_for(golden_set, with_messages=True).filter(pk=incident_id).first()
    if incident is None:
        raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no incident {incident_id}")
    return incident
