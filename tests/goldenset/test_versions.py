import pytest
from django.contrib.admin.sites import site
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test import RequestFactory

from goldenset.diffs import version_diff
from goldenset.models import Judgment, Page, Query, Version, VersionLabel, VersionPage, VersionQuery
from goldenset.selectors import version_label_rows
from goldenset.services import judgment_record, qrels_import, query_retire, version_publish
from goldenset.signals import version_published
from lib.errors import GoldsetError
from tests.support import factories

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        "tiny",
        manager="owner",
        query_slice_fields=["lang"],
        page_slice_fields=["lang"],
        pages=factories.pages("d1", "d2", "d3", "d4", "d5", lang="en"),
        queries=factories.queries("q1", "q2", "q3", lang="de"),
    ),
]


def test_publishing_snapshots_labels_and_slice_metadata_as_version_one(golden_set, owner):
    version = version_publish(golden_set=golden_set, user=owner, note="first")
    assert (version.number, version.author, version.note) == (1, owner, "first")
    assert list(version_label_rows(version)) == [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1)]
    assert (version.query_count, version.label_count, version.relevant_count, version.queries_without_relevant) == (3, 3, 2, 1)
    assert list(VersionQuery.objects.filter(version=version).values_list("metadata", flat=True)) == [{"lang": "de"}] * 3
    assert VersionPage.objects.filter(version=version).count() == 3
    assert len(version.content_hash) == 64


def test_an_unchanged_set_is_not_published_again(golden_set):
    version_publish(golden_set=golden_set)
    with pytest.raises(GoldsetError, match="nothing changed since version 1"):
        version_publish(golden_set=golden_set)
    assert Version.objects.count() == 1


def test_a_refused_publish_leaves_no_label_behind_and_the_next_version_holds_its_own(golden_set):
    # On PostgreSQL a publish writes its labels, under an id taken ahead, before the hash that may refuse it.
    first = version_publish(golden_set=golden_set)
    with pytest.raises(GoldsetError, match="nothing changed since version 1"):
        version_publish(golden_set=golden_set)
    assert VersionLabel.objects.count() == VersionLabel.objects.filter(version=first).count() == 3
    query_retire(query=Query.objects.get(query_id="q2"))
    second = version_publish(golden_set=golden_set)
    assert list(version_label_rows(second)) == [("q1", "d1", 2), ("q1", "d2", 0)]
    assert VersionLabel.objects.count() == 3 + second.label_count == 5


def test_a_change_of_slice_metadata_alone_makes_a_new_version(golden_set):
    first = version_publish(golden_set=golden_set)
    Query.objects.filter(query_id="q1").update(metadata={"lang": "fr"})
    second = version_publish(golden_set=golden_set)
    assert second.number == 2 and second.content_hash != first.content_hash


def test_the_hash_depends_on_content_not_on_row_ids(owner):
    qrels = {("q1", "d1"): 2, ("q2", "d3"): 1}
    a = factories.golden_set("a", qrels=qrels)
    b = factories.golden_set("b", qrels=dict(reversed(list(qrels.items()))), pages=factories.pages("d5", "d4", "d3", "d2", "d1"))
    assert version_publish(golden_set=a).content_hash == version_publish(golden_set=b).content_hash


def test_the_diff_lists_queries_added_and_removed_and_pairs_added_removed_and_regraded(golden_set, owner):
    v1 = version_publish(golden_set=golden_set)
    qrels_import(golden_set_slug="tiny", lines=["q1 0 d1 3\n", "q3 0 d4 1\n", "q4 0 d5 2\n"], source_name="f", create_missing=True)
    query_retire(query=Query.objects.get(query_id="q2"))
    v2 = version_publish(golden_set=golden_set, note="round 2")
    diff = version_diff(v1, v2)
    assert diff.queries_added == ["q4"] and diff.queries_removed == ["q2"]
    assert diff.pairs_added == [("q3", "d4", 1), ("q4", "d5", 2)]
    assert diff.pairs_removed == [("q2", "d3", 1)]
    assert diff.pairs_regraded == [("q1", "d1", 2, 3)]
    assert version_diff(v1, v1).is_empty


