"""A golden set's runs: list, upload (read in the request, or by a worker as an upload job to poll), one run."""

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.serializers import RunFilterSerializer, RunOutputSerializer, RunUploadJobOutputSerializer, archived_filter, validated
from evaluation.models import Run, RunUploadJob
from evaluation.run_uploads import run_upload_inline, run_upload_request
from evaluation.selectors import run_get, run_upload_job_get
from evaluation.services import run_archive, run_import, run_mark_complete, run_mark_partial, run_unarchive
from evaluation.tasks import run_upload_job_task
from lib.errors import GoldsetError
from lib.run_formats import FORMAT_HELP, RUN_FORMATS


class RunListApi(PaginatedMixin, APIView):
    """The set's runs, newest first; ?system=, ?stage= and ?series= narrow the list.
    Archived runs are left out unless ?archived=true (only them) or ?archived=all."""

    class FilterSerializer(RunFilterSerializer):
        series = serializers.CharField(required=False, max_length=200, trim_whitespace=False, help_text="only the nights of this series")

    @extend_schema(operation_id="runs_list", parameters=[FilterSerializer], responses=RunOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        filters = dict(validated(RunListApi.FilterSerializer, request.query_params))
        if "series" in filters:
            filters["series__name"] = filters.pop("series")
        filters.update(archived_filter(filters.pop("archived", "false")))
        runs = Run.objects.filter(golden_set=golden_set, **filters).select_related("uploaded_by", "series", "archived_by", "chunking")
        runs = runs.order_by("-created_at", "-id")
        return self.paginated(runs, lambda page: RunOutputSerializer(page, many=True).data)


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class RunFileField(serializers.FileField):
    """The uploaded run: the schema says it holds at least one byte, since a run without
    entries is refused (an empty part may not even reach the view as a file)."""


def run_upload_job_data(job: RunUploadJob) -> dict:
    """A RunUploadJob as the API answers it (the upload's 202 and its own GET)."""
    return RunUploadJobOutputSerializer(
        {
            "id": job.pk,
            "status": job.status,
            "source_name": job.source_name,
            "size": job.size,
            "system": job.system,
            "stage": job.stage,
            "name": job.name,
            "chunking": job.chunking or None,
            "run": job.run,
            "error": job.error,
            "error_code": job.error_code or None,
            "error_status": job.error_status,
            "field": job.error_field or None,
            "problems": job.problems,
            "url": reverse("api_run_upload", kwargs={"slug": job.golden_set.slug, "job_id": job.pk}),
            "created_at": job.created_at,
            "started_at": job.started_at,
            "finished_at": job.finished_at,
        }
    ).data


class RunUploadApi(APIView):
    """Upload a run as multipart form data (a TREC run, `query_id Q0 doc_id rank score tag`
    a line, or any form of lib.run_formats, named by `format` or found from the content),
    all or nothing (write scope, manager). A bad line is refused with 422 naming it
    (`run.txt:12: score 'x' is not a finite number`). The run is scored against the latest
    version once stored. With `series`, the run joins that series (made on first use) as
    the night `measured_at` (default: now), so that an eval job's nightly uploads form a
    trend and raise the night alerts as a monitored endpoint's runs do. With `chunking`, the
    run's ids are chunk ids of that chunking of the corpus (an id that is not one is refused,
    naming its line); left out, doc ids.

    A file over the server's RUN_INLINE_UPLOAD_MB is not read in the request: the answer is
    202 with the upload job (Location: its `url`), which a worker reads, all or nothing; GET
    it until its status is `done` (its `run` is then the stored run, as a 201 would have
    answered it) or `failed` (its `error`, `error_code`, `error_status`, `field` and
    `problems` are those the request would have answered with). What can be refused without
    reading the file (a run name taken, an unknown stage or chunking) is refused at once.

    A run answering under the set's partial_share of its queries is marked partial: the
    answer says so in `partial` and `partial_note` ("answers 8 of 300 queries (2.7%): marked
    partial: left out of coverage flags and alerts until a manager marks it complete")."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema_serializer(component_name="RunUploadInput")
    class InputSerializer(serializers.Serializer):
        file = RunFileField(help_text="the run file: TREC, MS MARCO TSV, ranx/BEIR JSON, JSONL, parquet, ranx LZ4, or gzip of one")
        format = serializers.ChoiceField(choices=RUN_FORMATS, required=False, default="auto", help_text=FORMAT_HELP)
        system = serializers.CharField(max_length=200, trim_whitespace=False, help_text="the retrieval system")
        stage = serializers.ChoiceField(choices=Run.Stage.choices, help_text="first_stage, reranked or other")
        name = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="", help_text="unique in the set; empty means 'system stage'"
        )
        series = serializers.CharField(
            max_length=200,
            required=False,
            allow_blank=True,
            default="",
            help_text="the series the run is a night of; empty for none",
        )
        measured_at = serializers.DateTimeField(
            required=False,
            default=None,
            help_text="ISO 8601: the moment the run measured (its night); only with series, default now",
        )
        chunking = serializers.CharField(
            max_length=200,
            required=False,
            allow_blank=True,
            default="",
            help_text="the chunking of the corpus whose chunk ids the run returns; empty or documents: doc ids",
        )

    @extend_schema(
        operation_id="runs_upload",
        request={"multipart/form-data": InputSerializer},
        responses={201: RunOutputSerializer, 202: RunUploadJobOutputSerializer},
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(RunUploadApi.InputSerializer, request.data)
        upload = data["file"]
        if data["measured_at"] is not None and not data["series"].strip():
            # Checked before the file is read: a moment without a series would be dropped unsaid.
            raise GoldsetError("measured_at is the night of a series run: give series too, or leave measured_at out", field="measured_at")
        fields = {
            "golden_set": golden_set,
            "fmt": data["format"],
            "system": data["system"],
            "stage": data["stage"],
            "name": data["name"],
            "user": request.user,
            "series": data["series"],
            "measured_at": data["measured_at"],
            "chunking": data["chunking"],
        }
        if not run_upload_inline(upload.size):
            job = run_upload_request(upload=upload, job_task=run_upload_job_task, **fields)
            # With tasks run in-process the job may be done already: answer what it is now.
            body = run_upload_job_data(run_upload_job_get(golden_set, job.pk))
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
        try:
            run = run_import(data=upload, source_name=upload.name, **fields)
        except GoldsetError as exc:
            # Problems with lines are problems of the file the client sent.
            if exc.field is None and exc.problems:
                exc.field = "file"
            raise
        location = reverse("api_run", kwargs={"slug": golden_set.slug, "run_id": run.id})
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED, headers={"Location": location})


class RunsApi(RunListApi, RunUploadApi):
    """/runs/: GET lists (RunListApi), POST uploads (RunUploadApi)."""


class RunUploadJobDetailApi(APIView):
    """One upload a worker reads (read scope): its status, and its run once done or its
    refusal once failed."""

    @extend_schema(operation_id="run_uploads_retrieve", responses=RunUploadJobOutputSerializer)
    def get(self, request, slug: str, job_id: int):
        golden_set = api_golden_set(request, slug)
        try:
            job = run_upload_job_get(golden_set, job_id)
        except Http404 as exc:
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no run upload {job_id}") from exc
        return Response(run_upload_job_data(job))


class RunDetailApi(APIView):
    """One run: what its upload found."""

    @extend_schema(operation_id="runs_retrieve", responses=RunOutputSerializer)
    def get(self, request, slug: str, run_id: int):
        golden_set = api_golden_set(request, slug)
        return Response(RunOutputSerializer(run_get(golden_set, run_id)).data)


class _RunLifecycleApi(APIView):
    """A manager's change of one run's lifecycle (write scope): POST, no body; answers the run."""

    service = None  # one of evaluation.services' run_archive, run_unarchive, ...

    def post(self, request, slug: str, run_id: int):
        golden_set = api_golden_set(request, slug, write=True)
        run = run_get(golden_set, run_id)
        type(self).service(run=run, user=request.user)
        return Response(RunOutputSerializer(run).data)


def _lifecycle_schema(operation_id: str, description: str):
    return extend_schema(operation_id=operation_id, request=None, responses=RunOutputSerializer, description=description)


class RunArchiveApi(_RunLifecycleApi):
    service = staticmethod(run_archive)

    @_lifecycle_schema(
        "runs_archive",
        "Archive the run: it keeps its entries and scores, but leaves the leaderboard, alerts, "
        "coverage flags, pools and the default run lists (?archived=true shows it). 409 when it is archived already.",
    )
    def post(self, request, slug: str, run_id: int):
        return super().post(request, slug, run_id)


class RunUnarchiveApi(_RunLifecycleApi):
    service = staticmethod(run_unarchive)

    @_lifecycle_schema(
        "runs_unarchive", "Bring an archived run back everywhere; the alerts it crosses are raised. 409 when it is not archived."
    )
    def post(self, request, slug: str, run_id: int):
        return super().post(request, slug, run_id)


class RunMarkCompleteApi(_RunLifecycleApi):
    service = staticmethod(run_mark_complete)

    @_lifecycle_schema(
        "runs_mark_complete",
        "Let a partial run count for coverage flags and alerts. 422 when the run is not partial, 409 when it is marked complete already.",
    )
    def post(self, request, slug: str, run_id: int):
        return super().post(request, slug, run_id)


class RunMarkPartialApi(_RunLifecycleApi):
    service = staticmethod(run_mark_partial)

    @_lifecycle_schema(
        "runs_mark_partial",
        "Undo mark-complete: the partial run is left out of coverage flags and alerts again. "
        "409 when it is not a partial run marked complete.",
    )
    def post(self, request, slug: str, run_id: int):
        return super().post(request, slug, run_id)
