"""What changed between versions, and what publishing would change: with query text and page
titles, counted by kind and slice, filtered, paged; the preview equals the version it previews."""

import pytest
from django.test import TestCase
from django.urls import reverse

from goldenset.diffs import ADDED, ANSWER_KINDS, QUERY_ADDED, QUERY_REMOVED, REGRADED, REMOVED, publish_preview, version_changes
from goldenset.models import PublishJob, Query
from goldenset.services import membership_grant, qrels_import, query_retire, version_publish
from tests.support import factories

pytestmark = pytest.mark.django_db

# Every kind is counted, answers' too (tests/goldenset/test_answers_versions.py changes them).
NO_ANSWER_CHANGE = dict.fromkeys(ANSWER_KINDS, 0)


@pytest.fixture
def versions(owner):
    """v1 of the tiny set; v2 regrades q1/d1, adds q3/d4 and q4 (with d5), retires q2."""
    golden_set = factories.golden_set(
        "tiny",
        manager=owner,
        queries=factories.queries("q1", "q3", lang="en") + factories.queries("q2", lang="de"),
        query_slice_fields=["lang"],
    )
    v1 = version_publish(golden_set=golden_set)
    qrels_import(golden_set_slug="tiny", lines=["q1 0 d1 3\n", "q3 0 d4 1\n", "q4 0 d5 2\n"], source_name="f", create_missing=True)
    query_retire(query=Query.objects.get(query_id="q2"))
    return golden_set, v1, version_publish(golden_set=golden_set, note="round 2")


def test_each_change_carries_its_query_text_page_title_and_slices(versions):
    _, v1, v2 = versions
    changes = version_changes(v1, v2)
    assert [(c.kind, c.query_id, c.doc_id) for c in changes.changes] == [
        (QUERY_REMOVED, "q2", ""),
        (QUERY_ADDED, "q4", ""),
        (REGRADED, "q1", "d1"),
        (REMOVED, "q2", "d3"),
        (ADDED, "q3", "d4"),
        (ADDED, "q4", "d5"),
    ]
    regraded = changes.filtered(kind=REGRADED)[0]
    assert (regraded.old_grade, regraded.new_grade, regraded.query_text, regraded.page_title) == (2, 3, "question q1", "title d1")
    assert regraded.slices == ("lang=en",)
    assert changes.counts() == {QUERY_ADDED: 1, QUERY_REMOVED: 1, ADDED: 2, REMOVED: 1, REGRADED: 1, **NO_ANSWER_CHANGE}
    assert dict(changes.slice_counts())["lang=de"] == {
        QUERY_ADDED: 0,
        QUERY_REMOVED: 1,
        ADDED: 0,
        REMOVED: 1,
        REGRADED: 0,
        **NO_ANSWER_CHANGE,
    }
    assert [c.doc_id for c in changes.filtered(slice_name="lang=en", kind=ADDED)] == ["d4"]
    # Either way round: what v2 added, v1 lacks.
    back = version_changes(v2, v1)
    assert back.counts() == {QUERY_ADDED: 1, QUERY_REMOVED: 1, ADDED: 1, REMOVED: 2, REGRADED: 1, **NO_ANSWER_CHANGE}


def test_the_preview_is_what_the_publish_then_does(versions):
    golden_set, _, v2 = versions
    assert publish_preview(golden_set).is_empty
    qrels_import(golden_set_slug="tiny", lines=["q3 0 d2 0\n", "q1 0 d1 1\n"], source_name="g")
    preview = publish_preview(golden_set)
    assert (preview.old, preview.new) == ("v2", "now")
    v3 = version_publish(golden_set=golden_set)
    assert version_changes(v2, v3).changes == preview.changes


