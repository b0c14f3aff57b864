"""Reference answers in versions: frozen by a publish, hashed only when a version has any
(so every version without them hashes as before; the migration test proves it for a version
published before they existed), re-checked by the exports, diffed, exported, and an edit of
answers alone is a change worth publishing."""

import json

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from goldenset.answers import answers_import, reference_answer_clear, reference_answer_set
from goldenset.diffs import (
    ANSWER_ADDED,
    ANSWER_CHANGED,
    ANSWER_REMOVED,
    publish_preview,
    publish_preview_summary,
    version_changes,
    version_diff,
)
from goldenset.evidence_export import version_answers_chunks, version_export_chunks
from goldenset.models import Page, Query, VersionAnswer
from goldenset.publishing import publish_unchanged, version_publish_request
from goldenset.selectors import version_check_intact, version_recomputed_hash, version_settings
from goldenset.services import query_retire, version_publish
from goldenset.tasks import publish_job_task
from lib.errors import ConflictError, GoldsetError
from lib.hashing import VersionEvidence, answer_line_json, version_hash

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny")]

LABELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1)]


def _line(query_id: str, answer: str, **more) -> str:
    return json.dumps({"query_id": query_id, "answer": answer, **more}) + "\n"


def _plain_parts(version):
    queries = [(query_id, {}) for query_id in ("q1", "q2", "q3")]
    pages = [
        (page.doc_id, {}, page.published_at, page.content_hash)
        for page in Page.objects.filter(doc_id__in=["d1", "d2", "d3"]).order_by("doc_id")
    ]
    return version_settings(version), LABELS, queries, pages


def _query(golden_set, query_id: str) -> Query:
    return Query.objects.get(golden_set=golden_set, query_id=query_id)


def test_a_version_without_answers_hashes_and_exports_as_before(golden_set):
    version = version_publish(golden_set=golden_set)
    assert version.answer_count == 0 and not VersionAnswer.objects.exists()
    assert version.content_hash == version_hash(*_plain_parts(version))
    assert "".join(version_export_chunks(version, "jsonl")) == "".join(
        json.dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n" for q, d, g in LABELS
    )
    assert "".join(version_answers_chunks(version)) == ""


def test_a_publish_freezes_the_answers_and_its_hash_covers_them(golden_set, owner):
    answers_import(
        golden_set=golden_set,
        path_or_lines=[_line("q2", "Kyoto", aliases=["kyoto city"], key_facts=["old capital"]), _line("q1", "Paris")],
        user=owner,
    )
    version = version_publish(golden_set=golden_set)
    assert version.answer_count == 2
    answers = [("q1", answer_line_json("Paris", [], [])), ("q2", answer_line_json("Kyoto", ["kyoto city"], ["old capital"]))]
    assert answers[1][1] == '{"aliases":["kyoto city"],"answer":"Kyoto","key_facts":["old capital"]}'
    assert version.content_hash == version_hash(*_plain_parts(version), VersionEvidence(answers=answers))
    assert version.content_hash != version_hash(*_plain_parts(version))
    # The export's re-check reads the frozen answers back to the same hash.
    assert version_recomputed_hash(version) == version.content_hash
    version_check_intact(version)


def test_an_answer_edited_alone_can_be_published_and_is_in_the_diff(golden_set, owner, django_capture_on_commit_callbacks):
    answers_import(golden_set=golden_set, path_or_lines=[_line("q1", "Paris"), _line("q2", "Kyoto")], user=owner)
    v1 = version_publish(golden_set=golden_set)
    assert publish_unchanged(golden_set) == v1
    with pytest.raises(ConflictError, match="nothing changed"):
        version_publish_request(golden_set=golden_set, user=owner, note="", job_task=publish_job_task)

    reference_answer_set(query=_query(golden_set, "q1"), answer="Lyon", aliases=[], key_facts=[], user=owner)
    reference_answer_clear(query=_query(golden_set, "q2"))
    reference_answer_set(query=_query(golden_set, "q3"), answer="42", aliases=[], key_facts=[], user=owner)
    assert publish_unchanged(golden_set) is None
    preview = publish_preview(golden_set)
    kinds = [(change.kind, change.query_id, change.old_answer, change.new_answer) for change in preview.changes]
    assert kinds == [(ANSWER_CHANGED, "q1", "Paris", "Lyon"), (ANSWER_REMOVED, "q2", "Kyoto", ""), (ANSWER_ADDED, "q3", "", "42")]
    summary = publish_preview_summary(golden_set, first=50)
    assert summary.counts() == preview.counts() and summary.total == 3
    assert [(c.kind, c.query_id, c.old_answer, c.new_answer) for c in summary.first] == kinds

    with django_capture_on_commit_callbacks(execute=True):  # the job's task runs in-process in tests
        version_publish_request(golden_set=golden_set, user=owner, note="answers", job_task=publish_job_task)
    v2 = golden_set.versions.get(number=2)
    assert v2.label_count == v1.label_count and v2.answer_count == 2
    assert [(c.kind, c.query_id) for c in version_changes(v1, v2).changes] == [(k, q) for k, q, _, _ in kinds]
    diff = version_diff(v1, v2).to_dict()
    assert (diff["answers_added"], diff["answers_changed"], diff["answers_removed"]) == (["q3"], ["q1"], ["q2"])
    assert publish_unchanged(golden_set) == v2


