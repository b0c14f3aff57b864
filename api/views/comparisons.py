"""A run compared with a baseline run on one version, query by query: what `goldset gate`
asks (evaluation.comparisons holds the rule). POST, because asking schedules the scores the
comparison needs (a run is not scored on an older, tagged version by itself): answered 202,
with the version it resolved to, until both runs are scored there; then 200 with every figure."""

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.parsers import JSONParser
from api.permissions import api_golden_set
from api.serializers import validated
from evaluation.comparisons import comparison_basis, comparison_evaluations, default_metrics, runs_compare
from evaluation.models import Evaluation
from evaluation.selectors import run_get
from evaluation.tasks import evaluation_enqueue

RETRY_SECONDS = 2


class _FigureSerializer(serializers.Serializer):
    metric = serializers.CharField()
    slice = serializers.CharField(help_text='"" for all queries, else query:FIELD=VALUE or page:FIELD=VALUE')
    queries = serializers.IntegerField(help_text="queries both runs were averaged over")
    baseline = serializers.FloatField(help_text="the baseline's mean (fraction)")
    candidate = serializers.FloatField(help_text="the candidate's mean (fraction)")
    drop_points = serializers.FloatField(help_text="baseline minus candidate, in points; negative is a gain")
    p_value = serializers.FloatField(help_text="one-sided paired t-test of a drop")
    detectable_points = serializers.FloatField(allow_null=True, help_text="smallest drop the test detects at the set's power")
    significant = serializers.BooleanField(help_text="p under the set's alert alpha divided among the figures compared")
    failed = serializers.BooleanField(help_text="significant and a drop past max_drop")


class RunComparisonApi(APIView):
    """Compare run `run_id` (the candidate) with `baseline`, a tag (on the tag's version,
    against the newest other run of the candidate's system and stage) or a run's name (on
    the latest version). 202 while either run is still being scored there."""

    parser_classes = [JSONParser]

    @extend_schema_serializer(component_name="RunComparisonInput")
    class InputSerializer(serializers.Serializer):
        baseline = serializers.CharField(max_length=200, help_text="a version tag of the set, or a run's name")
        max_drop = serializers.FloatField(min_value=0, max_value=100, help_text="points a figure may drop before it fails")
        metrics = serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, default=list, help_text="default recall@k_first, recall@k_final"
        )
        slices = serializers.ListField(child=serializers.CharField(max_length=600), required=False, default=list)

    @extend_schema_serializer(component_name="RunComparison")
    class OutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=["pending", "done"])
        version = serializers.IntegerField(help_text="the version both runs are compared on")
        content_hash = serializers.CharField()
        tag = serializers.CharField(allow_null=True, help_text="the tag that named the version, if the baseline was one")
        baseline_run = serializers.CharField(help_text="the baseline run's name")
        candidate_run = serializers.CharField()
        max_drop = serializers.FloatField()
        passed = serializers.BooleanField(allow_null=True, help_text="null while pending")
        figures = _FigureSerializer(many=True)

    @extend_schema(operation_id="run_comparisons_create", request=InputSerializer, responses={200: OutputSerializer, 202: OutputSerializer})
    def post(self, request, slug: str, run_id: int):
        golden_set = api_golden_set(request, slug, write=True)
        candidate = run_get(golden_set, run_id)
        data = validated(RunComparisonApi.InputSerializer, request.data)
        basis = comparison_basis(golden_set=golden_set, candidate=candidate, baseline=data["baseline"])
        body = {
            "version": basis.version.number,
            "content_hash": basis.version.content_hash,
            "tag": basis.tag,
            "baseline_run": basis.baseline.name,
            "candidate_run": candidate.name,
            "max_drop": data["max_drop"],
        }
        evaluations = comparison_evaluations(basis)
        pending = [evaluation for evaluation in evaluations if evaluation.status != Evaluation.Status.DONE]
        if pending:
            for evaluation in pending:
                if evaluation.enqueued_at is None:
                    evaluation_enqueue(evaluation)
            answer = {**body, "status": "pending", "passed": None, "figures": []}
            return Response(
                RunComparisonApi.OutputSerializer(answer).data, status=status.HTTP_202_ACCEPTED, headers={"Retry-After": str(RETRY_SECONDS)}
            )
        baseline, candidate_evaluation = evaluations
        figures = runs_compare(
            baseline=baseline,
            candidate=candidate_evaluation,
            metrics=data["metrics"] or default_metrics(basis.version),
            slices=data["slices"],
            max_drop_points=data["max_drop"],
        )
        answer = {**body, "status": "done", "passed": not any(f.failed for f in figures), "figures": [f.__dict__ for f in figures]}
        return Response(RunComparisonApi.OutputSerializer(answer).data)
