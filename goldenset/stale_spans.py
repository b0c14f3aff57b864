"""Evidence spans of documents whose text changed (SEMANTICS.md, "Stale evidence").

A judgment records its page's content hash, and each of its spans the text it covered
(EvidenceSpan.text). When the page changes (goldenset.models.PageChange, kept by a
trigger), each span of a judgment made on the earlier text is read against the text now:

- its text still stands at its offsets: it *holds*;
- its text stands exactly once elsewhere: it *follows* it there (new offsets);
- its text is gone, or stands more than once: the judgment is *stale*.

The design keeps judgments append-only and adds no table: where a span stands now is a
function of its kept text, its offsets and the page's text now, computed when it is needed
(publish, the pages that count stale labels, the re-judging queue) for the spans of
changed pages only, which are few. A table of moves would be a cache of that function,
one more thing that could drift from the text it describes. Publish reads the moved
offsets (`stale_spans_apply`): a version keeps a followed span where its text is now, and
leaves out a label whose deciding judgment is stale, so that it is never carried silently
into the next version; the pair waits, unjudged, in the re-judging queue
(labeling.stale) until someone judges it again on the new text.

A judgment without spans on a changed page is stale as before (its page hash differs);
only spans can say that the evidence survived the change.
"""

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.db.models import F

from goldenset.models import EvidenceSpan, GoldenSet, Judgment, PageChange
from goldenset.resolution import ADJUDICATED, HUMAN, IMPORTED, resolve_columns_deciding

# As version_rows reads a judgment's source for resolution.
_SOURCE_RANKS = {Judgment.Source.ADJUDICATED: ADJUDICATED, Judgment.Source.HUMAN: HUMAN}


@dataclass(frozen=True)
class SpanNow:
    """One span of a judgment of a changed page: where it was and where it stands now
    (None when its text is gone or ambiguous)."""

    judgment_id: int
    start: int
    end: int
    now: tuple[int, int] | None

    @property
    def state(self) -> str:
        if self.now is None:
            return "stale"
        return "holds" if self.now == (self.start, self.end) else "follows"


def span_now(text: str, start: int, end: int, page_text: str) -> tuple[int, int] | None:
    """Where a span whose text was `text` at [start, end) stands in `page_text`: the same
    offsets when its text is still there, the one other place it stands, or None."""
    if not text:
        return None
    if page_text[start:end] == text:
        return start, end
    found = page_text.find(text)
    if found < 0 or page_text.find(text, found + 1) >= 0:
        return None
    return found, found + len(text)


def spans_now(golden_set: GoldenSet) -> list[SpanNow]:
    """Every span of the set's judgments made on an earlier text of their page, read
    against the page's text now. One query, over changed pages only."""
    rows = (
        EvidenceSpan.objects.filter(judgment__query__golden_set=golden_set, judgment__page_id__in=PageChange.objects.values("page_id"))
        .exclude(judgment__page_hash="")
        .exclude(judgment__page_hash=F("judgment__page__content_hash"))
        .values_list("judgment_id", "start", "end", "text", "judgment__page__text")
        .order_by("judgment_id", "start")
    )
    return [SpanNow(judgment, start, end, span_now(text, start, end, page_text)) for judgment, start, end, text, page_text in rows]


def span_judgments(golden_set: GoldenSet) -> tuple[set[int], set[int]]:
    """(judgments with a span whose text is gone or ambiguous: stale; judgments of changed
    pages whose every span holds or follows: still good though their page hash differs)."""
    by_judgment: dict[int, list[SpanNow]] = defaultdict(list)
    for span in spans_now(golden_set):
        by_judgment[span.judgment_id].append(span)
    stale = {judgment for judgment, spans in by_judgment.items() if any(span.now is None for span in spans)}
    return stale, set(by_judgment) - stale


@dataclass(frozen=True)
class StaleLabel:
    """A pair whose label is decided by a judgment with a span that no longer holds."""

    query_id: int
    page_id: int
    judgment_id: int


def stale_span_labels(golden_set: GoldenSet) -> list[StaleLabel]:
    """The pairs of the set's active queries whose deciding judgment (goldenset.resolution)
    is stale by its spans, in (query, page) order: what publish leaves out and the
    re-judging queue offers. Reads the judgments of those pairs only."""
    stale, _ = span_judgments(golden_set)
    if not stale:
        return []
    pairs = set(Judgment.objects.filter(pk__in=stale, query__retired_at__isnull=True).values_list("query_id", "page_id"))
    rows = [
        (query, page, grade, _SOURCE_RANKS.get(source, IMPORTED), annotator or 0, ident)
        for query, page, grade, source, annotator, ident in Judgment.objects.filter(
            query_id__in={query for query, _ in pairs}, page_id__in={page for _, page in pairs}
        ).values_list("query_id", "page_id", "grade", "source", "annotator_id", "id")
        if (query, page) in pairs
    ]
    if not rows:
        return []
    columns = np.array(rows, dtype=np.int64).T
    query, page, _, decider = resolve_columns_deciding(*columns)
    return [StaleLabel(int(q), int(p), int(d)) for q, p, d in zip(query.tolist(), page.tolist(), decider.tolist()) if int(d) in stale]


def stale_spans_apply(golden_set: GoldenSet, rows) -> int:
    """Bring a publish's rows (goldenset.version_rows.VersionRows, read with their spans,
    not yet ordered) up to the pages' text now: followed spans take their new offsets, and
    labels decided by a stale judgment are left out with their hop and spans. Returns how
    many labels were left out."""
    moved: dict[tuple[int, int], tuple[int, int]] = {}
    stale: set[int] = set()
    for span in spans_now(golden_set):
        if span.now is None:
            stale.add(span.judgment_id)
        elif span.now != (span.start, span.end):
            moved[(span.judgment_id, span.start)] = span.now
    if rows.label_decider is None or not len(rows.label_decider):
        return 0
    if moved and len(rows.span_label):
        deciders = rows.label_decider[rows.span_label].tolist()
        for index, (judgment, start) in enumerate(zip(deciders, rows.span_start.tolist())):
            now = moved.get((judgment, start))
            if now is not None:
                rows.span_start[index], rows.span_end[index] = now
    if not stale:
        return 0
    keep = ~np.isin(rows.label_decider, np.fromiter(stale, dtype=np.int64, count=len(stale)))
    left_out = int(np.count_nonzero(~keep))
    if not left_out:
        return 0
    new_index = np.cumsum(keep) - 1
    rows.label_query, rows.label_page, rows.label_grade, rows.label_decider = (
        column[keep] for column in (rows.label_query, rows.label_page, rows.label_grade, rows.label_decider)
    )
    rows.hops = {int(new_index[index]): hop for index, hop in rows.hops.items() if keep[index]}
    if len(rows.span_label):
        spans = keep[rows.span_label]
        rows.span_label = new_index[rows.span_label[spans]]
        rows.span_start, rows.span_end, rows.span_grade = (column[spans] for column in (rows.span_start, rows.span_end, rows.span_grade))
    return left_out
