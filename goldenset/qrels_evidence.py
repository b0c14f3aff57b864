"""Qrels lines gathered into imported judgments, with their evidence spans and hops.

goldenset.services.qrels_import (and golden_set_import_beir) read lines through `QrelPairs`:
a pair's lines without offsets grade the document and must agree, as they always had to;
lines with offsets (`start`/`end`, or the `spans` of a JSON lines export) each add a span
of the document with the line's grade, and the pair becomes ONE judgment graded the
highest of its lines (SEMANTICS.md, "Evidence spans"). With a chunking named, the lines'
doc ids are chunk ids: each line becomes a span of the chunk's document at the chunk's
offsets, and the spans of one pair that overlap or touch are merged.

`imported_judgments_insert` then checks every span against its document's text (naming the
line and ids), writes the judgments (goldenset.import_rows) and their spans, inside the
caller's transaction: all or nothing.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Max

from goldenset.chunkings import chunk_spans
from goldenset.import_rows import insert_imported_judgments
from goldenset.models import Chunking, Corpus, EvidenceSpan, GoldenSet, Judgment, Page
from goldenset.spans import Span, hop_checked, spans_checked
from lib.bulk import model_rows_insert
from lib.errors import GoldsetError, ProblemCollector
from lib.evidence_formats import EvidenceQrelLine
from lib.formats import QrelLine
from lib.progress import Progress

# Pages whose text is read at a time to check spans.
PAGE_BLOCK = 2_000


@dataclass
class QrelPairs:
    """Qrel lines checked for conflicts: one grade per (query_id, doc_id), with its spans and hop."""

    grades: dict[tuple[str, str], int] = field(default_factory=dict)
    lines: dict[tuple[str, str], int] = field(default_factory=dict)
    # The grade of the pair's lines without offsets, which must agree.
    whole: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # (start, end, grade, line) of each span line of a pair.
    spans: dict[tuple[str, str], list[tuple[int, int, int, int]]] = field(default_factory=dict)
    hops: dict[tuple[str, str], str] = field(default_factory=dict)
    # Pairs whose spans are chunks: overlapping or touching ones merge.
    from_chunks: set[tuple[str, str]] = field(default_factory=set)
    duplicates: int = 0
    _seen: set = field(default_factory=set)

    def add(self, qrel: QrelLine, source: str, problems: ProblemCollector, *, chunk: bool = False) -> None:
        key = (qrel.query_id, qrel.doc_id)
        spans = getattr(qrel, "spans", ())
        hop = getattr(qrel, "hop", "")
        if hop:
            try:
                hop = hop_checked(hop, where=f"{source}:{qrel.line}: ")
            except GoldsetError as exc:
                problems.add(exc.message)
                return
            if self.hops.get(key, hop) != hop:
                problems.add(
                    f"{source}:{qrel.line}: pair ({qrel.query_id!r}, {qrel.doc_id!r}) has hop {hop!r}, "
                    f"but an earlier line gave it {self.hops[key]!r}"
                )
                return
        if hop:
            self.hops[key] = hop
        if not spans:
            if key in self.whole:
                grade, line = self.whole[key]
                if grade != qrel.grade:
                    problems.add(
                        f"{source}:{qrel.line}: pair ({qrel.query_id!r}, {qrel.doc_id!r}) has grade {qrel.grade}, "
                        f"but line {line} gave it grade {grade}"
                    )
                else:
                    self.duplicates += 1
                return
            self.whole[key] = (qrel.grade, qrel.line)
        else:
            identity = (key, qrel.grade, spans)
            if identity in self._seen:
                self.duplicates += 1
                return
            self._seen.add(identity)
        for start, end, grade in spans:
            self.spans.setdefault(key, []).append((start, end, grade, qrel.line))
        if chunk:
            self.from_chunks.add(key)
        self.lines.setdefault(key, qrel.line)
        self.grades[key] = max(self.grades.get(key, qrel.grade), qrel.grade)

    def span_count(self) -> int:
        return sum(len(spans) for spans in self.spans.values())


def chunking_for_qrels(golden_set: GoldenSet | None, name: str | None) -> Chunking | None:
    """The chunking whose chunk ids a qrels file names, or None for doc ids."""
    if not name or name == Chunking.DOCUMENTS:
        return None
    if golden_set is None:
        raise GoldsetError(f"qrels on chunks of {name!r} need an existing golden set and its corpus's chunking", field="chunking")
    chunking = Chunking.objects.filter(corpus_id=golden_set.corpus_id, name=name).first()
    if chunking is None:
        raise GoldsetError(f"corpus {golden_set.corpus.slug!r} has no chunking {name!r}", field="chunking")
    return chunking


def qrels_pairs(qrels: Iterable[QrelLine], source: str, problems: ProblemCollector, chunking: Chunking | None = None) -> QrelPairs:
    """The pairs of `qrels`; with `chunking`, its chunk ids read as spans of their documents
    (a chunk id it does not hold is a problem naming the line)."""
    pairs = QrelPairs()
    if chunking is None:
        for qrel in qrels:
            pairs.add(qrel, source, problems)
        return pairs
    qrels = list(qrels)
    chunks = chunk_spans(chunking, (qrel.doc_id for qrel in qrels))
    for qrel in qrels:
        if getattr(qrel, "spans", ()):
            problems.add(f"{source}:{qrel.line}: chunk {qrel.doc_id!r}: a line on a chunk gives no offsets (the chunk's are taken)")
            continue
        if qrel.doc_id not in chunks:
            problems.add(f"{source}:{qrel.line}: chunk id {qrel.doc_id!r} is not a chunk of {chunking.name!r}")
            continue
        doc_id, start, end = chunks[qrel.doc_id]
        # A chunk graded 0 or less marks no evidence; it still says the document was read.
        spans = ((start, end, qrel.grade),) if qrel.grade > 0 else ()
        line = EvidenceQrelLine(qrel.line, qrel.query_id, doc_id, qrel.grade, spans, getattr(qrel, "hop", ""))
        pairs.add(line, source, problems, chunk=True)
    return pairs


def _merged(spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Chunk spans of one pair, those that overlap or touch merged, graded their highest."""
    merged: list[list[int]] = []
    for start, end, grade, line in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = max(merged[-1][2], grade)
        else:
            merged.append([start, end, grade, line])
    return [tuple(span) for span in merged]


