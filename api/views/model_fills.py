"""A version's variants "with model labels" (goldenset.model_fill): list them, add one (a
manager), and download one's qrels. The version's own qrels (/qrels) never hold a model
label: a variant's are at /model-fills/{id}/qrels, with the variant's own content hash as
their ETag. `model_share` is a fraction in [0, 1]: the variant's labels that are the model's.
"""

from django.http import HttpResponse, HttpResponseNotModified, StreamingHttpResponse
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import api_golden_set
from api.serializers import validated
from api.views.versions import LATEST_REDIRECT, FirstRendererNegotiation, api_version, number_parameter, unresolved, version_redirect
from goldenset.model_fill import VARIANT, model_fill_get, model_fill_rows, model_fills_of, version_model_fill_create
from lib.errors import GoldsetError
from lib.formats import QREL_CONTENT_TYPES, QREL_EXTENSIONS, QREL_FORMATS, qrels_chunks


@extend_schema_serializer(component_name="VersionModelFill")
class ModelFillOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    variant = serializers.SerializerMethodField(help_text=f'always "{VARIANT}": these qrels hold model labels')
    version = serializers.IntegerField(source="version.number")
    version_hash = serializers.CharField(source="version.content_hash", help_text="the human version's own content hash")
    content_hash = serializers.CharField(help_text="the variant's own hash: the version's, the model, the prompt and each model label")
    model = serializers.CharField()
    prompt_hash = serializers.CharField()
    human_label_count = serializers.IntegerField()
    model_label_count = serializers.IntegerField(help_text="pairs no person labelled, graded by the model")
    model_relevant_count = serializers.IntegerField()
    model_share = serializers.FloatField(help_text="fraction of the variant's labels that are the model's")
    created_at = serializers.DateTimeField()

    def get_variant(self, fill) -> str:
        return VARIANT


class VersionModelFillsApi(APIView):
    """GET: the version's variants with model labels (read scope). POST: add one (a manager):
    the version's human labels with the model's labels (model, prompt_hash) filling the pairs
    no person labelled. 409 when that variant exists already."""

    class InputSerializer(serializers.Serializer):
        model = serializers.CharField(max_length=200)
        prompt_hash = serializers.RegexField(r"^[0-9a-f]{64}$", help_text="sha256 hex of the model's prompt")

    @extend_schema(
        operation_id="versions_model_fills_list",
        parameters=[number_parameter()],
        responses={200: ModelFillOutputSerializer(many=True), 302: LATEST_REDIRECT},
    )
    def get(self, request, slug: str, number: str):
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        version = api_version(golden_set, number)
        return Response(ModelFillOutputSerializer(model_fills_of(version).select_related("version"), many=True).data)

    @extend_schema(
        operation_id="versions_model_fills_create",
        parameters=[number_parameter()],
        request=InputSerializer,
        responses={201: ModelFillOutputSerializer},
    )
    def post(self, request, slug: str, number: str):
        golden_set = api_golden_set(request, slug, write=True)
        if unresolved(number):
            raise exceptions.NotFound("name the version by its number (not `latest` or a tag) to add a variant to it")
        version = api_version(golden_set, number)
        data = validated(VersionModelFillsApi.InputSerializer, request.data)
        fill = version_model_fill_create(version=version, model=data["model"], prompt_hash=data["prompt_hash"], user=request.user)
        return Response(ModelFillOutputSerializer(fill).data, status=status.HTTP_201_CREATED)


class VersionModelFillQrelsApi(APIView):
    """The qrels of one variant with model labels, human and model labels merged in natural
    order of (query id, doc id). ETag is the variant's content hash."""

    content_negotiation_class = FirstRendererNegotiation

    class FilterSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=QREL_FORMATS, default="trec", help_text="trec, json, beir, csv or jsonl")

    @extend_schema(
        operation_id="versions_model_fills_qrels",
        parameters=[number_parameter(), FilterSerializer],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="qrels with model labels"),
            302: LATEST_REDIRECT,
            304: OpenApiResponse(description="If-None-Match held the ETag"),
        },
    )
    def get(self, request, slug: str, number: str, fill_id: int) -> HttpResponse:
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        version = api_version(golden_set, number)
        fmt = validated(VersionModelFillQrelsApi.FilterSerializer, request.query_params)["format"]
        try:
            fill = model_fill_get(version, fill_id)
        except GoldsetError as exc:
            raise exceptions.NotFound(exc.message) from exc
        etag = f'"{fill.content_hash}"'
        if any(tag.removeprefix("W/") == etag for tag in parse_etags(request.headers.get("If-None-Match", ""))):
            response = HttpResponseNotModified()
            response["ETag"] = etag
            return response
        response = StreamingHttpResponse(qrels_chunks(model_fill_rows(fill), fmt), content_type=f"{QREL_CONTENT_TYPES[fmt]}; charset=utf-8")
        name = f"{golden_set.slug}-v{version.number}-with-model-labels-{fill.short_hash}.{QREL_EXTENSIONS[fmt]}"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["ETag"] = etag
        return response
