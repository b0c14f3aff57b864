"""An endpoint asked once at a depth for the depth-and-cost sweep (answers.endpoint_depth):
a manager's write token starts one (202; a worker asks, one ask of an endpoint at a time,
409 while it is busy), readers follow it to its run, whose sweep is the run's."""

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from answers.endpoint_depth import endpoint_depth_submit
from answers.models import EndpointDepthRun
from answers.tasks import endpoint_depth_task
from api.permissions import api_golden_set
from api.serializers import validated
from monitoring.models import Endpoint


class EndpointDepthOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    status = serializers.ChoiceField(choices=EndpointDepthRun.Status.choices)
    endpoint = serializers.CharField(source="endpoint.name")
    version = serializers.IntegerField(source="version.number")
    depth = serializers.IntegerField()
    queries_total = serializers.IntegerField()
    queries_done = serializers.IntegerField()
    failed_count = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True, help_text="the run stored, once done; its sweep is the run's")
    run = serializers.CharField(source="run.name", allow_null=True, default=None)
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class EndpointDepthInputSerializer(serializers.Serializer):
    endpoint = serializers.CharField(max_length=100, help_text="the endpoint's name")
    depth = serializers.IntegerField(help_text="pages to ask for, up to the latest version's k_first")


def _asks(golden_set):
    return EndpointDepthRun.objects.filter(golden_set=golden_set).select_related("endpoint", "version", "run")


class EndpointDepthApi(APIView):
    """POST (a manager's write token): ask an endpoint every query of the latest version once
    at `depth`; 202, a worker asks it."""

    @extend_schema(
        operation_id="endpoint_depth_create", request=EndpointDepthInputSerializer, responses={202: EndpointDepthOutputSerializer}
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(EndpointDepthInputSerializer, request.data)
        job = endpoint_depth_submit(
            golden_set=golden_set,
            endpoint=Endpoint.objects.filter(golden_set=golden_set, name=data["endpoint"]).first(),
            depth=data["depth"],
            user=request.user,
            send=endpoint_depth_task,
        )
        return Response(EndpointDepthOutputSerializer(_asks(golden_set).get(pk=job.pk)).data, status=status.HTTP_202_ACCEPTED)


class EndpointDepthDetailApi(APIView):
    """One ask: its progress, and its run once done."""

    @extend_schema(operation_id="endpoint_depth_retrieve", responses=EndpointDepthOutputSerializer)
    def get(self, request, slug: str, job_id: int):
        golden_set = api_golden_set(request, slug)
        job = _asks(golden_set).filter(pk=job_id).first()
        if job is None:
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no depth ask {job_id}")
        return Response(EndpointDepthOutputSerializer(job).data)
