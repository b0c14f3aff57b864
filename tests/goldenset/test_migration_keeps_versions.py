"""Acceptance of issue 25: a version published before chunkings, spans, hops and duplicate
groups existed keeps its content hash and its exports, byte for byte, once the database is
migrated (goldenset 0016, evaluation 0015, and every migration since: reference answers, 0019, too); and the history tables still refuse changes
afterwards (SQLite rebuilds altered tables without their triggers: 0016 makes them again).

The version is published in the database as it stood at goldenset 0015 and evaluation 0014,
with the historical models, hashed by lib.hashing.version_hash as publishing hashed it."""

from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from goldenset.evidence_export import version_answers_chunks, version_export_chunks
from goldenset.models import Version
from goldenset.selectors import version_check_intact, version_recomputed_hash
from lib.formats import qrels_chunks
from lib.hashing import text_hash, version_hash

pytestmark = pytest.mark.whole_system

BEFORE = [("goldenset", "0015_worker_start"), ("evaluation", "0014_run_version_asked")]
# The forms a version could be exported in before the migration.
FORMATS = ("trec", "json", "beir", "csv")

LABELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d10", 1), ("q2", "d3", 3)]


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection)


def _publish_the_old_way(apps) -> tuple[int, str, dict[str, str]]:
    """A set published at goldenset 0015: its version's id, hash and exports."""
    Corpus, Page, GoldenSet, Query = (apps.get_model("goldenset", name) for name in ("Corpus", "Page", "GoldenSet", "Query"))
    Judgment, Version, VersionLabel = (apps.get_model("goldenset", name) for name in ("Judgment", "Version", "VersionLabel"))
    VersionQuery, VersionPage = apps.get_model("goldenset", "VersionQuery"), apps.get_model("goldenset", "VersionPage")
    corpus = Corpus.objects.create(slug="old", name="Old")
    published = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    pages = {}
    for doc_id in ("d1", "d2", "d3", "d10"):
        content_hash = text_hash(f"title {doc_id}", f"text of {doc_id}", "")
        pages[doc_id] = Page.objects.create(
            corpus=corpus,
            doc_id=doc_id,
            title=f"title {doc_id}",
            text=f"text of {doc_id}",
            metadata={"lang": "en"},
            published_at=published,
            content_hash=content_hash,
        )
    golden_set = GoldenSet.objects.create(slug="old", name="Old", corpus=corpus, page_slice_fields=["lang"], query_slice_fields=["lang"])
    queries = {q: Query.objects.create(golden_set=golden_set, query_id=q, text=q, metadata={"lang": "de"}) for q in ("q1", "q2")}
    for query_id, doc_id, grade in LABELS:
        Judgment.objects.create(
            query=queries[query_id], page=pages[doc_id], grade=grade, source="imported", page_hash=pages[doc_id].content_hash
        )
    settings = {
        "relevance_threshold": golden_set.relevance_threshold,
        "k_first": golden_set.k_first,
        "k_final": golden_set.k_final,
        "query_slice_fields": ["lang"],
        "page_slice_fields": ["lang"],
    }
    ordered_pages = ["d1", "d2", "d3", "d10"]  # natural order
    content_hash = version_hash(
        settings,
        LABELS,
        [(q, {"lang": "de"}) for q in ("q1", "q2")],
        [(d, {"lang": "en"}, published, pages[d].content_hash) for d in ordered_pages],
    )
    version = Version.objects.create(
        golden_set=golden_set,
        number=1,
        content_hash=content_hash,
        relevance_threshold=1,
        k_first=100,
        k_final=8,
        query_slice_fields=["lang"],
        page_slice_fields=["lang"],
        query_count=2,
        label_count=4,
        relevant_count=3,
        queries_without_relevant=0,
        judgment_count=4,
    )
    for position, (query_id, doc_id, grade) in enumerate(LABELS):
        VersionLabel.objects.create(version=version, query=queries[query_id], page=pages[doc_id], grade=grade, position=position)
    for query_id in ("q1", "q2"):
        VersionQuery.objects.create(version=version, query=queries[query_id], metadata={"lang": "de"})
    for doc_id in ordered_pages:
        VersionPage.objects.create(
            version=version, page=pages[doc_id], metadata={"lang": "en"}, published_at=published, content_hash=pages[doc_id].content_hash
        )
    exports = {fmt: "".join(qrels_chunks(iter(LABELS), fmt)) for fmt in FORMATS}
    return version.pk, content_hash, exports


@pytest.mark.django_db(transaction=True)
def test_a_version_published_before_the_migration_keeps_its_hash_and_exports_byte_for_byte():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        executor = _migrate(BEFORE)
        old_apps = executor.loader.project_state(BEFORE).apps
        with transaction.atomic():
            version_pk, content_hash, exports = _publish_the_old_way(old_apps)
        _migrate(latest)

        version = Version.objects.select_related("golden_set").get(pk=version_pk)
        assert version.content_hash == content_hash == version_recomputed_hash(version)
        assert (version.hop_count, version.span_count, version.duplicate_count) == (0, 0, 0)
        # Reference answers (goldenset 0019) came later still: the version holds none, and hashes without them.
        assert version.answer_count == 0 and "".join(version_answers_chunks(version)) == ""
        version_check_intact(version)
        for fmt in FORMATS:
            assert "".join(version_export_chunks(version, fmt)) == exports[fmt], fmt
        assert exports["trec"] == "q1 0 d1 2\nq1 0 d2 0\nq2 0 d10 1\nq2 0 d3 3\n"

        # The history tables refuse changes on either database after the migration.
        for statement in (
            "UPDATE goldenset_versionlabel SET grade = 0",
            "UPDATE goldenset_judgment SET grade = 0",
            "UPDATE goldenset_version SET content_hash = 'x'",
        ):
            with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement)
        assert version_recomputed_hash(version) == content_hash
    finally:
        _migrate(latest)
