"""A version's qrels export with its evidence: the hops, spans and duplicate groups it holds.

The JSON lines form writes each label as `{"query_id", "doc_id", "grade"}` with `"hop"` and
`"spans"` when it has them, then the version's duplicate groups; the JSON form wraps the
qrels object with them (lib.evidence_formats). A version with no hop, span or duplicate
(every version made before they existed) is exported as before, byte for byte: the
labels alone, by lib.formats.qrels_chunks. The other forms (TREC, BEIR, CSV) carry grades only.

A version's reference answers are exported on their own (`version_answers_chunks`), as the
JSON lines import_answers reads, checked against the version's hash first like its qrels.
"""

import json
from collections.abc import Iterator

from goldenset.answers import answers_jsonl, version_answer_rows
from goldenset.models import Version
from goldenset.selectors import version_check_intact, version_evidence, version_label_rows
from lib.evidence_formats import EvidenceLabel, json_evidence_document, jsonl_chunks
from lib.formats import qrels_chunks

EVIDENCE_FORMATS = ("json", "jsonl")


def version_has_evidence(version: Version) -> bool:
    return bool(version.hop_count or version.span_count or version.duplicate_count)


def version_export_chunks(
    version: Version, fmt: str, *, query_slice: tuple[str, str] | None = None, page_slice: tuple[str, str] | None = None
) -> Iterator[str]:
    """The text of the version's export in `fmt`, a chunk at a time. Checks the version's
    content hash first (VersionIntegrityError, as version_label_rows); the slices keep the
    labels of one query or page slice, and their spans and hops."""
    rows = version_label_rows(version, query_slice=query_slice, page_slice=page_slice)
    if fmt not in EVIDENCE_FORMATS or not version_has_evidence(version):
        return qrels_chunks(rows, fmt)
    evidence = version_evidence(version)
    hops = {(query_id, doc_id): hop for query_id, doc_id, hop in evidence.hops}
    spans: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for query_id, doc_id, start, end, grade in evidence.spans:
        spans.setdefault((query_id, doc_id), []).append((start, end, grade))
    labels = (
        EvidenceLabel(query_id, doc_id, grade, hops.get((query_id, doc_id), ""), tuple(spans.get((query_id, doc_id), ())))
        for query_id, doc_id, grade in rows
    )
    if fmt == "jsonl":
        return jsonl_chunks(labels, evidence.duplicates)
    return iter([json.dumps(json_evidence_document(labels, evidence.duplicates), ensure_ascii=False) + "\n"])


def version_answers_chunks(version: Version) -> Iterator[str]:
    """The version's reference answers as JSON lines `{"query_id", "answer", "aliases",
    "key_facts"}` in natural query id order (none for a version without answers). Checks
    the version's content hash first (VersionIntegrityError), which covers the answers."""
    version_check_intact(version)
    return answers_jsonl(version_answer_rows(version))
