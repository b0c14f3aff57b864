"""The monitoring figures of a golden set, as the monitoring page shows them
(monitoring.overview.selectors.monitoring_report): each series' latest night, the rerank
loss of each system's latest night with both stages, canary probes and the open probe
and endpoint-failing alerts. Scores are fractions in [0, 1]; losses and thresholds of
drops are in points (hundredths)."""

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import api_golden_set
from api.serializers import NightlyRunSerializer, NightSerializer, validated
from api.views.series import SliceField, slice_name
from evaluation.models import Alert, Run
from monitoring.overview.selectors import MonitoringReport, monitoring_report


@extend_schema_serializer(component_name="SeriesTrend")
class _TrendSerializer(serializers.Serializer):
    name = serializers.CharField(source="series.name")
    endpoint = serializers.CharField(source="endpoint.name", allow_null=True, default=None)
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    latest = NightSerializer(allow_null=True, help_text="the latest night, with the asked slice's scores")
    last_night = NightlyRunSerializer(allow_null=True, help_text="the endpoint's latest night done or failed")
    running = NightlyRunSerializer(allow_null=True, help_text="a night pending or running now")
    next_run_at = serializers.DateTimeField(allow_null=True)
    next_probe_at = serializers.DateTimeField(allow_null=True)


@extend_schema_serializer(component_name="RerankLoss")
class _RerankSerializer(serializers.Serializer):
    system = serializers.CharField()
    measured_at = serializers.DateTimeField(help_text="the latest night both stages measured and were scored on one version")
    version = serializers.IntegerField(source="version_number")
    recall_first = serializers.FloatField(help_text="first stage's recall@k_first")
    recall_final = serializers.FloatField(help_text="reranked stage's recall@k_final")
    loss_points = serializers.FloatField(help_text="recall_first minus recall_final, in points")


@extend_schema_serializer(component_name="ProbeSummary")
class _ProbesSerializer(serializers.Serializer):
    endpoint = serializers.CharField(source="endpoint.name")
    canaries = serializers.IntegerField(help_text="canaries in the latest version")
    rounds = serializers.IntegerField(help_text="finished rounds looked at")
    latest_round_at = serializers.DateTimeField(allow_null=True)
    latest_missed = serializers.IntegerField(help_text="canaries the latest round missed")


@extend_schema_serializer(component_name="MonitoringAlert")
class _AlertSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=[Alert.Kind.PROBE_MISSED, Alert.Kind.ENDPOINT_FAILING])
    subject = serializers.CharField(allow_blank=True, help_text="the endpoint it is about")
    version = serializers.IntegerField(source="version.number")
    run_id = serializers.IntegerField(allow_null=True)
    canary = serializers.IntegerField(source="canary_id", allow_null=True)
    metric = serializers.CharField(allow_blank=True)
    value = serializers.FloatField(help_text="the figure that crossed the threshold (fraction)")
    reference = serializers.FloatField(allow_null=True)
    message = serializers.CharField()
    created_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="MonitoringThresholds")
class _ThresholdsSerializer(serializers.Serializer):
    drop_points = serializers.FloatField(help_text="a night more than this many points under its previous night or 7-night median alerts")
    slice_floor = serializers.FloatField(help_text="a slice under this recall alerts (fraction)")
    rerank_loss_points = serializers.FloatField(help_text="a rerank loss above this many points alerts")


class MonitoringApi(APIView):
    """The set's monitoring figures; `slice` adds that slice's scores to each latest night."""

    class FilterSerializer(serializers.Serializer):
        slice = SliceField()

    @extend_schema_serializer(component_name="Monitoring")
    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField(allow_null=True, help_text="the latest version")
        slice = serializers.CharField(allow_blank=True, help_text='the slice asked for, "query:FIELD=VALUE"; "" without one')
        slice_choices = serializers.ListField(child=serializers.CharField(), help_text="slices the series' runs have scores for")
        thresholds = _ThresholdsSerializer()
        series = _TrendSerializer(many=True)
        rerank = _RerankSerializer(many=True, help_text="per system, its latest night with both stages")
        probes = _ProbesSerializer(many=True, help_text="per first-stage endpoint")
        open_alerts = _AlertSerializer(many=True, help_text="open canary-probe and endpoint-failing alerts, newest first (at most 20)")

    @extend_schema(operation_id="monitoring_retrieve", parameters=[FilterSerializer], responses=OutputSerializer)
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        params = validated(MonitoringApi.FilterSerializer, request.query_params, only_known=True)
        report = monitoring_report(golden_set, slice_name=slice_name(golden_set, params.get("slice")))
        return Response(MonitoringApi.OutputSerializer(report_data(report), context={"slug": golden_set.slug}).data)


def report_data(report: MonitoringReport) -> dict:
    """`report` as MonitoringApi.OutputSerializer reads it."""
    for trend in report.series:
        for night in (trend.last_night, trend.running):
            if night is not None:
                night.endpoint = trend.endpoint  # loaded once, not once a night
    rerank = [
        {
            "system": system,
            **{name: getattr(nights[-1], name) for name in ("measured_at", "version_number", "recall_first", "recall_final")},
            "loss_points": nights[-1].loss_points,
        }
        for system, nights in sorted(report.rerank.items())
    ]
    probes = [
        {
            "endpoint": strip.endpoint,
            "canaries": len(strip.canaries),
            "rounds": len(strip.rounds),
            "latest_round_at": strip.rounds[-1].slot if strip.rounds else None,
            "latest_missed": strip.latest_missed,
        }
        for strip in report.strips
    ]
    return {
        "version": report.version.number if report.version else None,
        "slice": report.slice_name,
        "slice_choices": report.slice_choices,
        "thresholds": {
            "drop_points": report.alert_drop_points,
            "slice_floor": report.alert_slice_floor,
            "rerank_loss_points": report.alert_rerank_loss_points,
        },
        "series": report.series,
        "rerank": rerank,
        "probes": probes,
        "open_alerts": report.open_alerts,
    }
