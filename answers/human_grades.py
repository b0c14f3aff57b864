"""People's grades of generated answers, and how far the answer judge agrees with them.

A person's grade is an AnswerGrade of source "human", one a person and answer (a second
grade replaces the first: people change their minds, the constraint
answer_grade_once_per_person keeps one). It never touches a label, a version or a score,
and a model grade never stands in for it.

Agreement is Cohen's kappa (unweighted, on the grades correct / partly / wrong, and on
supported yes / no) between each answer's human grade and the experiment judge's grade
under its current rubric, over the answers both graded, overall and per query slice of the
experiment's version.
"""

import math
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q

from answers.models import AnswerGrade, GeneratedAnswer, OracleExperiment
from evaluation.selectors import slice_label, slice_parts
from labeling.model_labels.stats import cohen_kappa
from lib.errors import GoldsetError

GRADE_ORDER = [AnswerGrade.Grade.WRONG, AnswerGrade.Grade.PARTLY, AnswerGrade.Grade.CORRECT]
# Kappa on fewer pairs says more about chance than about the judge.
MIN_PAIRS = 5


def answer_grade_record(*, answer: GeneratedAnswer, user: AbstractBaseUser, grade: str, supported: bool | None) -> AnswerGrade:
    """Record `user`'s grade of `answer` (replacing their earlier one). GoldsetError naming
    the field when the grade is not correct / partly / wrong, `supported` is not a yes or
    no, or the answer has no text to grade (its generation failed)."""
    if grade not in AnswerGrade.Grade.values:
        raise GoldsetError(f"grade must be one of {', '.join(AnswerGrade.Grade.values)}, got {grade!r}", field="grade")
    if supported not in (True, False):
        raise GoldsetError(f"supported must be yes or no (is the answer supported by its context?), got {supported!r}", field="supported")
    if answer.error or not answer.text:
        raise GoldsetError(f"answer {answer.pk} has no text to grade: its generation failed ({answer.error or 'empty'})", field="answer")
    with transaction.atomic():
        saved, _ = AnswerGrade.objects.update_or_create(
            answer=answer,
            user=user,
            source=AnswerGrade.Source.HUMAN,
            defaults={"grade": grade, "supported": supported},
        )
    return saved


@dataclass(frozen=True)
class Agreement:
    slice_name: str  # "" overall, else the slice's label ("queries lang = de")
    pairs: int  # answers graded by a person and by the judge
    same_grade: int
    kappa_grade: float | None  # None under MIN_PAIRS pairs, or undefined (no variation)
    kappa_supported: float | None


def _kappa(a: list[int], b: list[int], values: list[int]) -> float | None:
    if len(a) < MIN_PAIRS:
        return None
    value = cohen_kappa(a, b, values=values)
    return None if math.isnan(value) else value


def grade_agreement(experiment: OracleExperiment) -> list[Agreement]:
    """Agreement of people with the experiment's judge, overall first, then per query slice
    with at least one graded pair. Empty without a judge or without human grades."""
    if experiment.judge_id is None:
        return []
    judged = Q(source=AnswerGrade.Source.MODEL, judge_id=experiment.judge_id, rubric_hash=experiment.judge.rubric_hash)
    grades = AnswerGrade.objects.filter(Q(source=AnswerGrade.Source.HUMAN) | judged, answer__experiment=experiment)
    human: dict[int, tuple[str, bool | None]] = {}
    model: dict[int, tuple[str, bool | None]] = {}
    query_of: dict[int, str] = {}
    rows = grades.exclude(grade="").values_list("answer_id", "source", "grade", "supported", "answer__query__query_id", "created_at")
    for answer_id, source, grade, supported, query_id, _ in sorted(rows, key=lambda row: row[5]):
        # The latest person's grade stands for people when several graded one answer.
        (human if source == AnswerGrade.Source.HUMAN else model)[answer_id] = (grade, supported)
        query_of[answer_id] = query_id
    both = sorted(set(human) & set(model))
    if not both:
        return []
    groups: list[tuple[str, list[int]]] = [("", both)]
    for name, query_ids in slice_parts(experiment.version).query.items():
        members = [answer_id for answer_id in both if query_of[answer_id] in query_ids]
        if members:
            groups.append((slice_label(name), members))
    order = {grade: i for i, grade in enumerate(GRADE_ORDER)}
    result = []
    for name, members in groups:
        people = [order[human[a][0]] for a in members]
        judge = [order[model[a][0]] for a in members]
        supported = [a for a in members if human[a][1] is not None and model[a][1] is not None]
        result.append(
            Agreement(
                slice_name=name,
                pairs=len(members),
                same_grade=sum(p == j for p, j in zip(people, judge, strict=True)),
                kappa_grade=_kappa(people, judge, [0, 1, 2]),
                kappa_supported=_kappa([int(human[a][1]) for a in supported], [int(model[a][1]) for a in supported], [0, 1]),
            )
        )
    return result
