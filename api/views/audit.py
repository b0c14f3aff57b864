"""A golden set's audit trail, read only (its managers, and staff): GET lists the records
newest first, filtered as the page is and paged as the API's other lists. No method
writes: the trail is written by the services the actions go through (goldenset.audit)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from goldenset.audit import audit_filters, audit_may_read, audit_records
from lib.errors import GoldsetError


@extend_schema_serializer(component_name="AuditObject")
class AuditObjectSerializer(serializers.Serializer):
    type = serializers.CharField(source="object_type", help_text="the model's name: version, apitoken, endpoint, ...")
    id = serializers.CharField(source="object_id")
    label = serializers.CharField(source="object_label")


@extend_schema_serializer(component_name="AuditRecord")
class AuditRecordOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    user = serializers.CharField(source="username", help_text="the username when it acted; empty for the system")
    action = serializers.CharField(help_text="a verb name: version.publish, settings.update, token.revoke, ...")
    object = AuditObjectSerializer(source="*")
    before = serializers.JSONField(help_text="the changed fields' values before (secrets never)")
    after = serializers.JSONField(help_text="the changed fields' values after (secrets never)")


FILTERS = [
    OpenApiParameter("action", OpenApiTypes.STR, description="an action (token.revoke) or its family (token)"),
    OpenApiParameter("user", OpenApiTypes.STR, description="a username"),
    OpenApiParameter("since", OpenApiTypes.DATE, description="first day, included"),
    OpenApiParameter("until", OpenApiTypes.DATE, description="last day, included"),
]


class AuditRecordListApi(PaginatedMixin, APIView):
    """The set's audit records, newest first."""

    @extend_schema(operation_id="audit_records_list", parameters=FILTERS, responses=AuditRecordOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        if not audit_may_read(request.user, golden_set):
            raise exceptions.PermissionDenied(f"the audit trail of golden set {slug!r} needs its manager role")
        try:
            filters = audit_filters(request.query_params)
        except GoldsetError as exc:
            raise exceptions.ValidationError({exc.field: [exc.message]}) from None
        return self.paginated(audit_records(golden_set, **filters), lambda page: AuditRecordOutputSerializer(page, many=True).data)
