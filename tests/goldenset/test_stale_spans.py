"""Stale evidence: when a document's text changes, a span whose text stands where it was
holds, one whose text stands once elsewhere follows it, and one whose text is gone or
doubled makes its label stale: left out of the next version, counted on the publish page
and queued for judging again."""

import pytest
from django.urls import reverse

from goldenset.models import VersionLabel, VersionSpan
from goldenset.services import judgment_record, version_publish
from goldenset.spans import Span
from goldenset.stale_spans import span_now, stale_span_labels
from labeling.coverage.selectors import stale_label_pairs
from labeling.judging.services import task_next, task_submit
from labeling.models import JudgingTask
from labeling.stale.services import stale_queue_fill
from lib.hashing import text_hash

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set(manager="owner")]

LONG = "The jet engine was first run in 1937. Frank Whittle designed it. It flew in 1941."
WHITTLE = (38, 61)  # "Frank Whittle designed it"


def _rewrite(page, text: str, title: str | None = None) -> None:
    page.text = text
    page.title = page.title if title is None else title
    page.content_hash = text_hash(page.title, page.text, page.url)
    page.save(update_fields=["text", "title", "content_hash"])


@pytest.fixture
def judged(golden_set, make_user):
    page = golden_set.corpus.pages.get(doc_id="d4")
    _rewrite(page, LONG)
    query = golden_set.queries.get(query_id="q3")
    judgment_record(query=query, page=page, grade=2, annotator=make_user("ann"), spans=[Span(*WHITTLE)])
    version_publish(golden_set=golden_set)
    return page


def _v_spans(version) -> list[tuple[int, int]]:
    return list(VersionSpan.objects.filter(version=version).values_list("start", "end"))


def _labelled(version) -> bool:
    return VersionLabel.objects.filter(version=version, query__query_id="q3", page__doc_id="d4").exists()


def test_a_span_reads_against_the_new_text_as_holds_follows_or_nothing():
    assert span_now("Whittle", 6, 13, "Frank Whittle") == (6, 13)
    assert span_now("Whittle", 6, 13, "Sir Frank Whittle") == (10, 17)
    assert span_now("Whittle", 6, 13, "Frank Heinkel") is None
    assert span_now("Whittle", 6, 13, "Whittle and Whittle") is None


def test_a_span_that_holds_keeps_its_label_fresh_though_the_page_hash_changed(golden_set, judged):
    _rewrite(judged, LONG, title="a new title")
    version = version_publish(golden_set=golden_set)
    assert _labelled(version) and _v_spans(version) == [WHITTLE]
    assert stale_span_labels(golden_set) == []
    assert stale_label_pairs(version) == []


def test_a_span_whose_text_moved_follows_it_into_the_next_version(golden_set, judged):
    _rewrite(judged, "Preface. " + LONG)
    version = version_publish(golden_set=golden_set)
    assert _labelled(version)
    assert _v_spans(version) == [(WHITTLE[0] + 9, WHITTLE[1] + 9)]
    assert stale_label_pairs(version) == []


@pytest.mark.parametrize("text", [LONG.replace("Frank Whittle", "Hans von Ohain"), "Preface. " + LONG + " Frank Whittle designed it."])
def test_a_span_whose_text_is_gone_or_doubled_leaves_its_label_out_of_the_next_version(client, golden_set, judged, owner, text):
    _rewrite(judged, text)
    [stale] = stale_span_labels(golden_set)
    assert (stale.query_id, stale.page_id) == (golden_set.queries.get(query_id="q3").pk, judged.pk)
    client.force_login(owner)
    body = client.get(reverse("publish", kwargs={"slug": golden_set.slug})).content.decode()
    assert "<strong>1</strong> label left out" in body
    version = version_publish(golden_set=golden_set)
    assert not _labelled(version) and _v_spans(version) == []
    assert version.label_count == 3


def test_stale_labels_are_queued_first_and_come_back_once_judged_again(client, golden_set, judged, owner, make_user):
    _rewrite(judged, LONG.replace("Frank Whittle", "Hans von Ohain"))
    client.force_login(owner)
    body = client.get(reverse("coverage", kwargs={"slug": golden_set.slug})).content.decode()
    assert "Queue for re-judging" in body
    response = client.post(reverse("coverage_stale_queue", kwargs={"slug": golden_set.slug}), follow=True)
    assert "1 queued for judging again" in response.content.decode()
    assert stale_queue_fill(golden_set=golden_set).already_queued == 1

    bob = make_user("bob")
    task = task_next(golden_set=golden_set, annotator=bob)
    assert (task.kind, task.page.doc_id, task.query.query_id) == (JudgingTask.Kind.STALE, "d4", "q3")
    task_submit(task=task, annotator=bob, grade=1)
    assert stale_span_labels(golden_set) == []
    version = version_publish(golden_set=golden_set)
    assert VersionLabel.objects.get(version=version, page=judged).grade == 1
