"""A published version as a BEIR folder: what BEIR's GenericDataLoader (and Goldset's own
import_beir) reads as it is.

    DIR/corpus.jsonl     {"_id": doc_id, "title": ..., "text": ..., "metadata": {...}} a page
    DIR/queries.jsonl    {"_id": query_id, "text": ..., "metadata": {...}} a query of the version
    DIR/qrels/test.tsv   query-id <TAB> corpus-id <TAB> score, with that header line
    DIR/answers.jsonl    {"query_id", "answer", "aliases", "key_facts"} a reference answer,
                         only for a version that holds answers (BEIR's loader ignores it)

The corpus is every page of the set's corpus as it is now (pages are not versioned; a run is
retrieved over all of them), the queries are the version's with their snapshotted slice
values, the qrels the version's labels, checked against its content hash first. Pages whose
content changed since the version was published are counted, so that whoever rebuilds an
evaluation from the folder knows its labels were given on other text.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from goldenset.answers import answers_jsonl, version_answer_rows
from goldenset.models import Page, Version, VersionPage, VersionQuery
from goldenset.selectors import version_label_rows
from lib.formats import write_qrels
from lib.ids import natural_key

CHUNK = 5_000


@dataclass(frozen=True)
class BeirExport:
    pages: int
    queries: int
    labels: int
    pages_changed_since: int  # labelled pages whose content hash is not the version's
    answers: int = 0  # reference answers written to answers.jsonl


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def version_beir_write(*, version: Version, folder: str | os.PathLike, split: str = "test") -> BeirExport:
    """Write `version` as a BEIR folder into `folder` (made if missing; its three files are
    replaced); the counts written. Raises VersionIntegrityError for a version whose rows no
    longer give its hash, before anything is written."""
    folder = Path(folder)
    labels = list(version_label_rows(version))  # checks the hash first
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as out:
        write_qrels(labels, out, "beir")
    # Both files in natural id order, as every export of Goldset (SEMANTICS.md, "Identifiers").
    queries = sorted(
        VersionQuery.objects.filter(version=version).values_list("query__query_id", "query__text", "metadata"),
        key=lambda row: natural_key(row[0]),
    )
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for query_id, text, metadata in queries:
            out.write(_line({"_id": query_id, "text": text, "metadata": metadata}))
    answers = version_answer_rows(version)  # covered by the hash checked above
    if answers:
        with open(folder / "answers.jsonl", "w", encoding="utf-8") as out:
            out.writelines(answers_jsonl(answers))
    judged_hashes = dict(VersionPage.objects.filter(version=version).values_list("page_id", "content_hash"))
    pages = Page.objects.filter(corpus_id=version.golden_set.corpus_id)
    order = [pk for pk, _ in sorted(pages.values_list("pk", "doc_id"), key=lambda row: natural_key(row[1]))]
    changed = 0
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for start in range(0, len(order), CHUNK):
            chunk = order[start : start + CHUNK]
            found = pages.filter(pk__in=chunk).only("id", "doc_id", "title", "text", "metadata", "content_hash").in_bulk()
            for pk in chunk:
                page = found[pk]
                out.write(_line({"_id": page.doc_id, "title": page.title, "text": page.text, "metadata": page.metadata}))
                if pk in judged_hashes and judged_hashes[pk] != page.content_hash:
                    changed += 1
    return BeirExport(pages=len(order), queries=len(queries), labels=len(labels), pages_changed_since=changed, answers=len(answers))
