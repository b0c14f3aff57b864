"""A golden set's series: runs of one system stage measured night after night (a live
endpoint's nightly runs, or an eval job's uploads naming a series).

A night's figures are its scores on the newest version it was scored on (a publish
re-scores a series' recent nights only), so each night says which version and which k
they belong to. Scores are fractions in [0, 1].
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.selectors import series_get, series_of, slice_parse
from api.serializers import NightSerializer, validated
from api.views.versions import SLICE_PATTERN
from evaluation.models import Run
from goldenset.models import GoldenSet
from lib.errors import GoldsetError
from monitoring.overview.selectors import NIGHTS_SHOWN, series_latest_nights, series_nights

SERIES_PARAMETER = OpenApiParameter(
    "series",
    str,
    OpenApiParameter.PATH,
    description="the series name, URL-encoded (`bm25%20nightly`)",
)


def slice_name(golden_set: GoldenSet, text: str | None) -> str:
    """The Score.slice name ("query:lang=de") that `text` names in the set's latest
    version, "" for none; GoldsetError (422, field "slice") for one it does not have."""
    if text is None:
        return ""
    version = golden_set.versions.order_by("-number").first()
    if version is None:
        raise GoldsetError(f"golden set {golden_set.slug!r} has no version yet, so no slice", field="slice")
    return slice_parse(text, version).name


class SliceField(serializers.RegexField):
    """?slice=: FIELD=VALUE, or query:FIELD=VALUE / page:FIELD=VALUE, as the qrels take it."""

    def __init__(self, **kwargs):
        super().__init__(
            SLICE_PATTERN,
            required=False,
            max_length=600,
            trim_whitespace=False,
            help_text="a slice of the latest version: FIELD=VALUE, query:FIELD=VALUE or page:FIELD=VALUE",
            error_messages={"invalid": "is not of the form FIELD=VALUE (e.g. lang=de), query:FIELD=VALUE or page:FIELD=VALUE"},
            **kwargs,
        )


def series_rows(page) -> list[dict]:
    """A page of series_of as SeriesListApi.OutputSerializer reads it: a few queries for the page."""
    latest = series_latest_nights(list(page))
    rows = []
    for series in page:
        endpoint = getattr(series, "endpoint", None)  # the reverse one-to-one raises when absent
        night = latest[series.pk]
        source = endpoint or (night.run if night else None)
        rows.append(
            {
                "name": series.name,
                "endpoint": endpoint.name if endpoint else None,
                "system": source.system if source else None,
                "stage": source.stage if source else None,
                "run_count": series.run_count,
                "created_at": series.created_at,
                "latest": night,
            }
        )
    return rows


class SeriesListApi(PaginatedMixin, APIView):
    """The set's series by name: the endpoint feeding each (or null for uploads), its system
    and stage, how many runs it has, and its latest night with recall@k_first and
    recall@k_final on the version they were scored on."""

    @extend_schema_serializer(component_name="Series")
    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        endpoint = serializers.CharField(allow_null=True, help_text="the endpoint whose nightly runs join it; null for uploads")
        system = serializers.CharField(allow_null=True, help_text="its endpoint's, else its latest run's; null without either")
        stage = serializers.ChoiceField(choices=Run.Stage.choices, allow_null=True)
        run_count = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        latest = NightSerializer(allow_null=True, help_text="the latest night, null before the first")

    @extend_schema(operation_id="series_list", responses=OutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        return self.paginated(series_of(golden_set), lambda page: SeriesListApi.OutputSerializer(series_rows(page), many=True).data)


class SeriesNightsApi(APIView):
    """The last `limit` nights of a series, oldest first, with their figures; `slice` adds
    each night's scores on that slice (`slice_scores`)."""

    class FilterSerializer(serializers.Serializer):
        slice = SliceField()
        # No `default` in the schema: left out, it is NIGHTS_SHOWN (the monitoring page's).
        limit = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=1000,
            help_text=f"the last this many nights ({NIGHTS_SHOWN} if left out)",
        )

    @extend_schema_serializer(component_name="SeriesNights")
    class OutputSerializer(serializers.Serializer):
        series = serializers.CharField()
        slice = serializers.CharField(allow_blank=True, help_text='the slice of slice_scores, "query:FIELD=VALUE"; "" without one')
        nights = NightSerializer(many=True, help_text="oldest first")

    @extend_schema(
        operation_id="series_nights",
        parameters=[SERIES_PARAMETER, FilterSerializer],
        responses=OutputSerializer,
    )
    def get(self, request, slug: str, series: str):
        golden_set = api_golden_set(request, slug)
        found = series_get(golden_set, series)
        params = validated(SeriesNightsApi.FilterSerializer, request.query_params, only_known=True)
        name = slice_name(golden_set, params.get("slice"))
        nights = series_nights(found, slice_name=name, limit=params.get("limit", NIGHTS_SHOWN))
        return Response(SeriesNightsApi.OutputSerializer({"series": found.name, "slice": name, "nights": nights}).data)
