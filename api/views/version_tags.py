"""A golden set's version tags: list them (readers), move one (managers, write scope), and
read one tag's history. Moving calls goldenset.tags.tag_move, the one write path."""

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.parsers import JSONParser
from api.permissions import api_golden_set
from api.serializers import validated
from goldenset.selectors import version_get
from goldenset.tags import TAG_RULE, tag_history, tag_move, tags_of
from lib.errors import GoldsetError


@extend_schema_serializer(component_name="VersionTag")
class VersionTagOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField(source="version.number", help_text="the version number the tag names now")
    content_hash = serializers.CharField(source="version.content_hash", help_text="that version's content hash")
    moved_by = serializers.CharField(source="moved_by.username", allow_null=True, default=None)
    moved_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="VersionTagMove")
class VersionTagMoveOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    from_version = serializers.IntegerField(source="from_version.number", allow_null=True, default=None, help_text="null when created")
    to_version = serializers.IntegerField(source="to_version.number")
    to_hash = serializers.CharField(source="to_version.content_hash")
    moved_by = serializers.CharField(source="moved_by.username", allow_null=True, default=None)
    moved_at = serializers.DateTimeField()
    note = serializers.CharField()


class VersionTagListApi(APIView):
    """The set's tags by name, each with the version it names now."""

    @extend_schema(operation_id="version_tags_list", responses=VersionTagOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        return Response(VersionTagOutputSerializer(tags_of(golden_set), many=True).data)


class VersionTagDetailApi(APIView):
    """One tag: GET its version and history (newest move first); PUT moves it to `version`
    (creating it), for the set's managers with a write token."""

    parser_classes = [JSONParser, FormParser]

    @extend_schema_serializer(component_name="VersionTagMoveInput")
    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="the version number the tag will name")
        note = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="", help_text="why it moves")

    @extend_schema_serializer(component_name="VersionTagDetail")
    class OutputSerializer(VersionTagOutputSerializer):
        history = VersionTagMoveOutputSerializer(many=True)

    def _detail(self, golden_set, name: str) -> dict:
        tag = next((tag for tag in tags_of(golden_set) if tag.name == name), None)
        if tag is None:
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no tag {name!r}")
        tag.history = tag_history(golden_set, name)
        return VersionTagDetailApi.OutputSerializer(tag).data

    @extend_schema(operation_id="version_tags_retrieve", responses=OutputSerializer)
    def get(self, request, slug: str, name: str):
        return Response(self._detail(api_golden_set(request, slug), name))

    @extend_schema(
        operation_id="version_tags_move",
        request=InputSerializer,
        responses=OutputSerializer,
        description=f"Tag names: {TAG_RULE}.",
    )
    def put(self, request, slug: str, name: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(VersionTagDetailApi.InputSerializer, request.data)
        if not golden_set.versions.filter(number=data["version"]).exists():
            # Fits the schema, refused for its content: 422, as every unknown id is.
            raise GoldsetError(f"golden set {golden_set.slug!r} has no version {data['version']}", field="version")
        tag_move(golden_set=golden_set, name=name, version=version_get(golden_set, data["version"]), user=request.user, note=data["note"])
        return Response(self._detail(golden_set, name))
