"""Evidence spans: the characters of a document that answer a query (SEMANTICS.md,
"Evidence spans and hops"). What a span must be, checked once for every path that writes
one (the judging screen, the API, imports)."""

from collections.abc import Iterable
from dataclasses import dataclass

from goldenset.models import EvidenceSpan, Page
from lib.errors import GoldsetError

# A hop names an evidence group within one query ("1", "who", "when"); it is an id.
HOP_MAX_LENGTH = 100


@dataclass(frozen=True)
class Span:
    """Characters [start, end) of a document's text, with the grade they earn (None: the
    judgment's grade)."""

    start: int
    end: int
    grade: int | None = None


def spans_checked(page: Page, grade: int, spans: Iterable[Span], *, where: str = "") -> list[Span]:
    """`spans` checked against `page` and the judgment's `grade`, sorted by start, each with
    its grade: inside the page's text, not empty, not overlapping one another, graded no
    higher than the document (a document is at least as relevant as its best span).
    GoldsetError naming the span (and `where`, e.g. "line 4: ") otherwise."""
    checked = []
    length = len(page.text) if page.has_text else None
    for span in sorted(spans, key=lambda span: (span.start, span.end)):
        name = f"{where}span [{span.start}, {span.end}) of {page.doc_id!r}"
        for value in (span.start, span.end):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GoldsetError(f"{name}: offsets must be whole numbers from 0", field="spans")
        if span.end <= span.start:
            raise GoldsetError(f"{name} is empty or reversed: end must be after start", field="spans")
        if length is None:
            raise GoldsetError(f"{name}: the document has no text to mark (an id-only page)", field="spans")
        if span.end > length:
            raise GoldsetError(f"{name} ends past the document's text ({length} characters)", field="spans")
        if checked and span.start < checked[-1].end:
            raise GoldsetError(f"{name} overlaps the span before it [{checked[-1].start}, {checked[-1].end})", field="spans")
        span_grade = grade if span.grade is None else span.grade
        if isinstance(span_grade, bool) or not isinstance(span_grade, int):
            raise GoldsetError(f"{name}: its grade must be a whole number", field="spans")
        if span_grade > grade:
            raise GoldsetError(f"{name} is graded {span_grade}, above its document's grade {grade}", field="spans")
        checked.append(Span(span.start, span.end, span_grade))
    return checked


def hop_checked(hop: str | None, *, where: str = "") -> str:
    """The hop name, stripped ("" for none); GoldsetError if it is too long or holds whitespace."""
    hop = (hop or "").strip()
    if len(hop) > HOP_MAX_LENGTH or any(character.isspace() for character in hop):
        raise GoldsetError(f"{where}hop {hop[:40]!r} must be an id of at most {HOP_MAX_LENGTH} characters without spaces", field="hop")
    return hop


def evidence_rows(judgment_id: int, page: Page, spans: list[Span]) -> list[EvidenceSpan]:
    """The EvidenceSpan rows of checked `spans`, each keeping its text (for stale spans)."""
    return [
        EvidenceSpan(judgment_id=judgment_id, start=span.start, end=span.end, grade=span.grade, text=page.text[span.start : span.end])
        for span in spans
    ]