def test_a_human_judgment_must_be_on_the_scale_and_is_resolved_as_latest(golden_set, teammate):
    query, page = Query.objects.get(query_id="q3"), Page.objects.get(doc_id="d5")
    with pytest.raises(GoldsetError, match="grade 9 is not on the scale"):
        judgment_record(query=query, page=page, grade=9, annotator=teammate)
    judgment_record(query=query, page=page, grade=1, annotator=teammate, seconds_spent=4.5)
    judgment_record(query=query, page=page, grade=3, annotator=teammate, note="on second reading")
    version = version_publish(golden_set=golden_set)
    assert version.labels.get(query=query, page=page).grade == 3
    assert Judgment.objects.filter(query=query, page=page).count() == 2


def test_publishing_sends_the_signal_inside_the_transaction(golden_set):
    received = []

    def receiver(sender, version_id, **kwargs):
        received.append(version_id)

    version_published.connect(receiver)
    try:
        version = version_publish(golden_set=golden_set)
    finally:
        version_published.disconnect(receiver)
    assert received == [version.id]


@pytest.mark.django_db(transaction=True)  # the command waits for its job, sent when the request commits
def test_the_command_prints_number_and_hash_and_refuses_an_unchanged_set(golden_set, capsys):
    call_command("publish_version", "tiny", "--note", "hello")
    captured = capsys.readouterr()
    assert "published tiny version 1" in captured.out and Version.objects.get().content_hash in captured.out
    assert "publish job" in captured.err
    with pytest.raises(CommandError, match="nothing changed"):
        call_command("publish_version", "tiny")


# --- immutability: no path of the app changes a published version -------------------


@pytest.fixture
def published(golden_set):
    return version_publish(golden_set=golden_set, note="frozen")


def test_a_version_cannot_be_saved_again_or_deleted_through_the_model(published):
    published.note = "edited"
    with pytest.raises(GoldsetError):
        published.save()
    with pytest.raises(GoldsetError):
        published.delete()
    label = published.labels.first()
    label.grade = 3
    with pytest.raises(GoldsetError):
        label.save()


@pytest.mark.parametrize("model", [Version, VersionLabel, VersionQuery, VersionPage, Judgment])
def test_querysets_refuse_bulk_update_and_delete(published, model):
    with pytest.raises(GoldsetError):
        model.objects.all().update(id=1)
    with pytest.raises(GoldsetError):
        model.objects.all().delete()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE goldenset_versionlabel SET grade = 3",
        "UPDATE goldenset_version SET note = 'x'",
        "UPDATE goldenset_versionquery SET metadata = '{}'",
        "UPDATE goldenset_versionpage SET content_hash = 'x'",
        "UPDATE goldenset_judgment SET grade = 0",
    ],
)
def test_the_database_refuses_raw_updates(published, sql):
    with pytest.raises((DatabaseError, IntegrityError)), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert set(published.labels.values_list("grade", flat=True)) == {0, 1, 2}


def test_the_database_refuses_raw_deletes_on_postgresql(published):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's test flush deletes rows, so there deletes are refused by the app only")
    with pytest.raises((DatabaseError, IntegrityError)), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM goldenset_versionlabel")
    assert published.labels.count() == 3


def test_the_admin_shows_versions_read_only(published, make_user):
    admin = make_user("root", is_staff=True, is_superuser=True)
    request = RequestFactory().get("/")
    request.user = admin
    for model in (Version, VersionLabel, Judgment):
        model_admin = site._registry[model]
        assert not model_admin.has_change_permission(request, None)
        assert not model_admin.has_delete_permission(request, None)
        assert not model_admin.has_add_permission(request)
