"""A golden set's audit trail, read only (its managers, and staff), and an organisation's (its
admins, and staff): GET lists the records newest first, filtered as the pages are and paged
as the API's other lists. No method writes: the trail is written by the services the actions
go through (goldenset.audit)."""

from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set, request_token
from api.serializers import validated
from goldenset.audit import audit_may_read, audit_records
from goldenset.teams import access_organisation


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


@extend_schema_serializer(component_name="AuditFilters")
class AuditFiltersSerializer(serializers.Serializer):
    action = serializers.CharField(required=False, max_length=60, help_text="an action (token.revoke) or its family (token)")
    user = serializers.CharField(required=False, max_length=150, help_text="a username")
    since = serializers.DateField(required=False, help_text="first day, included (YYYY-MM-DD)")
    until = serializers.DateField(required=False, help_text="last day, included (YYYY-MM-DD)")


@extend_schema_serializer(component_name="OrganisationAuditRecord")
class OrganisationAuditRecordOutputSerializer(AuditRecordOutputSerializer):
    golden_set = serializers.CharField(source="golden_set_slug", help_text="the set it happened in; empty for the organisation's own")


def _filters(request) -> dict:
    found = validated(AuditFiltersSerializer, request.query_params)
    return {"action": found.get("action", ""), "username": found.get("user", ""), "since": found.get("since"), "until": found.get("until")}


class AuditRecordListApi(PaginatedMixin, APIView):
    """The set's audit records, newest first."""

    @extend_schema(operation_id="audit_records_list", parameters=[AuditFiltersSerializer], responses=AuditRecordOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        if not audit_may_read(request.user, golden_set):
            raise exceptions.PermissionDenied(f"the audit trail of golden set {slug!r} needs its manager role")
        records = audit_records(golden_set, **_filters(request))
        return self.paginated(records, lambda page: AuditRecordOutputSerializer(page, many=True).data)


class OrganisationAuditRecordListApi(PaginatedMixin, APIView):
    """The organisation's audit records (its teams and people, and every action in the sets of
    its teams), newest first: its admins. A token restricted to one set does not reach it."""

    @extend_schema(
        operation_id="organisation_audit_records_list",
        parameters=[AuditFiltersSerializer],
        responses=OrganisationAuditRecordOutputSerializer(many=True),
    )
    def get(self, request, org_slug: str):
        token = request_token(request)
        try:
            if token is not None and token.golden_set_id is not None:
                raise Http404
            organisation, _ = access_organisation(request.user, org_slug, admin=True)
        except Http404 as exc:  # the same answer for absent and forbidden
            raise exceptions.NotFound("no such organisation") from exc
        records = audit_records(None, organisation=organisation, **_filters(request))
        return self.paginated(records, lambda page: OrganisationAuditRecordOutputSerializer(page, many=True).data)
