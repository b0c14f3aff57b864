"""A golden set's live endpoints: list, one endpoint, its canary probes, its index probes, run
now and poll a night.

Endpoints are shown as registered and never with a secret: header values keep the
`${ENV_VAR}` they were typed with, resolved only by the worker at send time. How an
endpoint is asked (URL, method, body, parameters, headers, count URL) is shown to the
set's managers only, as on the pages; other readers get null there. "Run now"
(write scope, manager) makes a night and answers 202 at once; the night runs in a worker
and is polled at the URL the answer gives.
"""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.converters import EndpointNameConverter
from api.pagination import PaginatedMixin
from api.permissions import api_golden_set, manages
from api.selectors import endpoint_get, endpoint_night_get, endpoints_with_nights, probe_history
from api.serializers import EndpointOutputSerializer, NightlyRunSerializer, validated
from monitoring.models import Endpoint, IndexProbe, NightlyRun
from monitoring.nightly.services import nightly_run_start
from monitoring.overview.selectors import ROUNDS_SHOWN
from monitoring.tasks import night_send

ENDPOINT_PARAMETER = OpenApiParameter(
    "endpoint",
    str,
    OpenApiParameter.PATH,
    description="the endpoint's name",
    pattern=f"^{EndpointNameConverter.regex}$",
)


class EndpointListApi(PaginatedMixin, APIView):
    """The set's endpoints by name, with their last night, the one running, and when the
    next night and probe are due."""

    @extend_schema(operation_id="endpoints_list", responses=EndpointOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        endpoints = Endpoint.objects.filter(golden_set=golden_set).select_related("series").order_by("name", "id")
        context = {"slug": golden_set.slug, "shows_request": manages(request, golden_set)}
        return self.paginated(
            endpoints,
            lambda page: (
                EndpointOutputSerializer(
                    endpoints_with_nights(page, now=timezone.now()),
                    many=True,
                    context=context,
                ).data
            ),
        )


class EndpointDetailApi(APIView):
    """One endpoint: its request and how its answers are read, limits, schedules, nights."""

    @extend_schema(operation_id="endpoints_retrieve", parameters=[ENDPOINT_PARAMETER], responses=EndpointOutputSerializer)
    def get(self, request, slug: str, endpoint: str):
        golden_set = api_golden_set(request, slug)
        [found] = endpoints_with_nights([endpoint_get(golden_set, endpoint)], now=timezone.now())
        context = {"slug": golden_set.slug, "shows_request": manages(request, golden_set)}
        return Response(EndpointOutputSerializer(found, context=context).data)


@extend_schema_serializer(component_name="Probe")
class ProbeSerializer(serializers.Serializer):
    canary = serializers.IntegerField(source="canary_id", help_text="the canary's id")
    query_id = serializers.CharField(source="canary.query.query_id")
    doc_id = serializers.CharField(source="canary.page.doc_id", help_text="the page that must be found")
    rank = serializers.IntegerField(allow_null=True, help_text="1-based rank of the page; null when not returned")
    k = serializers.IntegerField(help_text="the depth asked (the version's k_first): found means rank <= k")
    found = serializers.BooleanField()
    latency_ms = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True, help_text="why the endpoint gave no answer; empty otherwise")


@extend_schema_serializer(component_name="ProbeRound")
class ProbeRoundSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    slot = serializers.DateTimeField()
    trigger = serializers.ChoiceField(choices=NightlyRun.Trigger.choices)
    finished_at = serializers.DateTimeField(allow_null=True, help_text="null while it runs")
    canaries = serializers.IntegerField(help_text="canaries probed")
    missed = serializers.IntegerField(help_text="canaries whose page was not in the top k")
    probes = ProbeSerializer(source="probe_list", many=True, help_text="in canary order")


class EndpointProbeListApi(APIView):
    """The endpoint's last `limit` canary probe rounds, newest first, each with where every
    canary's page came back (rank, found within k, latency, error). A reranked endpoint is
    not probed: its list is empty."""

    class FilterSerializer(serializers.Serializer):
        limit = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=1000,
            help_text=f"the last this many rounds ({ROUNDS_SHOWN} if left out)",
        )

    @extend_schema_serializer(component_name="ProbeHistory")
    class OutputSerializer(serializers.Serializer):
        endpoint = serializers.CharField()
        rounds = ProbeRoundSerializer(many=True, help_text="newest first")

    @extend_schema(operation_id="endpoint_probes_list", parameters=[ENDPOINT_PARAMETER, FilterSerializer], responses=OutputSerializer)
    def get(self, request, slug: str, endpoint: str):
        golden_set = api_golden_set(request, slug)
        found = endpoint_get(golden_set, endpoint)
        limit = validated(EndpointProbeListApi.FilterSerializer, request.query_params, only_known=True).get("limit", ROUNDS_SHOWN)
        data = {"endpoint": found.name, "rounds": probe_history(found, limit=limit)}
        return Response(EndpointProbeListApi.OutputSerializer(data).data)


