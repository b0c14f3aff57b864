"""A golden set's oracle experiments (answers.experiments): start one (a manager's write
token; the job runs on a worker and answers 202), continue a stopped one, list them, read
one with its progress and its report (answers.report.report_json: figures are null, and
"progress" says "n of N answered", until every answer of a context is in), and its answers
page by page. Fractions in [0, 1]; money in dollars as a decimal string."""

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from answers.experiments import oracle_experiment_continue, oracle_experiment_submit
from answers.models import AnswerGrade, AnswerJudge, GeneratedAnswer, Generator, OracleExperiment
from answers.report import experiment_report, report_json
from answers.sweep import experiment_sweep
from answers.tasks import oracle_experiment_task
from api.pagination import PaginatedMixin
from api.permissions import api_golden_set
from api.serializers import validated
from evaluation.models import Run
from lib.errors import GoldsetError


class OracleExperimentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    status = serializers.ChoiceField(choices=OracleExperiment.Status.choices)
    version = serializers.IntegerField(source="version.number")
    run = serializers.CharField(source="run.name")
    run_id = serializers.IntegerField()
    generator = serializers.CharField(source="generator.name")
    judge = serializers.CharField(source="judge.name", allow_null=True, default=None)
    closed_book = serializers.BooleanField()
    sample_size = serializers.IntegerField(allow_null=True)
    seed = serializers.IntegerField()
    k_final = serializers.IntegerField()
    k_sweep = serializers.ListField(
        child=serializers.IntegerField(), help_text="further k the retrieved context is answered at (a sweep job)"
    )
    context_token_budget = serializers.IntegerField(allow_null=True)
    budget_dollars = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    max_requests = serializers.IntegerField(allow_null=True)
    queries_total = serializers.IntegerField()
    answers_total = serializers.IntegerField()
    answers_done = serializers.IntegerField()
    answers_failed = serializers.IntegerField()
    grades_done = serializers.IntegerField()
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=6, help_text="dollars at the generator's and judge's prices")
    progress_note = serializers.CharField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class OracleExperimentInputSerializer(serializers.Serializer):
    version = serializers.IntegerField(required=False, min_value=1, help_text="the version's number (default: the latest)")
    run_id = serializers.IntegerField(help_text="the run whose top k_final is the retrieved context")
    generator = serializers.CharField(max_length=100, help_text="the generator's name")
    judge = serializers.CharField(max_length=100, required=False, allow_null=True, help_text="an answer judge's name")
    closed_book = serializers.BooleanField(default=False, help_text="answer also with no context")
    sample_size = serializers.IntegerField(required=False, allow_null=True, help_text="answer this many queries, drawn with the seed")
    seed = serializers.IntegerField(default=0)
    budget_dollars = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, allow_null=True)
    max_requests = serializers.IntegerField(required=False, allow_null=True)
    k_sweep = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="a sweep job: answer the retrieved context also at each of these k (the oracle and closed-book contexts once)",
    )


class OracleExperimentContinueSerializer(serializers.Serializer):
    budget_dollars = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, allow_null=True)
    max_requests = serializers.IntegerField(required=False, allow_null=True)


class GeneratedAnswerOutputSerializer(serializers.Serializer):
    query_id = serializers.CharField(source="query.query_id")
    context = serializers.ChoiceField(choices=GeneratedAnswer.Context.choices)
    sweep_k = serializers.IntegerField(help_text="0: the experiment's own context; K: a sweep answer, the retrieved context at K pages")
    context_ids = serializers.ListField(child=serializers.CharField(), help_text="doc ids (chunk ids for a run of a chunking), in order")
    context_tokens = serializers.IntegerField(help_text="characters of the passages / 4, rounded up each")
    prompt_hash = serializers.CharField()
    text = serializers.CharField()
    error = serializers.CharField()
    exact_match = serializers.FloatField(allow_null=True, help_text="null: no reference answer, or the answer failed")
    token_f1 = serializers.FloatField(allow_null=True)
    model_grade = serializers.SerializerMethodField(help_text="the experiment's judge's grade, null when none")
    requests = serializers.IntegerField()

    def get_model_grade(self, answer) -> str | None:
        return next((grade.grade for grade in answer.model_grades if grade.grade), None)


def _experiments(golden_set):
    return OracleExperiment.objects.filter(golden_set=golden_set).select_related("version", "run", "generator", "judge", "golden_set")


def _experiment(golden_set, experiment_id: int) -> OracleExperiment:
    experiment = _experiments(golden_set).filter(pk=experiment_id).first()
    if experiment is None:
        raise exceptions.NotFound(f"golden set {golden_set.slug!r} has no oracle experiment {experiment_id}")
    return experiment


