"""A golden set's runs: list, upload, one run."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.serializers import RunFilterSerializer, RunOutputSerializer, validated
from evaluation.models import Run
from evaluation.selectors import run_get
from evaluation.services import run_import
from lib.errors import GoldsetError
from lib.uploads import text_lines


class RunListApi(PaginatedMixin, APIView):
    """The set's runs, newest first; ?system= and ?stage= narrow the list."""

    @extend_schema(operation_id="runs_list", parameters=[RunFilterSerializer], responses=RunOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        filters = validated(RunFilterSerializer, request.query_params)
        runs = Run.objects.filter(golden_set=golden_set, **filters).select_related("uploaded_by")
        runs = runs.order_by("-created_at", "-id")
        return self.paginated(runs, lambda page: RunOutputSerializer(page, many=True).data)


class RunUploadApi(APIView):
    """Upload a TREC run (`query_id Q0 doc_id rank score tag` a line) as multipart form
    data, all or nothing (write scope, manager). A bad line is refused with 400 naming it
    (`run.txt:12: score 'x' is not a finite number`). The run is scored against the latest
    version once stored."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema_serializer(component_name="RunUploadInput")
    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="the TREC run file, UTF-8")
        system = serializers.CharField(max_length=200, trim_whitespace=False, help_text="the retrieval system")
        stage = serializers.ChoiceField(choices=Run.Stage.choices, help_text="first_stage, reranked or other")
        name = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="", help_text="unique in the set; empty means 'system stage'"
        )

    @extend_schema(operation_id="runs_upload", request={"multipart/form-data": InputSerializer}, responses={201: RunOutputSerializer})
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(RunUploadApi.InputSerializer, request.data)
        upload = data["file"]
        try:
            run = run_import(
                golden_set=golden_set, lines=text_lines(upload, upload.name, "run"), source_name=upload.name,
                system=data["system"], stage=data["stage"], name=data["name"], user=request.user,
            )
        except GoldsetError as exc:
            # Problems with lines are problems of the file the client sent.
            if exc.field is None and exc.problems:
                exc.field = "file"
            raise
        location = reverse("api_run", kwargs={"slug": golden_set.slug, "run_id": run.id})
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED, headers={"Location": location})


class RunsApi(RunListApi, RunUploadApi):
    """/runs/: GET lists (RunListApi), POST uploads (RunUploadApi)."""


class RunDetailApi(APIView):
    """One run: what its upload found."""

    @extend_schema(operation_id="runs_retrieve", responses=RunOutputSerializer)
    def get(self, request, slug: str, run_id: int):
        golden_set = api_golden_set(request, slug)
        return Response(RunOutputSerializer(run_get(golden_set, run_id)).data)
