"""lib.rows.row_insert writes what save() writes, and leaves the writing to save() when a
receiver listens to the model."""

import pytest
from django.db.models.signals import post_save

from goldenset.models import Corpus
from lib.rows import row_insert

pytestmark = pytest.mark.django_db


def test_row_insert_writes_the_row_save_would_with_auto_now_add_filled_in():
    corpus = row_insert(Corpus(slug="by-hand", name="By hand", description="written by row_insert"))
    assert corpus.pk is not None and corpus._state.adding is False and corpus.created_at is not None
    stored = Corpus.objects.get(pk=corpus.pk)
    assert (stored.slug, stored.name, stored.description, stored.created_at) == (
        "by-hand", "By hand", "written by row_insert", corpus.created_at,
    )


def test_row_insert_goes_through_save_when_a_receiver_listens():
    heard = []

    def receiver(sender, instance, created, **kwargs):
        heard.append((instance.slug, created))

    post_save.connect(receiver, sender=Corpus)
    try:
        row_insert(Corpus(slug="heard", name="Heard"))
    finally:
        post_save.disconnect(receiver, sender=Corpus)
    assert heard == [("heard", True)]


def test_row_insert_refuses_a_row_stored_already():
    """As AppendOnlyModel.save does for a judgment: a stored row is never written twice."""
    corpus = row_insert(Corpus(slug="once", name="Once"))
    with pytest.raises(ValueError, match="stored already"):
        row_insert(corpus)
    assert Corpus.objects.filter(slug="once").count() == 1