def _checked_spans(corpus: Corpus, pairs: QrelPairs, source: str) -> dict[tuple[str, str], tuple[Page, list[Span]]]:
    """{pair: (page, checked spans)} of the pairs with spans; GoldsetError listing every span
    that is not on its document's text (named by line, query and doc id)."""
    problems = ProblemCollector()
    doc_ids = sorted({doc_id for _, doc_id in pairs.spans})
    pages: dict[str, Page] = {}
    for start in range(0, len(doc_ids), PAGE_BLOCK):
        block = Page.objects.filter(corpus=corpus, doc_id__in=doc_ids[start : start + PAGE_BLOCK]).only("doc_id", "text", "has_text")
        pages.update((page.doc_id, page) for page in block)
    checked = {}
    for key, spans in pairs.spans.items():
        query_id, doc_id = key
        page, grade = pages[doc_id], pairs.grades[key]
        if key in pairs.from_chunks:
            spans = _merged(spans)
        try:
            for start, end, span_grade, line in spans:
                spans_checked(page, grade, [Span(start, end, span_grade)], where=f"{source}:{line}: query {query_id!r}: ")
            checked[key] = (
                page,
                spans_checked(page, grade, [Span(s, e, g) for s, e, g, _ in spans], where=f"{source}:{spans[0][3]}: query {query_id!r}: "),
            )
        except GoldsetError as exc:
            problems.add(exc.message)
    problems.raise_if_any(f"cannot import {source}: {len(problems.problems)} span(s) do not fit their documents")
    return checked


def imported_judgments_insert(
    golden_set: GoldenSet,
    pairs: QrelPairs,
    query_pks: dict[str, int],
    page_pks: dict[str, int],
    source: str,
    progress: Progress,
    page_hashes: dict[str, str] | None = None,
) -> int:
    """Write `pairs` as imported judgments of `golden_set`, with their hops and spans; return
    how many judgments. Inside the caller's transaction; GoldsetError (nothing written by
    this call) for a span off its document."""
    corpus = golden_set.corpus
    checked = _checked_spans(corpus, pairs, source) if pairs.spans else {}
    since = (Judgment.objects.aggregate(last=Max("id"))["last"] or 0) if checked else 0
    count = insert_imported_judgments(corpus, pairs.grades, query_pks, page_pks, progress, page_hashes=page_hashes, hops=pairs.hops)
    if checked:
        # The ids of the judgments just written: those past `since` of the pairs with spans.
        wanted = {(query_pks[query_id], page_pks[doc_id]): (query_id, doc_id) for query_id, doc_id in checked}
        ids = {}
        for pk, query_pk, page_pk in Judgment.objects.filter(id__gt=since, source=Judgment.Source.IMPORTED).values_list(
            "id", "query_id", "page_id"
        ):
            if (query_pk, page_pk) in wanted:
                ids[wanted[(query_pk, page_pk)]] = max(pk, ids.get(wanted[(query_pk, page_pk)], 0))
        rows = (
            (ids[key], span.start, span.end, span.grade, page.text[span.start : span.end])
            for key, (page, spans) in checked.items()
            for span in spans
        )
        model_rows_insert(EvidenceSpan, ["judgment_id", "start", "end", "grade", "text"], rows)
    return count
