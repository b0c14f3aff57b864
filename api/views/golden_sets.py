"""GET /api/v1/golden-sets/ and /api/v1/golden-sets/{slug}/."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set, request_token
from api.selectors import api_golden_sets
from api.serializers import GoldenSetOutputSerializer


class GoldenSetListApi(PaginatedMixin, APIView):
    """The golden sets the caller may read (only the token's own, for a token restricted to one)."""

    @extend_schema(operation_id="golden_sets_list", responses=GoldenSetOutputSerializer(many=True))
    def get(self, request):
        sets = api_golden_sets(request.user, request_token(request))
        return self.paginated(sets, lambda page: GoldenSetOutputSerializer(page, many=True).data)


class GoldenSetDetailApi(APIView):
    """One golden set: its grade scale, the settings its scores depend on, its latest version."""

    @extend_schema(operation_id="golden_sets_retrieve", responses=GoldenSetOutputSerializer)
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        annotated = api_golden_sets(request.user, request_token(request)).get(pk=golden_set.pk)
        return Response(GoldenSetOutputSerializer(annotated).data)
