"""The trigger that records changed pages (goldenset.models.PageChange), on whichever
database the suite runs: stale labels are looked for among those pages only, so a change
of content_hash by any path must be recorded, and nothing else may be."""

import pytest
from django.db import connection

from goldenset.models import Page, PageChange

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set(qrels={("q1", "d1"): 1, ("q2", "d2"): 0})]


def test_a_content_change_by_any_path_records_the_page(golden_set):
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    assert not PageChange.objects.exists()
    Page.objects.filter(pk=page.pk).update(content_hash="changed")
    assert list(PageChange.objects.values_list("page_id", flat=True)) == [page.pk]
    with connection.cursor() as cursor:  # raw SQL, as a corpus sync outside the app would
        cursor.execute(f"UPDATE {Page._meta.db_table} SET content_hash = %s WHERE id = %s", ["changed again", page.pk])
    assert list(PageChange.objects.values_list("page_id", flat=True)) == [page.pk]  # once, however often it changes


def test_other_edits_and_a_hash_written_again_unchanged_record_nothing(golden_set):
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d2")
    Page.objects.filter(pk=page.pk).update(title="a new title")
    Page.objects.filter(pk=page.pk).update(content_hash=page.content_hash)
    assert not PageChange.objects.exists()
