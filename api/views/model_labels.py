"""The calibration of a golden set's model labels, as the model labels page shows it
(labeling.model_labels.selectors.calibration_report): agreement of one model and prompt
with the latest version's labels, overall and per slice, its worst disagreements, the runs
ranked and scored on human labels and on human labels filled with the model's, and the
recall of the labels from the completeness samples, human only and prediction-powered
(labeling.model_labels.estimates). Kappa and tau are unitless in [-1, 1] (null where
undefined); shares, scores and recalls are fractions in [0, 1]. Every figure that uses
the model's labels sits under a name that says so (`filled`, `with_model_fill`,
`prediction_powered`)."""

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import api_golden_set
from api.serializers import validated
from evaluation.models import Run
from labeling.model_labels.selectors import Calibration, calibration_report, source_find


@extend_schema_serializer(component_name="ModelLabelSource")
class _SourceSerializer(serializers.Serializer):
    model = serializers.CharField()
    prompt_hash = serializers.CharField(help_text="sha256 hex of the prompt or configuration")
    label_count = serializers.IntegerField()


@extend_schema_serializer(component_name="ModelAgreement")
class _AgreementSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='"all queries", a query slice ("queries lang = de") or a page slice ("pages type = faq")')
    pairs = serializers.IntegerField(help_text="pairs both the model and the version judged")
    too_few_pairs = serializers.BooleanField(
        source="too_few",
        help_text="under minimum_pairs: kappa and shares are null, the counts are given",
    )
    minimum_pairs = serializers.IntegerField()
    model_only_share = serializers.FloatField(allow_null=True, help_text="of the pairs the model calls relevant, the share people do not")
    human_only_share = serializers.FloatField(allow_null=True, help_text="of the pairs people call relevant, the share the model does not")
    kappa_quadratic = serializers.FloatField(allow_null=True)
    kappa_unweighted = serializers.FloatField(allow_null=True)
    values = serializers.ListField(child=serializers.IntegerField(), help_text="the grades of the matrix's rows and columns")
    confusion = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        source="confusion_counts",
        help_text="confusion[i][j]: pairs people graded values[i] and the model values[j]",
    )
    model_relevant = serializers.IntegerField()
    model_relevant_humans_not = serializers.IntegerField()
    human_relevant = serializers.IntegerField()
    human_relevant_model_not = serializers.IntegerField()


@extend_schema_serializer(component_name="ModelDisagreement")
class _DisagreementSerializer(serializers.Serializer):
    query_id = serializers.CharField()
    doc_id = serializers.CharField()
    human = serializers.IntegerField()
    model = serializers.IntegerField()
    flip = serializers.BooleanField(help_text="one side calls the page relevant, the other not")


@extend_schema_serializer(component_name="ModelFilledScore")
class _FilledScoreSerializer(serializers.Serializer):
    metric = serializers.CharField()
    human = serializers.FloatField(allow_null=True, help_text="on the version's labels, as the stored score")
    with_model_fill = serializers.FloatField(source="filled", allow_null=True, help_text="with the model's labels filling unjudged pairs")


@extend_schema_serializer(component_name="ModelShareOfTopK")
class _ModelShareSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    model = serializers.IntegerField(help_text="labelled pages of the run's top k whose label is the model's")
    labelled = serializers.IntegerField(help_text="labelled pages of the run's top k once the model fills the gaps")
    share = serializers.FloatField(allow_null=True)


@extend_schema_serializer(component_name="ModelRunRanking")
class _RankingSerializer(serializers.Serializer):
    run_id = serializers.IntegerField(source="run_pk")
    name = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    human = serializers.FloatField(allow_null=True, help_text="the metric on the version's labels")
    filled = serializers.FloatField(allow_null=True, help_text="the metric with the model's labels filling unjudged pairs")
    human_rank = serializers.IntegerField()
    filled_rank = serializers.IntegerField()
    scores = _FilledScoreSerializer(many=True, help_text="the results page's leading metrics, human only and with model fill")
    model_shares = _ModelShareSerializer(many=True, source="shares")