def test_a_retired_querys_answer_stays_out_of_the_next_version(golden_set, owner):
    answers_import(golden_set=golden_set, path_or_lines=[_line("q1", "Paris"), _line("q3", "42")], user=owner)
    query_retire(query=_query(golden_set, "q3"))
    version = version_publish(golden_set=golden_set)
    assert version.answer_count == 1
    assert list(VersionAnswer.objects.filter(version=version).values_list("query__query_id", flat=True)) == ["q1"]


def test_the_answers_export_imports_back_unchanged(golden_set, owner, tmp_path):
    lines = [_line("q2", "Kyoto", aliases=["kyoto city"], key_facts=["old capital"]), _line("q1", "Paris", aliases=[], key_facts=[])]
    answers_import(golden_set=golden_set, path_or_lines=lines, user=owner)
    version = version_publish(golden_set=golden_set)
    exported = "".join(version_answers_chunks(version))
    assert exported.splitlines() == [
        '{"query_id": "q1", "answer": "Paris", "aliases": [], "key_facts": []}',
        '{"query_id": "q2", "answer": "Kyoto", "aliases": ["kyoto city"], "key_facts": ["old capital"]}',
    ]
    summary = answers_import(golden_set=golden_set, path_or_lines=exported.splitlines(keepends=True), user=owner)
    assert (summary.added, summary.replaced, summary.unchanged) == (0, 0, 2)
    out = tmp_path / "answers.jsonl"
    call_command("export_qrels", "tiny", "--answers", "--output", str(out))
    assert out.read_text(encoding="utf-8") == exported


def test_the_beir_export_carries_the_answers_when_there_are_any(golden_set, owner, tmp_path):
    version_publish(golden_set=golden_set)
    call_command("export_beir", "tiny", str(tmp_path / "plain"))
    assert not (tmp_path / "plain" / "answers.jsonl").exists()
    answers_import(golden_set=golden_set, path_or_lines=[_line("q1", "Paris")], user=owner)
    version_publish(golden_set=golden_set)
    call_command("export_beir", "tiny", str(tmp_path / "with"))
    assert (tmp_path / "with" / "answers.jsonl").read_text(encoding="utf-8") == _line("q1", "Paris", aliases=[], key_facts=[])


def test_a_versions_answers_cannot_be_changed_by_any_path(golden_set, owner):
    answers_import(golden_set=golden_set, path_or_lines=[_line("q1", "Paris")], user=owner)
    version = version_publish(golden_set=golden_set)
    frozen = VersionAnswer.objects.get(version=version)
    frozen.answer = "Lyon"
    for change in (frozen.save, frozen.delete, lambda: VersionAnswer.objects.filter(version=version).update(answer="Lyon")):
        with pytest.raises(GoldsetError):
            change()
    # Below the app too: the database's trigger refuses a raw change (goldenset 0019; on
    # SQLite, as for every history table there, changes only: deletes are refused on PostgreSQL).
    statements = ["UPDATE goldenset_versionanswer SET answer = 'Lyon'"]
    if connection.vendor == "postgresql":
        statements.append("DELETE FROM goldenset_versionanswer")
    for statement in statements:
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement)
    assert "".join(version_answers_chunks(version)) == _line("q1", "Paris", aliases=[], key_facts=[])
