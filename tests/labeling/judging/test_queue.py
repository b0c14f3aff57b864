"""The judging queue (labeling.judging.services): who gets which pair, leases, overlap, gold checks,
skips, undo and progress, through the services."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from goldenset.models import Judgment
from goldenset.selectors import resolved_labels
from goldenset.services import judgment_record
from labeling.judging import services as queue
from labeling.judging.selectors import judging_progress, task_is_correction
from labeling.judging.services import judgment_undo, overlap_chosen, task_next, task_skip, task_submit
from labeling.models import CompletenessSample, GoldAnswer, JudgingTask, QueueSettings
from labeling.pools import services
from labeling.pools.selectors import pool_queue
from lib.errors import GoldsetError
from tests.labeling.judging.judging_data import annotator_of, pooled_set, race

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann(golden_set, make_user):
    return annotator_of(golden_set, make_user, "ann")


@pytest.fixture
def bob(golden_set, make_user):
    return annotator_of(golden_set, make_user, "bob")


def judge(golden_set, user, grade=1):
    task = task_next(golden_set=golden_set, annotator=user)
    task_submit(task=task, annotator=user, grade=grade)
    return task


# --- handing out ------------------------------------------------------------------------


def test_the_next_task_is_the_queued_one_of_lowest_position_and_is_leased(pool, golden_set, ann):
    head = pool_queue(pool).first()
    task = task_next(golden_set=golden_set, annotator=ann)
    assert task.pk == head.pk
    assert task.leased_to_id == ann.pk
    assert task.lease_expires_at > timezone.now() + timedelta(seconds=590)


def test_asking_again_gives_back_the_task_already_held(golden_set, ann):
    first = task_next(golden_set=golden_set, annotator=ann)
    assert task_next(golden_set=golden_set, annotator=ann).pk == first.pk


def test_two_annotators_get_different_tasks(golden_set, ann, bob):
    assert task_next(golden_set=golden_set, annotator=ann).pk != task_next(golden_set=golden_set, annotator=bob).pk


def test_a_task_whose_lease_expired_goes_back_to_the_queue(golden_set, ann, bob):
    held = task_next(golden_set=golden_set, annotator=ann)
    JudgingTask.objects.filter(pk=held.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert task_next(golden_set=golden_set, annotator=bob).pk == held.pk


def test_tasks_of_retired_queries_are_not_handed_out(pool, golden_set, ann):
    from goldenset.services import query_retire

    for query in golden_set.queries.exclude(query_id="q2"):
        query_retire(query=query)
    served = []
    while (task := task_next(golden_set=golden_set, annotator=ann)) is not None:
        task_submit(task=task, annotator=ann, grade=0)
        served.append(task.query.query_id)
    assert served == ["q2"] * 4


def test_queue_settings_are_made_on_first_use(make_user):
    pool = pooled_set("fresh")
    QueueSettings.objects.filter(golden_set=pool.golden_set).delete()
    user = annotator_of(pool.golden_set, make_user, "carol")
    task_next(golden_set=pool.golden_set, annotator=user)
    assert QueueSettings.objects.get(golden_set=pool.golden_set).lease_seconds == 600


def test_a_set_without_a_pool_has_nothing_to_judge(make_user):
    from tests.support import factories

    golden_set = factories.golden_set("bare")
    user = annotator_of(golden_set, make_user, "dan")
    assert task_next(golden_set=golden_set, annotator=user) is None


# --- judging -----------------------------------------------------------------------------


def test_a_judgment_is_recorded_and_closes_the_pool_task(pool, golden_set, ann):
    task = task_next(golden_set=golden_set, annotator=ann)
    judgment = task_submit(task=task, annotator=ann, grade=2, note=" plainly on topic ", seconds_spent=4.5)
    assert (judgment.grade, judgment.annotator, judgment.note, judgment.seconds_spent) == (2, ann, "plainly on topic", 4.5)
    task.refresh_from_db()
    assert (task.status, task.grade, task.leased_to, task.judgments_done, task.judgments_required) == ("done", 2, None, 1, 1)


def test_judging_takes_the_task_out_of_the_pools_queue(pool, golden_set, ann, monkeypatch):
    calls = []
    real = queue.pool_task_judged
    monkeypatch.setattr(queue, "pool_task_judged", lambda **kwargs: calls.append(kwargs) or real(**kwargs))
    queued_before = set(pool_queue(pool).values_list("id", flat=True))
    task = judge(golden_set, ann, grade=2)
    assert [(call["task"].pk, call["grade"]) for call in calls] == [(task.pk, 2)]
    assert set(pool_queue(pool).values_list("id", flat=True)) == queued_before - {task.pk}


def test_every_task_of_the_pool_is_judged_once_then_nothing_is_left(pool, golden_set, ann, bob):
    judged = []
    while True:
        progressed = False
        for user in (ann, bob):
            task = task_next(golden_set=golden_set, annotator=user)
            if task is not None:
                task_submit(task=task, annotator=user, grade=0)
                judged.append(task.pk)
                progressed = True
        if not progressed:
            break
    assert sorted(judged) == sorted(JudgingTask.objects.filter(pool=pool).values_list("id", flat=True))
    assert len(judged) == len(set(judged)) == pool.pair_count == 12


def test_a_grade_off_the_scale_is_refused_and_nothing_is_written(golden_set, ann):
    task = task_next(golden_set=golden_set, annotator=ann)
    with pytest.raises(GoldsetError, match="grade 7 is not on the scale"):
        task_submit(task=task, annotator=ann, grade=7)
    assert not Judgment.objects.exists()
    task.refresh_from_db()
    assert (task.status, task.leased_to_id) == ("open", ann.pk)


def test_a_task_held_by_someone_else_cannot_be_judged(golden_set, ann, bob):
    task = task_next(golden_set=golden_set, annotator=ann)
    with pytest.raises(GoldsetError, match="now with another annotator"):
        task_submit(task=task, annotator=bob, grade=1)
    assert not Judgment.objects.exists()


def test_a_late_grade_still_counts_while_nobody_else_took_the_task(golden_set, ann):
    task = task_next(golden_set=golden_set, annotator=ann)
    JudgingTask.objects.filter(pk=task.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=5))
    task_submit(task=task, annotator=ann, grade=1)
    assert Judgment.objects.filter(annotator=ann).count() == 1


def test_a_pair_is_never_judged_twice_by_the_same_annotator(golden_set, ann):
    task = judge(golden_set, ann)
    with pytest.raises(GoldsetError, match="already judged"):
        task_submit(task=task, annotator=ann, grade=3)
    assert Judgment.objects.count() == 1


# --- overlap -----------------------------------------------------------------------------


def test_overlap_is_decided_from_the_task_id_at_about_the_share_asked():
    chosen = [overlap_chosen(task_id, 0.1) for task_id in range(1, 2001)]
    assert 0.09 <= sum(chosen) / len(chosen) <= 0.11
    assert chosen == [overlap_chosen(task_id, 0.1) for task_id in range(1, 2001)]
    assert not any(overlap_chosen(task_id, 0.0) for task_id in range(1, 100))
    assert all(overlap_chosen(task_id, 1.0) for task_id in range(1, 100))


def test_an_overlap_task_goes_to_as_many_annotators_as_asked_and_no_more(golden_set, ann, bob, make_user):
    QueueSettings.objects.filter(golden_set=golden_set).update(overlap_share=1.0, overlap_annotators=2)
    carol = annotator_of(golden_set, make_user, "carol")
    first = judge(golden_set, ann)
    first.refresh_from_db()
    assert (first.judgments_required, first.judgments_done) == (2, 1)
    # The open overlap task comes before new pool tasks, to anyone but its first judge.
    assert task_next(golden_set=golden_set, annotator=ann).pk != first.pk
    second = task_next(golden_set=golden_set, annotator=bob)
    assert second.pk == first.pk
    task_submit(task=second, annotator=bob, grade=2)
    first.refresh_from_db()
    assert (first.status, first.judgments_done, first.grade) == ("done", 2, 1)  # the first grade closed it
    assert task_next(golden_set=golden_set, annotator=carol).pk != first.pk
    assert Judgment.objects.filter(query=first.query, page=first.page).count() == 2


# --- completeness samples and gold checks ------------------------------------------------


def sample_task(golden_set, doc_id="d8", position=0):
    sample = CompletenessSample.objects.create(golden_set=golden_set, depth_from=4, depth_to=8, population=12, size=1, seed=1)
    query = golden_set.queries.get(query_id="q1")
    page = golden_set.corpus.pages.get(doc_id=doc_id)
    return JudgingTask.objects.create(
        golden_set=golden_set,
        query=query,
        page=page,
        kind=JudgingTask.Kind.SAMPLE,
        sample=sample,
        position=position,
    )


def test_a_completeness_sample_task_is_served_in_position_order_and_closed_without_the_pool(golden_set, ann, monkeypatch):
    task = sample_task(golden_set)
    called = []
    monkeypatch.setattr(queue, "pool_task_judged", lambda **kwargs: called.append(kwargs))
    served = task_next(golden_set=golden_set, annotator=ann)
    assert served.pk == task.pk  # position 0 comes before every pool task
    task_submit(task=served, annotator=ann, grade=0)
    task.refresh_from_db()
    assert (task.status, task.grade, task.judgments_done, task.leased_to) == ("done", 0, 1, None)
    assert called == []


def gold_task(golden_set, doc_id="d8", grade=3):
    query = golden_set.queries.get(query_id="q2")
    page = golden_set.corpus.pages.get(doc_id=doc_id)
    judgment_record(query=query, page=page, grade=grade, annotator=None, source=Judgment.Source.IMPORTED)
    return JudgingTask.objects.create(golden_set=golden_set, query=query, page=page, kind=JudgingTask.Kind.GOLD)


def test_a_gold_check_is_served_at_its_rate_and_answered_into_a_gold_answer(golden_set, ann, bob, monkeypatch):
    gold = gold_task(golden_set)
    QueueSettings.objects.filter(golden_set=golden_set).update(gold_share=0.2)
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.5)  # above the rate: no gold check
    assert task_next(golden_set=golden_set, annotator=ann).kind == "pool"
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.1)  # under it
    served = task_next(golden_set=golden_set, annotator=bob)
    assert served.pk == gold.pk
    answer = task_submit(task=served, annotator=bob, grade=1, seconds_spent=3)
    assert isinstance(answer, GoldAnswer)
    assert (answer.grade, answer.expected_grade) == (1, 3)
    assert Judgment.objects.filter(annotator=bob).count() == 0  # the label it checks is untouched
    assert task_next(golden_set=golden_set, annotator=bob).pk != gold.pk  # once per annotator


# --- skips and undo ----------------------------------------------------------------------


def test_a_skipped_task_goes_to_someone_else_not_back_to_the_skipper(golden_set, ann, bob):
    task = task_next(golden_set=golden_set, annotator=ann)
    task_skip(task=task, annotator=ann)
    assert task_next(golden_set=golden_set, annotator=ann, skipped_ids=[task.pk]).pk != task.pk
    assert task_next(golden_set=golden_set, annotator=bob).pk == task.pk


def test_undo_hands_the_last_pair_back_and_the_new_grade_supersedes(golden_set, ann):
    for _ in range(3):
        last = judge(golden_set, ann, grade=1)
    current = task_next(golden_set=golden_set, annotator=ann)
    result = judgment_undo(annotator=ann, golden_set=golden_set)
    assert (result.task.pk, result.previous_grade) == (last.pk, 1)
    assert task_next(golden_set=golden_set, annotator=ann).pk == last.pk
    assert task_is_correction(task=result.task, annotator=ann) == 1
    assert judging_progress(golden_set=golden_set, annotator=ann, pending_correction=True).judged_by_you == 2
    assert JudgingTask.objects.get(pk=current.pk).leased_to is None  # the pair they held is free again

    task_submit(task=last, annotator=ann, grade=3)
    assert Judgment.objects.filter(annotator=ann).count() == 4  # nothing deleted
    labels = {(q, p): g for q, p, g in resolved_labels(golden_set)}
    assert labels[(last.query_id, last.page_id)] == 3
    last.refresh_from_db()
    assert (last.grade, last.judgments_done, last.leased_to) == (3, 1, None)
    assert judging_progress(golden_set=golden_set, annotator=ann).judged_by_you == 3


def test_undo_goes_back_one_judgment_only(golden_set, ann):
    judge(golden_set, ann)
    judgment_undo(annotator=ann, golden_set=golden_set)
    with pytest.raises(GoldsetError, match="already undone"):
        judgment_undo(annotator=ann, golden_set=golden_set)


def test_skipping_an_undone_pair_keeps_the_earlier_grade(golden_set, ann):
    task = judge(golden_set, ann, grade=2)
    judgment_undo(annotator=ann, golden_set=golden_set)
    task_skip(task=task, annotator=ann)
    assert Judgment.objects.get(annotator=ann).grade == 2
    assert task_next(golden_set=golden_set, annotator=ann, skipped_ids=[task.pk]).pk != task.pk


def test_undo_with_nothing_judged_says_so(golden_set, ann):
    with pytest.raises(GoldsetError, match="nothing to undo"):
        judgment_undo(annotator=ann, golden_set=golden_set)


def test_undo_of_a_gold_answer_lets_the_annotator_answer_again(golden_set, ann, monkeypatch):
    gold = gold_task(golden_set)
    QueueSettings.objects.filter(golden_set=golden_set).update(gold_share=0.5)
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.0)
    task_submit(task=task_next(golden_set=golden_set, annotator=ann), annotator=ann, grade=0)
    assert judgment_undo(annotator=ann, golden_set=golden_set).task.pk == gold.pk
    task_submit(task=task_next(golden_set=golden_set, annotator=ann), annotator=ann, grade=3)
    assert list(GoldAnswer.objects.values_list("grade", flat=True)) == [3]


# --- progress ----------------------------------------------------------------------------


def test_progress_counts_the_sets_tasks_done_and_the_annotators_own(pool, golden_set, ann, bob):
    judge(golden_set, ann)
    judge(golden_set, ann)
    judge(golden_set, bob)
    progress = judging_progress(golden_set=golden_set, annotator=ann)
    assert (progress.judged_by_you, progress.done, progress.total) == (2, 3, 12)
    assert progress.percent == 25


def test_the_sets_progress_may_come_from_the_cache_for_the_screens(pool, golden_set, ann, bob):
    judge(golden_set, bob)
    first = judging_progress(golden_set=golden_set, annotator=ann, judged=0, cache_seconds=60)
    judge(golden_set, bob)
    cached = judging_progress(golden_set=golden_set, annotator=ann, judged=0, cache_seconds=60)
    exact = judging_progress(golden_set=golden_set, annotator=ann, judged=0)
    assert (first.done, cached.done, exact.done) == (1, 1, 2)
    assert cached.total == exact.total == 12


# --- statements a judgment costs -------------------------------------------------------------


def test_a_pool_judgment_closes_and_counts_its_task_in_one_update_without_savepoints(pool, golden_set, ann):
    from django.test.utils import CaptureQueriesContext

    task = task_next(golden_set=golden_set, annotator=ann)
    settings = queue.queue_settings_of(golden_set)
    with CaptureQueriesContext(connection) as captured:
        task_submit(task=task, annotator=ann, grade=2)
    statements = [query["sql"] for query in captured.captured_queries]
    # The judgment's own transaction only (a savepoint in a test), none for pool_task_judged.
    assert sum(sql.startswith("SAVEPOINT") for sql in statements) == 1
    assert not any('labeling_poolrun" WHERE' in sql for sql in statements)
    updates = [sql for sql in statements if sql.startswith('UPDATE "labeling_judgingtask" SET "status"')]
    assert len(updates) == 1 and "judgments_done" in updates[0]
    task.refresh_from_db()
    required = settings.overlap_annotators if overlap_chosen(task.pk, settings.overlap_share) else 1
    assert (task.status, task.grade, task.judgments_done, task.judgments_required, task.leased_to) == ("done", 2, 1, required, None)


# --- concurrency ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("overlap_share", "strategy"), [(0.0, "depth"), (0.3, "depth"), (0.3, "model_first")])
def test_concurrent_annotators_never_share_a_task_and_lose_no_judgment(make_user, overlap_share, strategy, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the suite runs on SQLite: test_queue_sqlite.py races the embedded default in a process of its own")
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # windows of two: judgments make most of the tasks as they go
    pool = pooled_set("race", queries=10, pages=12, depth=10, overlap_share=overlap_share, strategy=strategy)
    users = [annotator_of(pool.golden_set, make_user, f"a{n}") for n in range(6)]
    assert race(pool, users) == []
    overlapping = JudgingTask.objects.filter(pool=pool, judgments_required__gt=1).count()
    assert (overlapping > 0) == (overlap_share > 0)
