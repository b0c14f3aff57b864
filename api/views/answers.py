"""Reference answers: a version's, as it froze them (pinned by number and hash, as its qrels
are), and a query's own, which managers set and remove."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.parsers import JSONParser
from api.permissions import api_golden_set
from api.serializers import validated
from api.views.versions import LATEST_REDIRECT, ReferenceAnswerOutput, api_version, number_parameter, unresolved, version_redirect
from goldenset.answers import query_reference_answer, reference_answer_clear, reference_answer_set, version_answer_rows
from goldenset.models import GoldenSet, Query
from goldenset.selectors import version_check_intact

# Answers, aliases and key facts are text people write; a cap keeps one request bounded.
MAX_ANSWER_CHARS = 20_000
MAX_LIST_ITEMS = 100


# One component, "ReferenceAnswer", for an answer wherever the API gives one.
ReferenceAnswerSerializer = ReferenceAnswerOutput


@extend_schema_serializer(component_name="VersionAnswer")
class VersionAnswerSerializer(ReferenceAnswerSerializer):
    query_id = serializers.CharField()


class VersionAnswersApi(PaginatedMixin, APIView):
    """The reference answers `version` froze, in natural query id order (none for a version
    without answers), checked against the version's content hash first (409 if its rows no
    longer give it). ETag is the content hash, which covers the answers."""

    @extend_schema(
        operation_id="versions_answers",
        parameters=[
            number_parameter(),
            OpenApiParameter("ETag", str, OpenApiParameter.HEADER, response=[200], description='"<content hash>"'),
        ],
        responses={200: VersionAnswerSerializer(many=True), 302: LATEST_REDIRECT},
    )
    def get(self, request, slug: str, number: str):
        golden_set = api_golden_set(request, slug)
        if unresolved(number):
            return version_redirect(request, golden_set)
        version = api_version(golden_set, number)
        version_check_intact(version)
        rows = version_answer_rows(version)
        response = self.paginated(
            rows, lambda page: VersionAnswerSerializer([{"query_id": q, **t.to_dict()} for q, t in page], many=True).data
        )
        response["ETag"] = f'"{version.content_hash}"'
        return response


def _query(golden_set: GoldenSet, query_id: str) -> Query:
    query = Query.objects.filter(golden_set=golden_set, query_id=query_id).first()
    if query is None:
        raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no query {query_id[:200]!r}")
    return query


class QueryAnswerApi(APIView):
    """A query's reference answer now: read it (read scope; 404 for a query without one), set
    it whole (PUT, write scope, manager; the next published version holds it) or remove it
    (DELETE; published versions keep theirs)."""

    parser_classes = [JSONParser]

    @extend_schema_serializer(component_name="ReferenceAnswerInput")
    class InputSerializer(serializers.Serializer):
        # Text kept as sent (no trimming): an answer of blanks fits the schema and is refused
        # for its content (422, naming the field) by the service, as every other write is.
        answer = serializers.CharField(
            max_length=MAX_ANSWER_CHARS, trim_whitespace=False, help_text="what a generated answer is graded against"
        )
        aliases = serializers.ListField(
            child=serializers.CharField(max_length=MAX_ANSWER_CHARS, trim_whitespace=False),
            max_length=MAX_LIST_ITEMS,
            required=False,
            default=list,
            help_text="other ways of saying it, each counted as right",
        )
        key_facts = serializers.ListField(
            child=serializers.CharField(max_length=MAX_ANSWER_CHARS, trim_whitespace=False),
            max_length=MAX_LIST_ITEMS,
            required=False,
            default=list,
            help_text="facts a full answer holds",
        )

    @extend_schema(
        operation_id="queries_answer_retrieve",
        responses={200: ReferenceAnswerSerializer},
    )
    def get(self, request, slug: str, query_id: str):
        golden_set = api_golden_set(request, slug)
        text = query_reference_answer(_query(golden_set, query_id))
        if text is None:
            raise exceptions.NotFound(f"query {query_id[:200]!r} has no reference answer")
        return Response(ReferenceAnswerSerializer(text.to_dict()).data)

    @extend_schema(operation_id="queries_answer_update", request=InputSerializer, responses={200: ReferenceAnswerSerializer})
    def put(self, request, slug: str, query_id: str):
        golden_set = api_golden_set(request, slug, write=True)
        query = _query(golden_set, query_id)
        data = validated(QueryAnswerApi.InputSerializer, request.data)
        reference_answer_set(query=query, user=request.user, **data)
        return Response(ReferenceAnswerSerializer(query_reference_answer(query).to_dict()).data)

    @extend_schema(operation_id="queries_answer_destroy", request=None, responses={204: None})
    def delete(self, request, slug: str, query_id: str):
        golden_set = api_golden_set(request, slug, write=True)
        query = _query(golden_set, query_id)
        if not reference_answer_clear(query=query):
            raise exceptions.NotFound(f"query {query_id[:200]!r} has no reference answer")
        return Response(status=status.HTTP_204_NO_CONTENT)
