"""Scores: one run's evaluations, and every run's evaluation on one version.

Each evaluation is one run scored against one version; every figure in it belongs to that
version (`version`, `content_hash`). Scores are fractions in [0, 1] named by ranx metric
strings; completeness changes are in points.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.selectors import EvaluationFigures, evaluation_figures, evaluations_of
from api.serializers import EvaluationOutputSerializer, RunFilterSerializer, archived_filter, validated
from evaluation.models import EvaluationSettings
from evaluation.reports.completeness import run_completeness
from evaluation.selectors import evaluation_settings, run_get
from evaluation.weighted import WeightedFigures, evaluations_weighted
from goldenset.models import GoldenSet
from goldenset.tags import TAG_PATTERN, version_resolve
from lib.ids import natural_key

MAX_VERSION = 2**31 - 1
# ?version=: up to ten digits (a longer number is no version, and refused as the schema's), or a tag.
VERSION_REFERENCE_PATTERN = f"^(?:[0-9]{{1,10}}|{TAG_PATTERN})$"
COMPLETENESS_FIELDS = [name for name in EvaluationOutputSerializer().fields["completeness"].child.fields]


def evaluation_data(figures: EvaluationFigures, settings: EvaluationSettings, weighted: WeightedFigures | None = None) -> dict:
    """An evaluation as EvaluationOutputSerializer reads it: overall scores in the
    evaluation's metric order, slices in natural order, completeness rows overall first;
    the traffic-weighted estimates when its version was drawn from a query log."""
    evaluation = figures.evaluation
    order = {name: position for position, name in enumerate(evaluation.metrics)}
    by_slice: dict[str, list] = {}
    for score in sorted(figures.scores, key=lambda s: order.get(s.metric, len(order))):
        by_slice.setdefault(score.slice, []).append(score)
    overall = by_slice.pop("", [])
    slices = [
        {
            "slice": name,
            "queries_averaged": scores[0].queries_averaged,
            "no_relevant_count": scores[0].no_relevant_count,
            "scores": {score.metric: score.value for score in scores},
        }
        for name, scores in sorted(by_slice.items(), key=lambda item: natural_key(item[0]))
    ]
    completeness = sorted(figures.completeness, key=lambda row: (row.slice != "", natural_key(row.slice)))
    whole = next((row for row in completeness if row.slice == ""), None)
    return {
        "run": evaluation.run,
        "version": evaluation.version.number,
        "content_hash": evaluation.version.content_hash,
        "status": evaluation.status,
        "error": evaluation.error,
        "started_at": evaluation.started_at,
        "finished_at": evaluation.finished_at,
        "metrics": list(evaluation.metrics),
        "queries_in_version": evaluation.queries_in_version,
        "queries_averaged": evaluation.queries_averaged,
        "unanswered_count": evaluation.unanswered_count,
        "no_relevant_count": evaluation.no_relevant_count,
        "scores": {score.metric: score.value for score in overall},
        "slices": slices,
        "completeness": [{name: getattr(row, name) for name in COMPLETENESS_FIELDS} for row in completeness],
        "judged_floor": settings.judged_floor,
        # The results pages' own rule (float noise included), so the API never disagrees with them.
        "unreliable": run_completeness(whole, evaluation.run, evaluation.version, settings, "").unreliable,
        "weighted": weighted.to_dict() if weighted else None,
        "weighted_strata": weighted.strata_dict() if weighted else None,
        "unweighted_queries": weighted.unweighted_queries if weighted else None,
    }


def serialize_page(golden_set: GoldenSet, page) -> list:
    settings = evaluation_settings(golden_set)
    weighted = evaluations_weighted(page)
    return EvaluationOutputSerializer(
        [evaluation_data(f, settings, weighted.get(f.evaluation.pk)) for f in evaluation_figures(page)], many=True
    ).data


def version_reference_field(help_text: str) -> serializers.RegexField:
    """?version=: a number, `latest` or a tag (`prod`), resolved by version_number."""
    return serializers.RegexField(VERSION_REFERENCE_PATTERN, required=False, max_length=50, help_text=help_text)


def version_number(golden_set: GoldenSet, reference: str) -> int:
    """The number `reference` names now: digits as they are (a number past the database's
    integers is 400, naming the field), a tag (it moves: every evaluation answered names its
    `version` and `content_hash`) or `latest` resolved, NotFound naming an unknown one."""
    if reference.isdigit():
        if int(reference) > MAX_VERSION:  # past the database's integers: no version has it
            raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no version {reference}")
        return int(reference)
    found = version_resolve(golden_set, reference)
    if found is None:
        raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no version or tag {reference!r}")
    return found.version.number


class RunEvaluationListApi(PaginatedMixin, APIView):
    """One run's evaluations, newest version first, or only on ?version= (a number or a
    tag, resolved now): overall, per slice, with completeness."""

    class FilterSerializer(serializers.Serializer):
        version = version_reference_field("a version number, `latest` or a tag such as `prod`")

    @extend_schema(operation_id="run_evaluations_list", parameters=[FilterSerializer], responses=EvaluationOutputSerializer(many=True))
    def get(self, request, slug: str, run_id: int):
        golden_set = api_golden_set(request, slug)
        run = run_get(golden_set, run_id)
        filters = validated(RunEvaluationListApi.FilterSerializer, request.query_params)
        evaluations = evaluations_of(golden_set).filter(run=run).order_by("-version__number")
        if "version" in filters:
            evaluations = evaluations.filter(version__number=version_number(golden_set, filters["version"]))
        return self.paginated(evaluations, lambda page: serialize_page(golden_set, page))


class EvaluationListApi(PaginatedMixin, APIView):
    """Every run's evaluation on version ?version= (a number or a tag, resolved now; the
    latest by default), by run name; ?system= and ?stage= narrow the runs; archived runs
    only with ?archived=true or all."""

    class FilterSerializer(RunFilterSerializer):
        version = version_reference_field("a version number or a tag such as `prod`; the latest if left out")

    @extend_schema(operation_id="evaluations_list", parameters=[FilterSerializer], responses=EvaluationOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        wanted = dict(validated(EvaluationListApi.FilterSerializer, request.query_params))
        number = wanted.pop("version", None)
        archived = wanted.pop("archived", "false")
        if number is None:
            number = golden_set.versions.order_by("-number").values_list("number", flat=True).first()
        else:
            number = version_number(golden_set, number)
            if not golden_set.versions.filter(number=number).exists():
                raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no version {number}")
        if number is None:  # no version yet, so nothing was scored
            return self.paginated([], lambda page: [])
        evaluations = evaluations_of(golden_set).filter(version__number=number)
        evaluations = evaluations.filter(**{f"run__{name}": value for name, value in wanted.items()}, **archived_filter(archived, "run__"))
        evaluations = evaluations.order_by("run__name", "run_id")
        return self.paginated(evaluations, lambda page: serialize_page(golden_set, page))
