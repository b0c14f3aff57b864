"""A golden set's versions: list, publish (a job to poll), one version, its qrels, its queries, a diff.

Every endpoint under /versions/{number}/ takes `latest` or a tag's name (`prod`,
goldenset.tags) for the number and answers it with a 302 to the numbered URL (query string
kept) that names the version it resolved to, so that what a job downloads is always named by
its number, and a job that pins a number never follows a moving target.
"""

from django.http import HttpResponse, HttpResponseNotModified, HttpResponseRedirect, StreamingHttpResponse
from django.middleware.gzip import GZipMiddleware
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.parsers import JSONParser
from api.permissions import api_golden_set
from api.selectors import slice_parse, version_query_order, version_query_rows
from api.serializers import PublishJobOutputSerializer, VersionOutputSerializer, validated
from goldenset.diffs import version_diff
from goldenset.evidence_export import version_export_chunks
from goldenset.models import GoldenSet, PublishJob, Version
from goldenset.publishing import publish_job_progress, version_publish_request
from goldenset.selectors import version_get
from goldenset.tags import TAG_PATTERN, version_resolve
from goldenset.tasks import publish_job_task
from lib.formats import QREL_CONTENT_TYPES, QREL_EXTENSIONS, QREL_FORMATS

LATEST_REDIRECT = OpenApiResponse(
    description="the number was `latest` or a tag: Location is the same URL with the number it names now "
    "(X-Goldset-Version, X-Goldset-Version-Hash and, for a tag, X-Goldset-Tag say which)"
)
NUMBER_DESCRIPTION = "a version number, `latest` or a tag such as `prod` (answered with a redirect to the number it names now)"
NUMBER_PATTERN = f"^(?:[0-9]+|{TAG_PATTERN})$"
# A slice as the qrels and queries take it: FIELD=VALUE, optionally query: or page: first.
# Without NUL, which DRF refuses in any string: the pattern says so, as forbid_nul_in_strings
# does for strings without one.
SLICE_PATTERN = r"^(?!(?:query|page):=)[^=\x00]+=[^\x00]*$"


def number_parameter(name: str = "number", description: str = NUMBER_DESCRIPTION) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.PATH, description=description, pattern=NUMBER_PATTERN)


def api_version(golden_set: GoldenSet, number: str) -> Version:
    """Version `number` (digits: `latest` and tags were redirected before) of the set, or 404."""
    return version_get(golden_set, int(number))


def unresolved(*numbers: str) -> bool:
    """Whether any of the path's version references is `latest` or a tag: a name that
    version_redirect answers with the number it names now."""
    return any(not number.isdigit() for number in numbers)


def version_headers(response: HttpResponse, version: Version, tag: str | None = None) -> HttpResponse:
    """Say which version an answer is about: its number and content hash, and the tag that
    named it when one did."""
    response["X-Goldset-Version"] = str(version.number)
    response["X-Goldset-Version-Hash"] = version.content_hash
    if tag:
        response["X-Goldset-Tag"] = tag
    return response


def version_redirect(request, golden_set: GoldenSet) -> HttpResponseRedirect:
    """A 302 to the URL of this request with every `latest` or tag replaced by the number
    it names at this moment, so that what a job downloads is always named by its number.
    404 naming the reference for an unknown tag, or `latest` before the first version."""
    match = request.resolver_match
    kwargs = dict(match.kwargs)
    resolved = None
    for key in ("number", "other"):
        value = kwargs.get(key)
        if value is None or value.isdigit():
            continue
        found = version_resolve(golden_set, value)
        if found is None:
            if value == "latest":
                raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no version yet")
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no version or tag {value!r}")
        kwargs[key] = found.version.number
        resolved = resolved or found
    url = reverse(match.view_name, kwargs=kwargs)
    query = request.META.get("QUERY_STRING", "")
    response = HttpResponseRedirect(f"{url}?{query}" if query else url)
    # The latest version changes with each publish and a tag with each move: a cache must ask again.
    response["Cache-Control"] = "no-cache"
    return version_headers(response, resolved.version, resolved.tag) if resolved else response


