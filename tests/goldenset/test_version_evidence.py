"""A version keeps the evidence spans and hop of the judgment that decided each label, and
the corpus's duplicate groups; its content hash covers them, and a version with none of
them hashes as versions did before they existed."""

import pytest

from goldenset.models import Page, VersionDuplicate, VersionLabel, VersionSpan
from goldenset.selectors import version_check_intact, version_evidence, version_settings
from goldenset.services import judgment_record, version_publish
from goldenset.spans import Span
from lib.errors import GoldsetError
from lib.hashing import version_hash
from tests.support import factories

pytestmark = pytest.mark.django_db

LONG = "The jet engine was first run in 1937. Frank Whittle designed it. It flew in 1941."


@pytest.fixture
def golden_set(golden_set):
    page = golden_set.corpus.pages.get(doc_id="d4")
    page.text = LONG
    page.save(update_fields=["text"])
    return golden_set


def _judge(golden_set, user, doc_id, grade, **options):
    query = golden_set.queries.get(query_id="q3")
    page = golden_set.corpus.pages.get(doc_id=doc_id)
    return judgment_record(query=query, page=page, grade=grade, annotator=user, **options)


def test_a_version_with_no_span_hop_or_duplicate_hashes_as_before(golden_set):
    version = version_publish(golden_set=golden_set)
    labels = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1)]
    queries = [(query_id, {}) for query_id in ("q1", "q2", "q3")]
    pages = [
        (page.doc_id, {}, page.published_at, page.content_hash)
        for page in Page.objects.filter(doc_id__in=["d1", "d2", "d3"]).order_by("doc_id")
    ]
    assert version.content_hash == version_hash(version_settings(version), labels, queries, pages)
    assert (version.span_count, version.hop_count, version.duplicate_count) == (0, 0, 0)


def test_the_deciding_judgments_spans_and_hop_enter_the_version_and_its_hash(golden_set, make_user):
    ann = make_user("ann")
    _judge(golden_set, ann, "d4", 2, spans=[Span(38, 61), Span(0, 36, 1)], hop="inventor")
    version = version_publish(golden_set=golden_set)
    assert (version.span_count, version.hop_count) == (2, 1)
    assert list(VersionSpan.objects.filter(version=version).order_by("start").values_list("start", "end", "grade")) == [
        (0, 36, 1),
        (38, 61, 2),
    ]
    assert VersionLabel.objects.get(version=version, page__doc_id="d4").hop == "inventor"
    evidence = version_evidence(version)
    assert evidence.spans == [("q3", "d4", 0, 36, 1), ("q3", "d4", 38, 61, 2)]
    assert evidence.hops == [("q3", "d4", "inventor")]
    version_check_intact(version)  # the stored rows give the published hash
    # Re-judged as a whole by the same person: the newer judgment decides, without spans.
    _judge(golden_set, ann, "d4", 2)
    again = version_publish(golden_set=golden_set)
    assert again.content_hash != version.content_hash
    assert (again.span_count, again.hop_count) == (0, 0)


def test_spans_are_checked_against_the_document_and_nothing_is_written(golden_set, make_user):
    ann = make_user("ann")
    for spans, message in (
        ([Span(10, 5)], "empty or reversed"),
        ([Span(0, len(LONG) + 1)], "ends past the document"),
        ([Span(0, 20), Span(10, 30)], "overlaps the span before it"),
        ([Span(0, 20, 3)], "above its document's grade"),
    ):
        with pytest.raises(GoldsetError, match=message):
            _judge(golden_set, ann, "d4", 2, spans=spans)
    with pytest.raises(GoldsetError, match="hop"):
        _judge(golden_set, ann, "d4", 2, hop="two words")
    assert not golden_set.queries.get(query_id="q3").judgments.exists()


@pytest.mark.golden_set(qrels={("q1", "d1"): 0, ("q1", "d2"): 2})
def test_a_duplicates_judgment_is_its_groups_and_the_groups_enter_the_version(golden_set):
    d1, d2 = (golden_set.corpus.pages.get(doc_id=doc_id) for doc_id in ("d1", "d2"))
    d2.duplicate_of = d1
    d2.save(update_fields=["duplicate_of"])
    version = version_publish(golden_set=golden_set)
    # One label for the group, on its first member: the later import (d2's grade 2) decides.
    assert list(VersionLabel.objects.filter(version=version, query__query_id="q1").values_list("page__doc_id", "grade")) == [("d1", 2)]
    assert list(VersionDuplicate.objects.filter(version=version).values_list("page__doc_id", "group_page__doc_id")) == [("d2", "d1")]
    assert version_evidence(version).duplicates == [("d2", "d1")]
    version_check_intact(version)


def test_the_factory_set_still_publishes_its_three_labels():
    golden_set = factories.golden_set("plain")
    assert version_publish(golden_set=golden_set).label_count == 3