class EndpointRunNowApi(APIView):
    """Run the endpoint now (write scope, manager): a night at this second, queried by a
    worker after the answer (202). Poll its `url` until `status` is done (its `run_id` is
    the run made) or failed (`error` says why). While a night of the endpoint is pending or
    running (scheduled or not) it answers 409 naming that night: production is never asked
    twice at once. A disabled endpoint runs too: disabling stops its schedules only."""

    @extend_schema(
        operation_id="endpoint_runs_create",
        parameters=[ENDPOINT_PARAMETER],
        request=None,
        responses={202: NightlyRunSerializer},
    )
    def post(self, request, slug: str, endpoint: str):
        golden_set = api_golden_set(request, slug, write=True)
        found = endpoint_get(golden_set, endpoint)
        night = nightly_run_start(endpoint=found)  # 409 while a night of it is pending or running
        # night_send stamps enqueued_at (so the sweeper does not send it again as lost) and
        # sends nightly_run_task on commit.
        night_send(night)
        night.endpoint = found
        data = NightlyRunSerializer(night, context={"slug": golden_set.slug}).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


class EndpointNightDetailApi(APIView):
    """One night of the endpoint, to poll: status, queries done of total, failures, the
    run once done, the error once failed."""

    @extend_schema(
        operation_id="endpoint_runs_retrieve",
        parameters=[ENDPOINT_PARAMETER],
        responses=NightlyRunSerializer,
    )
    def get(self, request, slug: str, endpoint: str, night_id: int):
        golden_set = api_golden_set(request, slug)
        night = endpoint_night_get(endpoint_get(golden_set, endpoint), night_id)
        return Response(NightlyRunSerializer(night, context={"slug": golden_set.slug}).data)


@extend_schema_serializer(component_name="ShardFigures")
class ShardFiguresSerializer(serializers.Serializer):
    exact = serializers.IntegerField(help_text="exact neighbours on the shard, over the queries compared")
    returned = serializers.IntegerField(help_text="of those, the ones the approximate top k held")
    share = serializers.FloatField(help_text="returned / exact, a fraction")


@extend_schema_serializer(component_name="IndexProbe")
class IndexProbeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    slot = serializers.DateTimeField()
    trigger = serializers.ChoiceField(choices=NightlyRun.Trigger.choices)
    version = serializers.IntegerField(source="version.number", allow_null=True, help_text="the version whose queries were asked")
    k = serializers.IntegerField(allow_null=True, help_text="the depth compared (the endpoint's depth on the version)")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="null while it runs")
    queries_asked = serializers.IntegerField()
    queries_compared = serializers.IntegerField(help_text="answered both ways with an exact neighbour")
    ann_recall = serializers.FloatField(allow_null=True, help_text="ANN recall@k: mean over the queries of |approx ∩ exact| / |exact|")
    per_shard = serializers.DictField(
        child=ShardFiguresSerializer(), help_text="by shard as the answers name it; empty without a shard path"
    )
    errors = serializers.IntegerField(help_text="queries whose approximate or exact request failed")
    error = serializers.CharField(allow_blank=True, help_text="the first error, or why nothing was compared")


class EndpointIndexProbeListApi(APIView):
    """The endpoint's last `limit` index probes, newest first: ANN recall@k of its approximate
    answers against its exact ones, overall and per shard (SEMANTICS.md, "ANN recall@k").
    An endpoint without an exact request has none."""

    class FilterSerializer(serializers.Serializer):
        limit = serializers.IntegerField(
            required=False, min_value=1, max_value=1000, help_text="the last this many probes (12 if left out)"
        )

    @extend_schema_serializer(component_name="IndexProbeHistory")
    class OutputSerializer(serializers.Serializer):
        endpoint = serializers.CharField()
        index_recall_floor = serializers.FloatField(help_text="under it, overall or on a shard, an index alert opens")
        probes = IndexProbeSerializer(many=True, help_text="newest first")

    @extend_schema(operation_id="endpoint_index_probes_list", parameters=[ENDPOINT_PARAMETER, FilterSerializer], responses=OutputSerializer)
    def get(self, request, slug: str, endpoint: str):
        golden_set = api_golden_set(request, slug)
        found = endpoint_get(golden_set, endpoint)
        limit = validated(EndpointIndexProbeListApi.FilterSerializer, request.query_params, only_known=True).get("limit", 12)
        probes = IndexProbe.objects.filter(endpoint=found).select_related("version").order_by("-slot", "-id")[:limit]
        data = {"endpoint": found.name, "index_recall_floor": found.index_recall_floor, "probes": list(probes)}
        return Response(EndpointIndexProbeListApi.OutputSerializer(data).data)
