"""A version's scoring inputs, stored once built (evaluation.models.VersionScoringInputs):
what a cold process reads back must be what it would have built, slices and age buckets
included, and a blob is taken only by the version it was stored for."""

import numpy as np
import pytest

from evaluation import scoring_inputs
from evaluation.models import VersionScoringInputs
from evaluation.selectors import evaluation_settings, version_labels, version_query_ids, version_slices
from evaluation.settings_service import evaluation_settings_update
from tests.support.factories import sliced_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def version():
    golden_set = sliced_set(queries=12, langs=2, doc_types=3)
    return golden_set.latest_version()


def _cold(version):
    scoring_inputs.forget()
    return scoring_inputs.get_or_build(version)


def _same_slices(one, other):
    assert one.query == other.query
    assert list(one.page) == list(other.page)
    for name in one.page:
        assert one.page[name].tolist() == other.page[name].tolist(), name
    assert one.dated_pages.tolist() == other.dated_pages.tolist()
    assert one.published_at.tolist() == other.published_at.tolist()


def test_a_cold_process_reads_back_what_it_would_have_built(version):
    # sliced_set scored a run on the version: its inputs are stored already.
    assert VersionScoringInputs.objects.filter(version=version).count() == 1
    qrels, slices = _cold(version)
    built_labels = sorted(version_labels(version))
    query_ids = qrels.query_ids
    read_labels = sorted((query_ids[q], int(key), int(grade)) for q, key, grade in zip(qrels.query_index, qrels.doc_keys, qrels.grades))
    assert read_labels == sorted((q, key, grade) for q, key, grade in built_labels)
    assert list(query_ids) == version_query_ids(version)
    assert qrels.grades.dtype == np.int64 and qrels.doc_keys.dtype == np.int64
    _same_slices(slices, version_slices(version))
    assert {"query:lang=l0", "query:lang=l1"} <= set(slices.query)
    assert {"page:age=0-30d", "page:age=366d+", "page:doc_type=t0"} <= set(slices.page)


def test_the_age_slices_follow_the_settings_of_the_moment(version):
    _cold(version)
    evaluation_settings_update(golden_set=version.golden_set, user=None, age_buckets=[3, 10])
    version.golden_set.refresh_from_db()
    assert evaluation_settings(version.golden_set).age_buckets == [3, 10]
    _, slices = _cold(version)  # from the stored blob: the buckets are cut when read
    _same_slices(slices, version_slices(version))
    assert "page:age=4-10d" in slices.page and "page:age=11d+" in slices.page
    assert "page:age=0-30d" not in slices.page


def test_a_blob_stored_for_other_labels_is_not_taken(version):
    """SQLite gives a rolled-back version's id out again: the hash and publish time must match."""
    VersionScoringInputs.objects.filter(version=version).update(content_hash="0" * 64)
    qrels, _ = _cold(version)
    assert len(qrels.doc_keys) == len(version_labels(version))
    # The built inputs replace the row that was not theirs.
    assert VersionScoringInputs.objects.get(version=version).content_hash == version.content_hash