class VersionListApi(PaginatedMixin, APIView):
    """The set's versions, newest first."""

    @extend_schema(operation_id="versions_list", responses=VersionOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        versions = golden_set.versions.select_related("author").order_by("-number")
        return self.paginated(versions, lambda page: VersionOutputSerializer(page, many=True).data)


def publish_job_data(job: PublishJob) -> dict:
    url = reverse("api_publish_job", kwargs={"slug": job.golden_set.slug, "job_id": job.pk})
    return PublishJobOutputSerializer(
        {
            "id": job.pk,
            "status": job.status,
            "note": job.note,
            "progress": publish_job_progress(job) or None,
            "version": job.version,
            "error": job.error,
            "url": url,
            "created_at": job.created_at,
            "started_at": job.started_at,
            "finished_at": job.finished_at,
        }
    ).data


class VersionPublishApi(APIView):
    """Start publishing the set's resolved labels as version N+1 (write scope, manager):
    answered 202 with the job, which a worker runs; GET its `url` (Location) until its
    status is `done` (its `version` is then set, and every run of the set is re-scored
    against it) or `failed` (its `error` says why). Refused at once (409) when nothing
    changed since the latest version or a publish of the set is under way."""

    parser_classes = [JSONParser, FormParser]

    @extend_schema_serializer(component_name="VersionPublishInput")
    class InputSerializer(serializers.Serializer):
        note = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="")

    @extend_schema(
        operation_id="versions_publish",
        request=InputSerializer,
        responses={202: PublishJobOutputSerializer},
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(VersionPublishApi.InputSerializer, request.data)
        job = version_publish_request(golden_set=golden_set, user=request.user, note=data["note"], job_task=publish_job_task)
        # With tasks run in-process the job may be done already: answer what it is now.
        job = PublishJob.objects.select_related("golden_set", "version__author").get(pk=job.pk)
        body = publish_job_data(job)
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class PublishJobDetailApi(APIView):
    """One publish job of the set (read scope): its status, progress, and its version once done."""

    @extend_schema(operation_id="publish_jobs_retrieve", responses=PublishJobOutputSerializer)
    def get(self, request, slug: str, job_id: int):
        golden_set = api_golden_set(request, slug)
        job = PublishJob.objects.select_related("golden_set", "version__author").filter(golden_set=golden_set, pk=job_id).first()
        if job is None:
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no publish job {job_id}")
        return Response(publish_job_data(job))


class VersionsApi(VersionListApi, VersionPublishApi):
    """/versions/: GET lists (VersionListApi), POST publishes (VersionPublishApi)."""


class VersionDetailApi(APIView):
    """One version: number, content hash, note, author and counts."""

    @extend_schema(
        operation_id="versions_retrieve",
        parameters=[number_parameter()],
        responses={200: VersionOutputSerializer, 302: LATEST_REDIRECT},
    )
    def get(self, request, slug: str, number: str):
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        return Response(VersionOutputSerializer(api_version(golden_set, number)).data)


class FirstRendererNegotiation(BaseContentNegotiation):
    """For the qrels endpoint: its body is not rendered by DRF, so its ?format= and the
    Accept header are not DRF's to negotiate; errors are rendered as JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


QRELS_DESCRIPTION = (
    "the qrels, in the media type of ?format: trec text/plain (query_id 0 doc_id grade), json application/json, "
    "beir text/tab-separated-values (with a header line), csv text/csv (query_id,doc_id,relevance)"
)
QRELS_JSON_SCHEMA = {
    "type": "object",
    "description": "{query_id: {doc_id: grade}}, for ranx.Qrels.from_dict",
    "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}},
}


# Compresses a response the way Django's gzip_page does, when the client accepts it.
_GZIP = GZipMiddleware(lambda request: None)


class VersionQrelsApi(APIView):
    """The version's labels as qrels, streamed in canonical order (natural order of query
    id, then doc id), so that a million labels never sit in memory.

    The qrels stream is gzipped when the client accepts it (Vary: Accept-Encoding): qrels
    text shrinks several times over. Django then marks the ETag weak (W/"<hash>"), since the
    bytes sent are not the bytes hashed; either form in If-None-Match gets the 304. Error
    answers stay plain JSON, as the schema says.
    ETag is the version's content hash; a request with If-None-Match holding it gets 304.
    `slice` keeps the labels of one query slice (`lang=de`, `query:lang=de`) or page slice
    (`page:doc_type=faq`) of the version.
    """

    content_negotiation_class = FirstRendererNegotiation

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        patch_vary_headers(response, ("Accept-Encoding",))
        # The qrels stream alone: an error or an OPTIONS answer is DRF's, rendered later, and stays plain.
        return _GZIP.process_response(request, response) if isinstance(response, StreamingHttpResponse) else response

    class FilterSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=QREL_FORMATS, default="trec", help_text="trec, json, beir, csv or jsonl")
        slice = serializers.RegexField(
            SLICE_PATTERN,
            required=False,
            max_length=600,
            trim_whitespace=False,
            help_text="FIELD=VALUE, or query:FIELD=VALUE / page:FIELD=VALUE",
            error_messages={"invalid": "is not of the form FIELD=VALUE (e.g. lang=de), query:FIELD=VALUE or page:FIELD=VALUE"},
        )

    @extend_schema(
        operation_id="versions_qrels",
        parameters=[
            number_parameter(),
            FilterSerializer,
            OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, description="the ETag of a copy held"),
            OpenApiParameter("ETag", str, OpenApiParameter.HEADER, response=[200, 304], description='"<content hash>"'),
        ],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description=QRELS_DESCRIPTION),
            (200, "application/json"): OpenApiResponse(QRELS_JSON_SCHEMA, description=QRELS_DESCRIPTION),
            (200, "text/tab-separated-values"): OpenApiResponse(OpenApiTypes.STR, description=QRELS_DESCRIPTION),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=QRELS_DESCRIPTION),
            302: LATEST_REDIRECT,
            304: OpenApiResponse(description="If-None-Match held the ETag: the copy held is current"),
        },
    )
    def get(self, request, slug: str, number: str) -> HttpResponse:
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        version = api_version(golden_set, number)
        params = validated(VersionQrelsApi.FilterSerializer, request.query_params)
        fmt = params["format"]
        slice_filter = slice_parse(params["slice"], version) if "slice" in params else None

        etag = f'"{version.content_hash}"'
        held = parse_etags(request.headers.get("If-None-Match", ""))
        if "*" in held or any(tag.removeprefix("W/") == etag for tag in held):
            response = HttpResponseNotModified()
            response["ETag"] = etag
            return version_headers(response, version)

        where = {}
        if slice_filter is not None:
            where[f"{slice_filter.kind}_slice"] = (slice_filter.field, slice_filter.value)
        chunks = version_export_chunks(version, fmt, **where)
        response = StreamingHttpResponse(chunks, content_type=f"{QREL_CONTENT_TYPES[fmt]}; charset=utf-8")
        suffix = f"-{slugify(slice_filter.name)}" if slice_filter is not None else ""
        response["Content-Disposition"] = f'attachment; filename="{golden_set.slug}-v{version.number}{suffix}.{QREL_EXTENSIONS[fmt]}"'
        response["ETag"] = etag
        return version_headers(response, version)


@extend_schema_serializer(component_name="ReferenceAnswer")
class ReferenceAnswerOutput(serializers.Serializer):
    answer = serializers.CharField(help_text="what a generated answer is graded against")
    aliases = serializers.ListField(child=serializers.CharField(), help_text="other ways of saying it, each counted as right")
    key_facts = serializers.ListField(child=serializers.CharField(), help_text="facts a full answer holds")


class VersionQueriesApi(PaginatedMixin, APIView):
    """The version's queries in natural id order, each with the slice metadata snapshotted
    in the version, its label and relevant counts and its reference answer there. `text` is
    the query's current text (versions snapshot ids, labels, slice values and answers, not text)."""

    class FilterSerializer(serializers.Serializer):
        slice = serializers.RegexField(
            SLICE_PATTERN,
            required=False,
            max_length=600,
            trim_whitespace=False,
            help_text="a query slice: FIELD=VALUE or query:FIELD=VALUE",
            error_messages={"invalid": "is not of the form FIELD=VALUE (e.g. lang=de) or query:FIELD=VALUE"},
        )

    @extend_schema_serializer(component_name="VersionQuery")
    class OutputSerializer(serializers.Serializer):
        query_id = serializers.CharField()
        text = serializers.CharField()
        metadata = serializers.DictField(help_text="the query's slice values as snapshotted in the version")
        label_count = serializers.IntegerField()
        relevant_count = serializers.IntegerField()
        reference_answer = ReferenceAnswerOutput(
            allow_null=True, help_text="the query's reference answer as the version froze it; null for none"
        )
        inclusion_probability = serializers.FloatField(
            allow_null=True,
            help_text="the chance the sampling design drew the query from a query log, as the version froze it; "
            "null for a query added by hand (weight unknown)",
        )
        stratum = serializers.CharField(allow_blank=True, help_text='the query\'s stratum in its draw ("" for none)')
        traffic_count = serializers.IntegerField(
            allow_null=True, help_text="the query's events in the log it was drawn from; null when not drawn"
        )

    @extend_schema(
        operation_id="versions_queries",
        parameters=[number_parameter(), FilterSerializer],
        responses={200: OutputSerializer(many=True), 302: LATEST_REDIRECT},
    )
    def get(self, request, slug: str, number: str):
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        version = api_version(golden_set, number)
        params = validated(VersionQueriesApi.FilterSerializer, request.query_params)
        query_slice = None
        if "slice" in params:
            found = slice_parse(params["slice"], version)
            if found.kind != "query":
                raise exceptions.ValidationError({"slice": [f"{found.name} is a page slice; queries filter by query slices"]})
            query_slice = (found.field, found.value)
        order = version_query_order(version, query_slice)
        serialize = VersionQueriesApi.OutputSerializer
        return self.paginated(order, lambda page: serialize(version_query_rows(version, page), many=True).data)


