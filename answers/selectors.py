"""Reads of the answers pages: a set's generators, judges and experiments, one experiment
fetched through its set (another set's is as absent as none), and a page of its answers
with what a grader needs beside each (the question, the reference, the model's grade)."""

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Prefetch
from django.http import Http404

from answers.models import AnswerGrade, AnswerJudge, GeneratedAnswer, Generator, OracleExperiment
from goldenset.models import GoldenSet, VersionAnswer
from lib.ppi import wilson_interval

ANSWERS_PER_PAGE = 30


def generators_of(golden_set: GoldenSet) -> list[Generator]:
    return list(Generator.objects.filter(golden_set=golden_set).order_by("name"))


def answer_judges_of(golden_set: GoldenSet) -> list[AnswerJudge]:
    return list(AnswerJudge.objects.filter(golden_set=golden_set).order_by("name"))


def experiments_of(golden_set: GoldenSet) -> list[OracleExperiment]:
    return list(
        OracleExperiment.objects.filter(golden_set=golden_set)
        .select_related("version", "run", "generator", "judge", "created_by")
        .order_by("-created_at", "-pk")
    )


def experiment_get(golden_set: GoldenSet, experiment_id: int) -> OracleExperiment:
    """Experiment `experiment_id` of the set, or Http404."""
    experiment = (
        OracleExperiment.objects.filter(golden_set=golden_set, pk=experiment_id)
        .select_related("version", "run", "generator", "judge", "created_by")
        .first()
    )
    if experiment is None:
        raise Http404("no such oracle experiment")
    return experiment


def answer_get(experiment: OracleExperiment, answer_id: int) -> GeneratedAnswer:
    answer = GeneratedAnswer.objects.filter(experiment=experiment, pk=answer_id).select_related("query").first()
    if answer is None:
        raise Http404("no such answer")
    return answer


@dataclass(frozen=True)
class AnswerRow:
    answer: GeneratedAnswer
    reference: str
    model_grade: AnswerGrade | None  # the experiment judge's, under its current rubric
    my_grade: AnswerGrade | None  # the viewer's own


def answers_page(experiment: OracleExperiment, user, *, page: str | None, context: str = "") -> tuple[Page, list[AnswerRow]]:
    """One page of the experiment's answers (all contexts, or one), by query then context,
    in four queries whatever the page's length."""
    answers = (
        GeneratedAnswer.objects.filter(experiment=experiment).select_related("query").order_by("query__query_id", "context", "sweep_k")
    )
    if context in GeneratedAnswer.Context.values:
        answers = answers.filter(context=context)
    grades = AnswerGrade.objects.filter(source=AnswerGrade.Source.HUMAN, user=user)
    if experiment.judge_id:
        grades = grades | AnswerGrade.objects.filter(
            source=AnswerGrade.Source.MODEL, judge_id=experiment.judge_id, rubric_hash=experiment.judge.rubric_hash
        )
    answers = answers.prefetch_related(Prefetch("grades", queryset=grades, to_attr="shown_grades"))
    page_of = Paginator(answers, ANSWERS_PER_PAGE).get_page(page)
    query_ids = [answer.query_id for answer in page_of]
    references = dict(VersionAnswer.objects.filter(version=experiment.version_id, query_id__in=query_ids).values_list("query_id", "answer"))
    rows = []
    for answer in page_of:
        model = next((g for g in answer.shown_grades if g.source == AnswerGrade.Source.MODEL), None)
        mine = next((g for g in answer.shown_grades if g.source == AnswerGrade.Source.HUMAN), None)
        rows.append(AnswerRow(answer=answer, reference=references.get(answer.query_id, ""), model_grade=model, my_grade=mine))
    return page_of, rows


@dataclass(frozen=True)
class SampleInterval:
    queries: int
    half_width_points: float  # the widest 95% interval's half width, in points


def sample_intervals(query_count: int) -> list[SampleInterval]:
    """What a sample of n queries buys: the half width of the 95% Wilson interval of an
    accuracy near 0.5 (the widest), for a few sizes up to the version's `query_count`."""
    sizes = sorted({n for n in (50, 100, 200, 500, 1000, 2000) if n < query_count} | ({query_count} if query_count else set()))
    rows = []
    for n in sizes:
        low, high = wilson_interval(n // 2, n)
        rows.append(SampleInterval(n, round((high - low) / 2 * 100, 1)))
    return rows
