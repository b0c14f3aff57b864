"""The answer judge of an oracle experiment: grades as model rows, resumable, garbage kept
with its error; and answer judgments never change labels, versions or recall scores."""

import pytest

from answers.experiments import oracle_experiment_continue, oracle_experiment_run, oracle_experiment_submit
from answers.models import AnswerGrade
from answers.report import experiment_report
from evaluation.models import Run, Score
from goldenset.models import Judgment, Version, VersionLabel

pytestmark = pytest.mark.django_db(transaction=True)


def run_experiment(answer_set, generator, judge, owner, **options):
    experiment = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(golden_set=answer_set, name="bm25"),
        generator=generator,
        judge=judge,
        user=owner,
        send=None,
        **options,
    )
    return oracle_experiment_run(experiment.pk)


def test_the_judge_grades_every_answer_once_as_model_grades(answer_set, generator, judge, owner, chat_server):
    experiment = run_experiment(answer_set, generator, judge, owner)
    # Six answers have a reference (q1..q3, two contexts each); q4's are not graded.
    assert experiment.status == "done" and experiment.grades_done == 6
    grades = AnswerGrade.objects.filter(answer__experiment=experiment)
    assert grades.count() == 6 and set(grades.values_list("source", flat=True)) == {"model"}
    assert set(grades.values_list("rubric_hash", flat=True)) == {judge.rubric_hash}
    # The stand-in judge: correct when the normalised answer is the reference or an alias.
    by_key = {(g.answer.query.query_id, g.answer.context): g for g in grades.select_related("answer__query")}
    assert by_key[("q1", "oracle")].grade == "correct" and by_key[("q1", "oracle")].supported is True
    assert by_key[("q2", "retrieved")].grade == "wrong"
    assert experiment.requests == 14  # 8 answers and 6 grades
    report = experiment_report(experiment)
    assert report.accuracy == "judge" and report.complete
    assert report.overall.contexts["oracle"].judge_accuracy.value == pytest.approx(3 / 3)
    assert report.overall.contexts["retrieved"].judge_accuracy.value == pytest.approx(1 / 3)
    assert report.loss("judge").retrieval.value == pytest.approx(2 / 3)


def test_a_judge_answering_garbage_is_kept_with_its_error_and_a_continue_grades_only_those(
    answer_set, generator, judge, owner, chat_server
):
    experiment = run_experiment(answer_set, generator, None, owner)  # answers first, no judge
    asked = len(chat_server.requests)
    experiment.judge = judge
    experiment.save(update_fields=["judge"])
    chat_server.content = "I think it is fine."
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert len(chat_server.requests) == asked + 6  # no answer asked again: only the six grades
    assert experiment.grades_done == 0
    unread = AnswerGrade.objects.filter(answer__experiment=experiment)
    assert unread.count() == 6 and all(g.error and g.grade == "" and "fine" in g.raw for g in unread)
    report = experiment_report(experiment)
    assert report.overall.contexts["oracle"].judge_accuracy is None and report.accuracy == "exact_match"
    assert report.overall.contexts["oracle"].graded == 0 and not report.complete
    chat_server.content = None
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert experiment.grades_done == 6 and len(chat_server.requests) == asked + 12
    assert AnswerGrade.objects.filter(answer__experiment=experiment).count() == 6  # replaced, not added
    assert experiment_report(experiment).accuracy == "judge"


def test_answers_and_their_grades_change_no_label_version_or_score(answer_set, generator, judge, owner, chat_server):
    def state():
        return (
            sorted(Judgment.objects.values_list("query_id", "page_id", "grade", "created_at")),
            sorted(Version.objects.values_list("pk", "number", "content_hash")),
            sorted(VersionLabel.objects.values_list("version_id", "query_id", "page_id", "grade")),
            sorted(Score.every_level.values_list("evaluation_id", "level", "slice", "metric", "value")),
        )

    before = state()
    experiment = run_experiment(answer_set, generator, judge, owner, closed_book=True)
    assert experiment.answers.count() == 12 and experiment.grades_done == 9
    assert state() == before
