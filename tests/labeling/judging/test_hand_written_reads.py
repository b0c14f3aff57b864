"""The judging requests' hand-written reads (lib.rows) give what the ORM's reads gave:
the same instances field for field, the same access decisions, the same settings."""

import pytest
from django.db import connection
from django.http import Http404
from django.utils import timezone

from goldenset.models import GoldenSet, Membership, Page, Query
from goldenset.selectors import user_roles
from labeling.judging import services as queue
from labeling.judging.selectors import judging_access, judging_task, with_query_place
from labeling.judging.services import task_next, task_submit
from labeling.models import JudgingTask, QueueSettings
from lib.rows import columns, model_from_row, width
from tests.labeling.judging.judging_data import annotator_of, pooled_set

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_a_row_selected_by_hand_is_the_instance_the_orm_reads():
    pool = pooled_set()
    task = JudgingTask.objects.filter(pool=pool).order_by("id").first()
    JudgingTask.objects.filter(pk=task.pk).update(status="done", grade=2, done_at=timezone.now())
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns(JudgingTask, 'task')}, {columns(Page, 'page')} FROM {quote(JudgingTask._meta.db_table)} task "
            f"JOIN {quote(Page._meta.db_table)} page ON page.id = task.page_id WHERE task.id = %s",
            [task.pk],
        )
        row = cursor.fetchone()
    by_hand, page = model_from_row(JudgingTask, row), model_from_row(Page, row, width(JudgingTask))
    assert fields(by_hand) == fields(JudgingTask.objects.get(pk=task.pk))
    assert fields(page) == fields(Page.objects.get(pk=task.page_id))
    assert by_hand.done_at.tzinfo is not None  # aware, as the ORM reads it
    assert not by_hand._state.adding and by_hand._state.db == connection.alias


def test_the_handed_out_task_carries_the_orms_query_page_and_place(make_user):
    pool = pooled_set()
    ann = annotator_of(pool.golden_set, make_user, "ann")
    for _ in range(2):  # a fresh hand-out, then the held task read back through its lease
        task = task_next(golden_set=pool.golden_set, annotator=ann)
        orm = with_query_place(JudgingTask.objects.select_related("query", "page")).get(pk=task.pk)
        assert fields(task) == fields(orm)
        assert fields(task.query) == fields(Query.objects.get(pk=orm.query_id))
        assert fields(task.page) == fields(Page.objects.get(pk=orm.page_id))
        assert task.query_pairs == orm.query_pairs == 4  # the pool holds its top 4 pages of each query
    task_submit(task=task, annotator=ann, grade=1)
    assert judging_task(pool.golden_set, task.pk, ann).judged_already is True


def test_judging_access_reads_the_set_the_roles_and_the_settings_in_one_statement(make_user):
    from django.test.utils import CaptureQueriesContext

    pool = pooled_set()
    golden_set = pool.golden_set
    ann = annotator_of(golden_set, make_user, "ann")
    with CaptureQueriesContext(connection) as captured:
        found, roles, settings = judging_access(ann, golden_set.slug, (Membership.Role.ANNOTATOR,))
    assert len(captured) == 1
    assert fields(found) == fields(GoldenSet.objects.get(pk=golden_set.pk))
    assert roles == {Membership.Role.ANNOTATOR} and user_roles(ann, golden_set) == {Membership.Role.ANNOTATOR}
    expected = queue.queue_settings_of(golden_set)
    assert fields(settings) == fields(expected) and settings.has_samples is expected.has_samples is False
    if connection.vendor == "postgresql":
        assert settings.pool_ids == expected.pool_ids == [pool.pk]


def test_judging_access_refuses_a_stranger_and_a_role_it_was_not_asked_for(make_user):
    golden_set = pooled_set().golden_set
    ann = annotator_of(golden_set, make_user, "ann")
    with pytest.raises(Http404):
        judging_access(make_user("stranger"), golden_set.slug, (Membership.Role.ANNOTATOR,))
    with pytest.raises(Http404):
        judging_access(ann, golden_set.slug, (Membership.Role.MANAGER,))
    with pytest.raises(Http404):
        judging_access(ann, "no-such-set", (Membership.Role.ANNOTATOR,))


def test_a_set_without_queue_settings_yet_gets_none_and_the_queue_makes_them(make_user):
    golden_set = pooled_set().golden_set
    QueueSettings.objects.filter(golden_set=golden_set).delete()
    ann = annotator_of(golden_set, make_user, "ann")
    _, _, settings = judging_access(ann, golden_set.slug, (Membership.Role.ANNOTATOR,))
    assert settings is None
    assert task_next(golden_set=golden_set, annotator=ann) is not None
    assert QueueSettings.objects.filter(golden_set=golden_set).exists()
