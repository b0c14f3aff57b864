"""The columnar publish (goldenset.version_rows) makes exactly the version the row-by-row
publish made before it, label for label and hash for hash, on mixed judgments: imports,
several people, adjudications, a person's later grade, retired queries, slice values of
every JSON kind, page dates. The previous publish is kept here, as it was, as the reference;
bench/publish.py measures the speed."""

import random
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from goldenset.models import Judgment, Membership, Page, Query, VersionLabel, VersionPage, VersionQuery
from goldenset.resolution import resolve_columns
from goldenset.selectors import resolved_labels, version_check_intact, version_settings
from goldenset.services import judgment_record, membership_grant, query_retire, version_publish
from goldenset.version_rows import resolved_label_columns
from lib.hashing import version_hash
from lib.ids import natural_key
from tests.support import factories

pytestmark = pytest.mark.django_db

SLICE_VALUES = ["a", "b", 1, 1.0, True, None, ["x", 2], {"k": "é"}, "ü#/:"]


def previous_publish_rows(golden_set) -> dict:
    """What version_publish computed before the columnar rewrite (its code, unchanged in
    substance): labels resolved pair by pair, sorted by natural keys, hashed as tuples."""
    queries = list(Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("id", "query_id", "metadata"))
    query_ids = {pk: query_id for pk, query_id, _ in queries}
    labels = [(q, p, g) for q, p, g in resolved_labels(golden_set) if q in query_ids]
    labelled = {p for _, p, _ in labels}
    page_rows = [
        row
        for row in Page.objects.filter(corpus_id=golden_set.corpus_id).values_list(
            "id", "doc_id", "metadata", "published_at", "content_hash"
        )
        if row[0] in labelled
    ]
    doc_ids = {pk: doc_id for pk, doc_id, *_ in page_rows}
    labels.sort(key=lambda row: (natural_key(query_ids[row[0]]), natural_key(doc_ids[row[1]])))
    queries.sort(key=lambda row: natural_key(row[1]))
    page_rows.sort(key=lambda row: natural_key(row[1]))
    query_fields, page_fields = list(golden_set.query_slice_fields), list(golden_set.page_slice_fields)
    query_metadata = {pk: {n: m[n] for n in query_fields if n in m} for pk, _, m in queries}
    page_metadata = {pk: {n: m[n] for n in page_fields if n in m} for pk, _, m, _, _ in page_rows}
    content_hash = version_hash(
        version_settings(golden_set),
        ((query_ids[q], doc_ids[p], g) for q, p, g in labels),
        ((query_id, query_metadata[pk]) for pk, query_id, _ in queries),
        ((doc_id, page_metadata[pk], published_at, page_hash) for pk, doc_id, _, published_at, page_hash in page_rows),
    )
    threshold = golden_set.relevance_threshold
    return {
        "hash": content_hash,
        "labels": [(q, p, g, position) for position, (q, p, g) in enumerate(labels)],
        "queries": sorted((pk, query_metadata[pk]) for pk, _, _ in queries),
        "pages": sorted((pk, page_metadata[pk], published_at, page_hash) for pk, _, _, published_at, page_hash in page_rows),
        "counts": (
            len(queries),
            len(labels),
            sum(1 for *_, g in labels if g >= threshold),
            len(queries) - len({q for q, _, g in labels if g >= threshold}),
        ),
    }


def published_rows(version) -> dict:
    return {
        "hash": version.content_hash,
        "labels": list(
            VersionLabel.objects.filter(version=version).order_by("position").values_list("query_id", "page_id", "grade", "position")
        ),
        "queries": sorted(VersionQuery.objects.filter(version=version).values_list("query_id", "metadata")),
        "pages": sorted(VersionPage.objects.filter(version=version).values_list("page_id", "metadata", "published_at", "content_hash")),
        "counts": (version.query_count, version.label_count, version.relevant_count, version.queries_without_relevant),
    }


