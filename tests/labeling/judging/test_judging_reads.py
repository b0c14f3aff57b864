"""What the judging requests read: the handed-out task with its query, page and place, the
access decisions of the one access rule (goldenset.selectors.access_golden_set), and queue
settings made on first use."""

import pytest
from django.http import Http404

from goldenset.models import Membership, Page, Query
from goldenset.selectors import access_golden_set, user_roles
from labeling.judging.selectors import judging_task, with_query_place
from labeling.judging.services import task_next, task_submit
from labeling.models import JudgingTask, QueueSettings
from tests.labeling.judging.judging_data import annotator_of, pooled_set

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


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


def test_the_judging_access_reads_the_set_and_remembers_the_roles(make_user):
    golden_set = pooled_set().golden_set
    ann = annotator_of(golden_set, make_user, "ann")
    found = access_golden_set(ann, golden_set.slug, (Membership.Role.ANNOTATOR,))
    assert found.pk == golden_set.pk
    assert user_roles(ann, golden_set) == {Membership.Role.ANNOTATOR}


def test_the_judging_access_refuses_a_stranger_and_a_role_it_was_not_asked_for(make_user):
    golden_set = pooled_set().golden_set
    ann = annotator_of(golden_set, make_user, "ann")
    with pytest.raises(Http404):
        access_golden_set(make_user("stranger"), golden_set.slug, (Membership.Role.ANNOTATOR,))
    with pytest.raises(Http404):
        access_golden_set(ann, golden_set.slug, (Membership.Role.MANAGER,))
    with pytest.raises(Http404):
        access_golden_set(ann, "no-such-set", (Membership.Role.ANNOTATOR,))


def test_a_set_without_queue_settings_yet_gets_them_made_by_the_queue(make_user):
    golden_set = pooled_set().golden_set
    QueueSettings.objects.filter(golden_set=golden_set).delete()
    ann = annotator_of(golden_set, make_user, "ann")
    access_golden_set(ann, golden_set.slug, (Membership.Role.ANNOTATOR,))
    assert not QueueSettings.objects.filter(golden_set=golden_set).exists()  # reading does not make them
    assert task_next(golden_set=golden_set, annotator=ann) is not None
    assert QueueSettings.objects.filter(golden_set=golden_set).exists()