class _PairSerializer(serializers.Serializer):
    query_id = serializers.CharField()
    doc_id = serializers.CharField()
    grade = serializers.IntegerField()


class _RegradedSerializer(serializers.Serializer):
    query_id = serializers.CharField()
    doc_id = serializers.CharField()
    old_grade = serializers.IntegerField()
    new_grade = serializers.IntegerField()


class _DiffCountsSerializer(serializers.Serializer):
    queries_added = serializers.IntegerField()
    queries_removed = serializers.IntegerField()
    pairs_added = serializers.IntegerField()
    pairs_removed = serializers.IntegerField()
    pairs_regraded = serializers.IntegerField()
    answers_added = serializers.IntegerField()
    answers_changed = serializers.IntegerField()
    answers_removed = serializers.IntegerField()


class VersionDiffApi(APIView):
    """What changed from version `number` to version `other`: queries added and removed,
    labelled pairs added, removed and regraded, reference answers added, changed and
    removed (their query ids), in natural id order. Each list holds at most
    `limit` items (`truncated` says whether one was cut); the counts are always whole."""

    class FilterSerializer(serializers.Serializer):
        limit = serializers.IntegerField(
            required=False, min_value=0, max_value=1_000_000, default=10_000, help_text="most items in each list"
        )

    @extend_schema_serializer(component_name="VersionDiff")
    class OutputSerializer(serializers.Serializer):
        from_version = serializers.IntegerField()
        from_hash = serializers.CharField()
        to_version = serializers.IntegerField()
        to_hash = serializers.CharField()
        counts = _DiffCountsSerializer()
        truncated = serializers.BooleanField()
        queries_added = serializers.ListField(child=serializers.CharField())
        queries_removed = serializers.ListField(child=serializers.CharField())
        pairs_added = _PairSerializer(many=True)
        pairs_removed = _PairSerializer(many=True)
        pairs_regraded = _RegradedSerializer(many=True)
        answers_added = serializers.ListField(child=serializers.CharField(), help_text="query ids whose answer is new")
        answers_changed = serializers.ListField(child=serializers.CharField(), help_text="query ids whose answer changed")
        answers_removed = serializers.ListField(child=serializers.CharField(), help_text="query ids whose answer is gone")

    @extend_schema(
        operation_id="versions_diff",
        parameters=[
            number_parameter("number", "the version to diff from: " + NUMBER_DESCRIPTION),
            number_parameter("other", "the version to diff to: " + NUMBER_DESCRIPTION),
            FilterSerializer,
        ],
        responses={200: OutputSerializer, 302: LATEST_REDIRECT},
    )
    def get(self, request, slug: str, number: str, other: str):
        golden_set = api_golden_set(request, slug)
        if unresolved(number, other):
            return version_redirect(request, golden_set)
        old, new = api_version(golden_set, number), api_version(golden_set, other)
        limit = validated(VersionDiffApi.FilterSerializer, request.query_params)["limit"]
        diff = version_diff(old, new)
        lists = {
            "queries_added": diff.queries_added,
            "queries_removed": diff.queries_removed,
            "pairs_added": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in diff.pairs_added[:limit]],
            "pairs_removed": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in diff.pairs_removed[:limit]],
            "pairs_regraded": [{"query_id": q, "doc_id": d, "old_grade": a, "new_grade": b} for q, d, a, b in diff.pairs_regraded[:limit]],
        }
        counts = {
            "queries_added": len(diff.queries_added),
            "queries_removed": len(diff.queries_removed),
            "pairs_added": len(diff.pairs_added),
            "pairs_removed": len(diff.pairs_removed),
            "pairs_regraded": len(diff.pairs_regraded),
            "answers_added": len(diff.answers_added),
            "answers_changed": len(diff.answers_changed),
            "answers_removed": len(diff.answers_removed),
        }
        for name in ("queries_added", "queries_removed", "answers_added", "answers_changed", "answers_removed"):
            lists[name] = getattr(diff, name)[:limit]
        data = {
            "from_version": old.number,
            "from_hash": old.content_hash,
            "to_version": new.number,
            "to_hash": new.content_hash,
            "counts": counts,
            "truncated": any(count > limit for count in counts.values()),
            **lists,
        }
        return Response(VersionDiffApi.OutputSerializer(data).data)