class OracleExperimentsApi(PaginatedMixin, APIView):
    """GET: the set's oracle experiments, newest first, with their progress. POST (a
    manager's write token): start one; 202, its job runs on a worker."""

    @extend_schema(operation_id="oracle_experiments_list", responses=OracleExperimentOutputSerializer(many=True))
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        rows = _experiments(golden_set).order_by("-created_at", "-id")
        return self.paginated(rows, lambda page: OracleExperimentOutputSerializer(page, many=True).data)

    @extend_schema(
        operation_id="oracle_experiments_create", request=OracleExperimentInputSerializer, responses={202: OracleExperimentOutputSerializer}
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(OracleExperimentInputSerializer, request.data)
        number = data.get("version")
        version = golden_set.versions.filter(number=number).first() if number is not None else golden_set.latest_version()
        judge = data.get("judge")
        experiment = oracle_experiment_submit(
            golden_set=golden_set,
            version=version,
            run=Run.objects.filter(golden_set=golden_set, pk=data["run_id"]).first(),
            generator=Generator.objects.filter(golden_set=golden_set, name=data["generator"]).first(),
            judge=None if judge is None else _judge(golden_set, judge),
            closed_book=data["closed_book"],
            sample_size=data.get("sample_size"),
            seed=data["seed"],
            budget_dollars=data.get("budget_dollars"),
            max_requests=data.get("max_requests"),
            k_sweep=data.get("k_sweep"),
            user=request.user,
            send=oracle_experiment_task,
        )
        experiment = _experiment(golden_set, experiment.pk)
        return Response(OracleExperimentOutputSerializer(experiment).data, status=status.HTTP_202_ACCEPTED)


def _judge(golden_set, name: str) -> AnswerJudge:
    judge = AnswerJudge.objects.filter(golden_set=golden_set, name=name).first()
    if judge is None:
        # Content refused although it fits the schema: 422, as the other fields' faults.
        problem = f"judge: golden set {golden_set.slug!r} has no answer judge {name!r}"
        raise GoldsetError("the oracle experiment cannot start", problems=[problem], field="judge")
    return judge


class OracleExperimentDetailApi(APIView):
    """One oracle experiment: its progress and counts, and its report."""

    @extend_schema(operation_id="oracle_experiments_retrieve", responses=OpenApiTypes.OBJECT)
    def get(self, request, slug: str, experiment_id: int):
        golden_set = api_golden_set(request, slug)
        experiment = _experiment(golden_set, experiment_id)
        data = {**OracleExperimentOutputSerializer(experiment).data, "report": report_json(experiment, experiment_report(experiment))}
        if experiment.k_sweep:
            data["sweep"] = experiment_sweep(experiment)
        return Response(data)


class OracleExperimentContinueApi(APIView):
    """A manager's write token: queue a stopped, failed or done experiment again, with the
    budget given (none: unbounded); it answers only what is missing. 202."""

    @extend_schema(
        operation_id="oracle_experiments_continue",
        request=OracleExperimentContinueSerializer,
        responses={202: OracleExperimentOutputSerializer},
    )
    def post(self, request, slug: str, experiment_id: int):
        golden_set = api_golden_set(request, slug, write=True)
        data = validated(OracleExperimentContinueSerializer, request.data)
        experiment = oracle_experiment_continue(
            experiment=_experiment(golden_set, experiment_id),
            budget_dollars=data.get("budget_dollars"),
            max_requests=data.get("max_requests"),
            user=request.user,
            send=oracle_experiment_task,
        )
        return Response(OracleExperimentOutputSerializer(_experiment(golden_set, experiment.pk)).data, status=status.HTTP_202_ACCEPTED)


class OracleExperimentAnswersApi(PaginatedMixin, APIView):
    """An experiment's answers, by query and context, page by page, each with its exact
    match, token F1 and the experiment's judge's grade."""

    @extend_schema(operation_id="oracle_experiments_answers", responses=GeneratedAnswerOutputSerializer(many=True))
    def get(self, request, slug: str, experiment_id: int):
        golden_set = api_golden_set(request, slug)
        experiment = _experiment(golden_set, experiment_id)
        grades = AnswerGrade.objects.filter(source=AnswerGrade.Source.MODEL, judge=experiment.judge_id)
        if experiment.judge_id is not None:
            grades = grades.filter(rubric_hash=experiment.judge.rubric_hash)
        rows = (
            experiment.answers.select_related("query")
            .prefetch_related(Prefetch("grades", queryset=grades, to_attr="model_grades"))
            .order_by("query_id", "context", "sweep_k")
        )
        return self.paginated(rows, lambda page: GeneratedAnswerOutputSerializer(page, many=True).data)
