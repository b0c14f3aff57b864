"""Finding 12 of the hardening probe: an annotator could judge an open task they were
never handed by posting to its id. A judgment or a skip now needs the task to be handed to
them (leased by the queue, or handed back by an undo): otherwise 403 on the page, the
message in the htmx fragment, and nothing written."""

import pytest
from django.urls import reverse

from goldenset.models import Judgment
from goldenset.services import judgment_record
from labeling.judging.services import task_next, task_skip, task_submit
from labeling.models import GoldAnswer, JudgingTask
from lib.errors import ForbiddenError
from tests.labeling.judging.judging_data import annotator_of, pooled_set

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def pool():
    return pooled_set("held-only")


@pytest.fixture
def golden_set(pool):
    return pool.golden_set


@pytest.fixture
def ann(golden_set, make_user, client):
    user = annotator_of(golden_set, make_user, "ann")
    client.force_login(user)
    return user


def never_handed(pool, *but) -> JudgingTask:
    """An open task of the pool that nobody holds, other than `but`."""
    return JudgingTask.objects.filter(pool=pool, status="open", leased_to__isnull=True).exclude(pk__in=[t.pk for t in but]).last()


def test_the_service_refuses_a_judgment_of_an_open_task_never_handed_out(pool, golden_set, ann):
    task = never_handed(pool)
    with pytest.raises(ForbiddenError, match=f"task {task.pk} is not handed to you"):
        task_submit(task=task, annotator=ann, grade=1)
    assert not Judgment.objects.exists()
    task.refresh_from_db()
    assert task.status == "open" and task.judgments_done == 0


def test_the_service_refuses_a_task_while_the_annotator_holds_another(pool, golden_set, ann):
    held = task_next(golden_set=golden_set, annotator=ann)
    with pytest.raises(ForbiddenError):
        task_submit(task=never_handed(pool, held), annotator=ann, grade=1)
    assert not Judgment.objects.exists()
    assert JudgingTask.objects.get(pk=held.pk).leased_to_id == ann.pk  # what they hold is still theirs


def test_the_service_refuses_to_skip_a_task_never_handed_out(pool, golden_set, ann, make_user):
    bob = annotator_of(golden_set, make_user, "bob")
    bobs = task_next(golden_set=golden_set, annotator=bob)
    with pytest.raises(ForbiddenError, match="nothing to skip"):
        task_skip(task=bobs, annotator=ann)
    assert JudgingTask.objects.get(pk=bobs.pk).leased_to_id == bob.pk


def test_a_gold_check_never_handed_out_cannot_be_answered(golden_set, ann):
    query, page = golden_set.queries.get(query_id="q2"), golden_set.corpus.pages.get(doc_id="d8")
    judgment_record(query=query, page=page, grade=3, annotator=None, source=Judgment.Source.IMPORTED)
    gold = JudgingTask.objects.create(golden_set=golden_set, query=query, page=page, kind=JudgingTask.Kind.GOLD)
    with pytest.raises(ForbiddenError):
        task_submit(task=gold, annotator=ann, grade=1)
    assert not GoldAnswer.objects.exists()


def test_posting_a_grade_to_a_task_never_handed_out_answers_403_and_writes_nothing(client, pool, golden_set, ann):
    held = task_next(golden_set=golden_set, annotator=ann)
    other = never_handed(pool, held)
    response = client.post(reverse("judging_judge", args=[golden_set.slug, other.pk]), {"grade": "1"})
    assert response.status_code == 403
    assert f"task {other.pk} is not handed to you" in response.content.decode()
    assert not Judgment.objects.exists()


def test_the_fragment_says_so_and_shows_the_pair_they_hold(client, pool, golden_set, ann):
    held = task_next(golden_set=golden_set, annotator=ann)
    other = never_handed(pool, held)
    response = client.post(reverse("judging_judge", args=[golden_set.slug, other.pk]), {"grade": "1"}, **HTMX)
    body = response.content.decode()
    assert f"task {other.pk} is not handed to you" in body
    assert f'data-task-id="{held.pk}"' in body
    assert not Judgment.objects.exists()


def test_skipping_a_task_never_handed_out_answers_403_and_changes_nothing(client, pool, golden_set, ann, make_user):
    bob = annotator_of(golden_set, make_user, "bob")
    bobs = task_next(golden_set=golden_set, annotator=bob)
    response = client.post(reverse("judging_skip", args=[golden_set.slug, bobs.pk]))
    assert response.status_code == 403
    assert JudgingTask.objects.get(pk=bobs.pk).leased_to_id == bob.pk
    assert bobs.pk not in client.session.get("judging_skipped", {}).get(golden_set.slug, [])


def test_the_pair_handed_out_is_still_judged_as_before(client, golden_set, ann):
    held = task_next(golden_set=golden_set, annotator=ann)
    response = client.post(reverse("judging_judge", args=[golden_set.slug, held.pk]), {"grade": "1"}, **HTMX)
    assert response.status_code == 200
    assert Judgment.objects.filter(annotator=ann, query=held.query, page=held.page).count() == 1