@extend_schema_serializer(component_name="RecallInterval")
class _RecallSerializer(serializers.Serializer):
    recall = serializers.FloatField(allow_null=True, help_text="found / (found + population x share relevant)")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    share_relevant = serializers.FloatField(source="share.share", help_text="estimated share of the population that is relevant")
    human_labels = serializers.IntegerField(source="share.human")
    model_labels = serializers.IntegerField(source="share.model")


@extend_schema_serializer(component_name="ModelSampleRecall")
class _SampleRecallSerializer(serializers.Serializer):
    sample_id = serializers.IntegerField(source="sample.pk")
    k = serializers.IntegerField(help_text="the sample's depth_to: recall within the pooled runs' top k")
    found = serializers.IntegerField(help_text="relevant pages labelled, outside the sample")
    population = serializers.IntegerField(help_text="unjudged pairs the sample was drawn from")
    population_now = serializers.IntegerField(help_text="of those, the pairs found again now")
    model_called = serializers.IntegerField(help_text="pairs of the population the model labelled")
    judged = serializers.IntegerField()
    relevant = serializers.IntegerField()
    human_only = _RecallSerializer(source="human", allow_null=True, help_text="Wilson's 95% interval from the sample alone")
    prediction_powered = _RecallSerializer(source="ppi", allow_null=True, help_text="95% interval with the model's labels (PPI)")
    prediction_powered_label = serializers.CharField(source="label")
    why_not = serializers.CharField(allow_blank=True, help_text="why there is no prediction-powered estimate")


@extend_schema_serializer(component_name="ModelCalibration")
class _CalibrationSerializer(serializers.Serializer):
    model = serializers.CharField(source="source.model")
    prompt_hash = serializers.CharField(source="source.prompt_hash")
    version = serializers.IntegerField(
        source="version.number",
        allow_null=True,
        default=None,
        help_text="the version whose labels are the human side; null before the first",
    )
    model_labels = serializers.IntegerField()
    metric = serializers.CharField(allow_blank=True, help_text="what the runs are ranked by: recall@k_final")
    overall = _AgreementSerializer(allow_null=True)
    slices = _AgreementSerializer(many=True)
    worst = _DisagreementSerializer(many=True, help_text="largest grade difference first, then relevance flips")
    filled_pairs = serializers.IntegerField(help_text="model labels filling pairs the version left unjudged")
    runs = _RankingSerializer(many=True, help_text="runs not archived, each series by its latest night")
    tau = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b of the two rankings")
    model_fill = serializers.SerializerMethodField(help_text='names the fill: "with model fill: model X, prompt hash Y"')
    recalls = _SampleRecallSerializer(
        many=True, help_text="the recall of the labels from the newest completeness sample (a list: empty without one)"
    )

    def get_model_fill(self, calibration: Calibration) -> str:
        return f"with model fill: {calibration.source.model}, prompt hash {calibration.source.prompt_hash}"


class ModelLabelCalibrationApi(APIView):
    """The set's model-label sources, and the calibration of the one asked for (by default
    the one with the most labels; null when the set has none)."""

    class FilterSerializer(serializers.Serializer):
        model = serializers.CharField(required=False, max_length=200)
        prompt = serializers.RegexField(r"^[0-9a-f]{64}$", required=False, help_text="the prompt's sha256 hex")

    @extend_schema_serializer(component_name="ModelLabels")
    class OutputSerializer(serializers.Serializer):
        sources = _SourceSerializer(many=True)
        calibration = _CalibrationSerializer(allow_null=True)

    @extend_schema(operation_id="model_labels_calibration", parameters=[FilterSerializer], responses=OutputSerializer)
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        params = validated(ModelLabelCalibrationApi.FilterSerializer, request.query_params, only_known=True)
        sources, source = source_find(golden_set, params.get("model"), params.get("prompt"))
        if source is None and params.get("model"):
            raise exceptions.NotFound("no labels of that model and prompt in this golden set")
        calibration: Calibration | None = calibration_report(golden_set, source) if source is not None else None
        return Response(ModelLabelCalibrationApi.OutputSerializer({"sources": sources, "calibration": calibration}).data)