@pytest.fixture
def mixed_set(owner):
    """Queries and pages with awkward ids and slice values, imported labels, then people's
    grades (some twice), adjudications, and two retired queries."""
    rng = random.Random(7)
    doc_ids = [f"d{n}" for n in range(1, 25)] + ["D1", "d01", "x#1/2", "é2", "10", "9"]
    query_ids = [f"q{n}" for n in range(1, 13)] + ["Q1", "q01", "ü"]
    pages = factories.pages(*doc_ids)
    for n, page in enumerate(pages):
        page.metadata = {"kind": SLICE_VALUES[n % len(SLICE_VALUES)], "other": n} if n % 5 else {"other": n}
    queries = factories.queries(*query_ids)
    for n, query in enumerate(queries):
        query.metadata = {"lang": SLICE_VALUES[(n * 2) % len(SLICE_VALUES)]} if n % 4 else {}
    qrels = {(q, d): rng.randrange(4) for q in query_ids for d in rng.sample(doc_ids, 6)}
    golden_set = factories.golden_set(
        "mixed",
        manager=owner,
        pages=pages,
        queries=queries,
        qrels=qrels,
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
    )
    Page.objects.filter(doc_id__in=["d3", "d4", "x#1/2"]).update(published_at=datetime(2024, 5, 1, 12, tzinfo=UTC))
    people = [owner] + [get_user_model().objects.create_user(f"annotator{n}") for n in range(4)]
    for person in people[1:]:
        membership_grant(user=person, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    query_by_id = {q.query_id: q for q in Query.objects.filter(golden_set=golden_set)}
    page_by_id = {p.doc_id: p for p in Page.objects.filter(corpus=golden_set.corpus)}
    for _ in range(160):
        query, page = query_by_id[rng.choice(query_ids)], page_by_id[rng.choice(doc_ids)]
        kind = rng.random()
        if kind < 0.1:
            judgment_record(query=query, page=page, grade=rng.randrange(4), annotator=owner, source=Judgment.Source.ADJUDICATED)
        elif kind < 0.2:
            judgment_record(query=query, page=page, grade=rng.randrange(4), annotator=None, source=Judgment.Source.IMPORTED)
        else:
            judgment_record(query=query, page=page, grade=rng.randrange(4), annotator=rng.choice(people[1:]))
    for query_id in ("q5", "Q1"):
        query_retire(query=query_by_id[query_id])
    return golden_set


def test_the_columnar_resolution_equals_resolved_labels_pair_for_pair(mixed_set):
    active = set(Query.objects.filter(golden_set=mixed_set, retired_at__isnull=True).values_list("id", flat=True))
    expected = [row for row in resolved_labels(mixed_set) if row[0] in active]
    assert len({source for source in Judgment.objects.values_list("source", flat=True)}) == 3
    query, page, grade = resolved_label_columns(mixed_set.pk)
    assert list(zip(query.tolist(), page.tolist(), grade.tolist())) == expected


def test_a_tie_between_people_resolves_to_the_lower_median_and_a_persons_later_grade_counts():
    import numpy as np

    # One pair: person 7 said 3 then 0; person 8 said 2; person 9 said 1 -> grades {0, 2, 1}: median 1.
    # Another: two people, 1 and 2 -> the lower median, 1. A third: an import, then an adjudication.
    rows = np.array(
        [
            # query, page, grade, source, annotator, id
            (1, 1, 3, 1, 7, 1),
            (1, 1, 0, 1, 7, 5),
            (1, 1, 2, 1, 8, 2),
            (1, 1, 1, 1, 9, 3),
            (1, 2, 1, 1, 7, 4),
            (1, 2, 2, 1, 8, 6),
            (2, 1, 3, 0, 0, 7),
            (2, 1, 0, 2, 7, 8),
            (2, 1, 2, 1, 8, 9),
            (2, 2, 1, 0, 0, 10),
            (2, 2, 3, 0, 0, 11),
        ],
        dtype=np.int64,
    )
    query, page, label = resolve_columns(*(rows[:, c] for c in range(6)))
    assert list(zip(query.tolist(), page.tolist(), label.tolist())) == [(1, 1, 1), (1, 2, 1), (2, 1, 0), (2, 2, 3)]


def test_the_publish_equals_the_previous_publish_label_for_label_and_hash_for_hash(mixed_set):
    expected = previous_publish_rows(mixed_set)
    version = version_publish(golden_set=mixed_set)
    assert published_rows(version) == expected
    version_check_intact(version)  # the export's re-check reads the stored rows to the same hash


def test_a_set_larger_than_one_block_of_labels_publishes_the_same(owner, monkeypatch):
    # Blocks of 7 labels: the hash and the writes go block by block.
    monkeypatch.setattr("goldenset.version_rows.LABEL_BLOCK", 7)
    monkeypatch.setattr("goldenset.services.LABEL_BLOCK", 7)
    doc_ids = [f"p{n}" for n in range(40)]
    query_ids = [f"q{n}" for n in range(9)]
    qrels = {(q, d): (i * j) % 4 for i, q in enumerate(query_ids) for j, d in enumerate(doc_ids) if (i + j) % 3 == 0}
    golden_set = factories.golden_set(
        "blocks", manager=owner, pages=factories.pages(*doc_ids), queries=factories.queries(*query_ids), qrels=qrels
    )
    expected = previous_publish_rows(golden_set)
    assert len(expected["labels"]) > 7 * 3
    with transaction.atomic():
        assert published_rows(version_publish(golden_set=golden_set)) == expected


# --- the publish page's preview: counts and first changes, without a Change a label ---------


@pytest.mark.parametrize("first", [1, 5, 40, 1000])
def test_the_preview_summary_shows_the_full_previews_counts_slices_and_first_changes(mixed_set, first):
    from goldenset.diffs import publish_preview, publish_preview_summary

    def same(summary, preview):
        assert summary.counts() == preview.counts()
        assert summary.slice_counts() == preview.slice_counts()
        assert summary.total == len(preview.changes) and summary.is_empty == preview.is_empty
        assert summary.first == preview.changes[:first]

    same(publish_preview_summary(mixed_set, first=first), publish_preview(mixed_set))  # against nothing
    version_publish(golden_set=mixed_set)
    assert publish_preview_summary(mixed_set, first=first).is_empty
    # Regrades, new pairs, a query retired and one brought in: every kind against v1.
    people = list(get_user_model().objects.filter(username__startswith="annotator"))
    queries = list(Query.objects.filter(golden_set=mixed_set, retired_at__isnull=True).order_by("pk"))
    pages = list(Page.objects.filter(corpus=mixed_set.corpus).order_by("pk"))
    rng = random.Random(11)
    for _ in range(40):
        judgment_record(query=rng.choice(queries), page=rng.choice(pages), grade=rng.randrange(4), annotator=rng.choice(people))
    query_retire(query=queries[3])
    same(publish_preview_summary(mixed_set, first=first), publish_preview(mixed_set))