def test_the_changes_page_shows_text_filters_and_compares_any_two_versions(client, versions, owner):
    golden_set, _, _ = versions
    client.force_login(owner)
    url = reverse("version_changes", args=[golden_set.slug])
    body = client.get(url).content.decode()  # default: the latest against the one before
    assert "v1 → v2" in body and "question q1" in body and "title d1" in body and "2 → 3" in body
    body = client.get(url, {"from": 1, "to": 2, "kind": "added"}).content.decode()
    table = body[body.index('<table class="grid compact changes">') :]
    assert "title d4" in table and "title d5" in table and "2 → 3" not in table
    body = client.get(url, {"from": 1, "to": 2, "slice": "lang=de"}).content.decode()
    table = body[body.index('<table class="grid compact changes">') :]
    assert "q2" in table and "q1" not in table
    assert "v2 → v1" in client.get(url, {"from": 2, "to": 1}).content.decode()


def test_the_changes_page_refuses_a_kind_or_slice_it_does_not_have_naming_it(client, versions, owner):
    client.force_login(owner)
    url = reverse("version_changes", args=["tiny"])
    response = client.get(url, {"kind": "deleted"})
    assert response.status_code == 400 and "kind must be one of" in response.content.decode()
    response = client.get(url, {"slice": "lang=fr"})
    assert response.status_code == 400 and "lang=fr" in response.content.decode()
    assert client.get(url, {"to": 9}).status_code == 404


def test_a_large_diff_is_paged(client, owner):
    golden_set = factories.golden_set("big", manager=owner, queries=factories.queries(*(f"q{n}" for n in range(1, 151))), qrels={})
    qrels_import(golden_set_slug="big", lines=["q1 0 d1 1\n"], source_name="a")
    v1 = version_publish(golden_set=golden_set)
    qrels_import(golden_set_slug="big", lines=[f"q{n} 0 d2 1\n" for n in range(1, 151)], source_name="b")
    version_publish(golden_set=golden_set)
    client.force_login(owner)
    url = reverse("version_changes", args=["big"])
    first = client.get(url).content.decode()
    assert "150 changes" in first and "page 1 of 2" in first and 'rel="next"' in first
    second = client.get(url, {"from": v1.number, "to": 2, "page": 2}).content.decode()
    assert second.count('<tr class="added">') == 50
    # The version page shows the first 50 and links to them all.
    version_page = client.get(reverse("version", args=["big", 2])).content.decode()
    assert version_page.count('<tr class="added">') == 50 and "All 150 changes" in version_page


def test_a_manager_publishes_from_the_set_page_after_reading_the_preview(client, versions, owner):
    golden_set, _, _ = versions
    client.force_login(owner)
    set_page = client.get(reverse("golden_set", args=["tiny"])).content.decode()
    assert reverse("publish", args=["tiny"]) in set_page
    assert reverse("publish", args=["tiny"]) in client.get(reverse("version", args=["tiny", 2])).content.decode()
    # Nothing changed since v2: the preview says so, and a publish is refused on the page.
    assert "Nothing to publish" in client.get(reverse("publish", args=["tiny"])).content.decode()
    refused = client.post(reverse("publish", args=["tiny"]), {"note": "again"})
    assert refused.status_code == 409 and "nothing changed since version 2" in refused.content.decode()
    qrels_import(golden_set_slug="tiny", lines=["q3 0 d2 2\n"], source_name="g")
    preview = client.get(reverse("publish", args=["tiny"])).content.decode()
    assert "against v2" in preview and "title d2" in preview and "question q3" in preview
    assert "<strong>1</strong> pairs added" in preview and "Publish v3" in preview
    with TestCase.captureOnCommitCallbacks(execute=True):  # the publish job, in-process here
        response = client.post(reverse("publish", args=["tiny"]), {"note": "q3 judged"})
    job = PublishJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("publish_job", args=["tiny", job.pk])
    done = client.get(response["Location"]).content.decode()
    assert f'<a href="{reverse("version", args=["tiny", 3])}">v3</a>' in done
    assert golden_set.versions.get(number=3).note == "q3 judged"


@pytest.mark.parametrize("role", ["adjudicator", "annotator", None])
def test_only_managers_publish(client, versions, make_user, role):
    user = make_user("someone")
    if role:
        membership_grant(user=user, golden_set=versions[0], role=role)
    client.force_login(user)
    assert client.get(reverse("publish", args=["tiny"])).status_code == 404
    assert client.post(reverse("publish", args=["tiny"]), {"note": "x"}).status_code == 404
    assert versions[0].versions.count() == 2
