"""Chunkings: named ways of cutting a corpus's documents into chunks (SEMANTICS.md,
"Documents, chunkings and levels").

A chunking comes in as a file of chunks (`chunking_import`, the `import_chunks` command,
the API's upload) or is cut by Goldset from the documents' text (`chunk_documents`,
`chunking_cut`, `import_beir --chunking`). Either way every chunk is checked against its
document before anything is written, every problem named by line and chunk id, and the
chunks go in one transaction by COPY (lib.bulk), so a chunking is whole or absent.
"""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.db import transaction
from django.db.models.functions import Length

from goldenset.models import Chunk, Chunking, Corpus, Page
from lib.bulk import gc_paused, model_rows_insert
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.evidence_formats import ChunkLine
from lib.ids import id_problem
from lib.progress import Progress, no_progress

# Documents whose text a check reads at a time (chunks that give their text).
TEXT_BLOCK = 2_000


@dataclass
class ChunkingSummary:
    """What a chunking import wrote, for the command's lines and the API's answer."""

    corpus: str
    chunking: str
    chunks: int
    documents: int
    replaced: bool = False

    def lines(self) -> list[str]:
        return [
            f"chunking {self.corpus}/{self.chunking}" + (" (replaced)" if self.replaced else ""),
            f"chunks: {self.chunks}",
            f"documents with chunks: {self.documents}",
        ]

    def to_dict(self) -> dict:
        return {
            "corpus": self.corpus,
            "chunking": self.chunking,
            "chunks": self.chunks,
            "documents": self.documents,
            "replaced": self.replaced,
        }


def chunking_name_checked(corpus: Corpus, name: str, *, replace: bool) -> Chunking | None:
    """The chunking `name` of `corpus` when `replace` may take it, None when it is new;
    GoldsetError for a malformed or reserved name, ConflictError for one taken."""
    bad = id_problem(name, "chunking name")
    if bad:
        raise GoldsetError(bad, field="chunking")
    if name == Chunking.DOCUMENTS:
        raise GoldsetError(
            f"the chunking name {name!r} is reserved: it is each document as one chunk, and needs no import", field="chunking"
        )
    existing = Chunking.objects.filter(corpus=corpus, name=name).first()
    if existing is not None and not replace:
        raise ConflictError(f"corpus {corpus.slug!r} has a chunking {name!r} already (replace it to import it again)", field="chunking")
    return existing


def _document_lengths(corpus: Corpus) -> dict[str, tuple[int, int, bool]]:
    """{doc_id: (page pk, length of its text in characters, has_text)}, in one fetch."""
    # Length counts characters on both databases, as Python's len does.
    rows = Page.objects.filter(corpus=corpus).values_list("doc_id", "pk", Length("text"), "has_text")
    return {doc_id: (pk, length or 0, bool(has_text)) for doc_id, pk, length, has_text in rows.iterator(chunk_size=50_000)}


def chunks_checked(
    corpus: Corpus, records: Iterable[ChunkLine], source: str, problems: ProblemCollector
) -> list[tuple[str, int, int, int]]:
    """(chunk_id, page pk, start, end) of each record, every fault added to `problems`
    naming the line and chunk id: an unknown document, offsets out of its text, an empty
    or reversed chunk, a chunk id twice, a text that is not the document's at the offsets."""
    documents = _document_lengths(corpus)
    first_line: dict[str, int] = {}
    rows = []
    texts: dict[str, list[ChunkLine]] = {}
    for record in records:
        where = f"{source}:{record.line}: chunk {record.chunk_id!r}"
        if record.chunk_id in first_line:
            problems.add(f"{where} is given twice (first on line {first_line[record.chunk_id]})")
            continue
        first_line[record.chunk_id] = record.line
        document = documents.get(record.doc_id)
        if document is None:
            problems.add(f"{where}: doc id {record.doc_id!r} is not in corpus {corpus.slug!r}")
            continue
        pk, length, has_text = document
        if record.start < 0:
            problems.add(f"{where}: start {record.start} is before the document's text")
        elif record.end <= record.start:
            problems.add(f"{where} is empty or reversed: end {record.end} must be after start {record.start}")
        elif not has_text:
            problems.add(f"{where}: document {record.doc_id!r} has no text to cut (an id-only page)")
        elif record.end > length:
            problems.add(f"{where}: end {record.end} is past the end of document {record.doc_id!r} ({length} characters)")
        else:
            rows.append((record.chunk_id, pk, record.start, record.end))
            if record.text is not None:
                texts.setdefault(record.doc_id, []).append(record)
    _check_texts(corpus, texts, source, problems)
    return rows


def _check_texts(corpus: Corpus, records: dict[str, list[ChunkLine]], source: str, problems: ProblemCollector) -> None:
    doc_ids = list(records)
    for start in range(0, len(doc_ids), TEXT_BLOCK):
        block = doc_ids[start : start + TEXT_BLOCK]
        for doc_id, text in Page.objects.filter(corpus=corpus, doc_id__in=block).values_list("doc_id", "text"):
            for record in records[doc_id]:
                if text[record.start : record.end] != record.text:
                    problems.add(
                        f"{source}:{record.line}: chunk {record.chunk_id!r}: its text is not the text of {doc_id!r} at "
                        f"[{record.start}, {record.end}): {text[record.start : record.end][:40]!r} in the document, "
                        f"{record.text[:40]!r} in the file"
                    )


@gc_paused()
def chunking_import(
    *,
    corpus: Corpus,
    name: str,
    records: Iterable[ChunkLine],
    replace: bool = False,
    description: str = "",
    source_name: str = "chunks",
    problems: ProblemCollector | None = None,
    progress: Progress = no_progress,
) -> ChunkingSummary:
    """Import the chunking `name` of `corpus` from `records`, all or nothing: GoldsetError
    listing every problem (with those a reader already put in `problems`), and nothing
    written; ConflictError when the name is taken and not `replace`d."""
    existing = chunking_name_checked(corpus, name, replace=replace)
    problems = problems if problems is not None else ProblemCollector()
    rows = chunks_checked(corpus, progress(records, f"reading {source_name}"), source_name, problems)
    problems.raise_if_any(f"cannot import chunking {name!r} from {source_name}: {len(problems.problems)} problem(s)")
    if not rows:
        raise GoldsetError(f"{source_name} holds no chunks", field="file")
    return _chunking_write(corpus, name, rows, existing, description, progress)


def _chunking_write(
    corpus: Corpus, name: str, rows: list[tuple[str, int, int, int]], existing, description: str, progress
) -> ChunkingSummary:
    with transaction.atomic():
        if existing is not None:
            Chunk.objects.filter(chunking=existing).delete()
            chunking = existing
        else:
            chunking = Chunking.objects.create(corpus=corpus, name=name, description=description)
        model_rows_insert(
            Chunk, ["chunking_id", "chunk_id", "page_id", "start", "end"], ((chunking.pk, *row) for row in progress(rows, "writing chunks"))
        )
        chunking.chunk_count = len(rows)
        chunking.document_count = len({page for _, page, _, _ in rows})
        update = ["chunk_count", "document_count", "written_at"]
        if description:
            chunking.description = description
            update.append("description")
        chunking.save(update_fields=update)
    return ChunkingSummary(corpus.slug, name, chunking.chunk_count, chunking.document_count, replaced=existing is not None)


def chunking_delete(*, chunking: Chunking) -> None:
    """Delete a chunking and its chunks. Runs that name it keep it (PROTECT refuses)."""
    with transaction.atomic():
        Chunk.objects.filter(chunking=chunking).delete()
        chunking.delete()


# --- chunkings Goldset cuts ----------------------------------------------------------

# Where a chunk may end, best first: after a paragraph, after a sentence, after a word.
_BOUNDARIES = (re.compile(r"\n\s*\n"), re.compile(r"[.!?][\"')\]]*\s"), re.compile(r"\s"))
# A boundary counts as near when the chunk ending there keeps three quarters of the window.
NEAR_SHARE = 0.25


def check_cut(chunk_chars: int, overlap: int) -> None:
    """GoldsetError unless chunks of `chunk_chars` characters overlapping by `overlap` can be cut."""
    if isinstance(chunk_chars, bool) or not isinstance(chunk_chars, int) or chunk_chars < 20:
        raise GoldsetError(f"chunk size {chunk_chars!r} must be a whole number of characters, at least 20", field="chunk_chars")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap <= chunk_chars // 2:
        raise GoldsetError(f"overlap {overlap!r} must be from 0 to half the chunk size ({chunk_chars // 2})", field="overlap")


def _cut_end(text: str, start: int, chunk_chars: int) -> int:
    """Where the chunk from `start` ends: after the best boundary within the window's last
    quarter, or at the window's end when there is none."""
    end = start + chunk_chars
    if end >= len(text):
        return len(text)
    near = end - max(1, int(chunk_chars * NEAR_SHARE))
    for boundary in _BOUNDARIES:
        found = None
        # From a little before `near`: a sentence's stop may stand just before it.
        for match in boundary.finditer(text, max(start, near - 3), end):
            if match.end() >= near:
                found = match
        if found is not None:
            return found.end()
    return end


def _word_start(text: str, position: int, limit: int) -> int:
    """`position`, moved past blanks and, within `limit` characters, to the start of a word."""
    stop = min(len(text), position + limit)
    if position > 0 and not text[position - 1].isspace():
        space = re.compile(r"\s").search(text, position, stop)
        if space is not None:
            position = space.end()
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def chunk_documents(texts: Iterable[tuple[str, str]], chunk_chars: int, overlap: int = 0) -> Iterator[ChunkLine]:
    """Chunks of about `chunk_chars` characters of each (doc_id, text), each ending at a
    paragraph, sentence or word boundary when one is near, the next starting about
    `overlap` characters before it ends (at a word's start); ids `{doc_id}#{n}` from 0.
    A document of blanks only has no chunk. Offsets index the text as given."""
    check_cut(chunk_chars, overlap)
    for doc_id, text in texts:
        start = _word_start(text, 0, 0)
        number = 0
        while start < len(text):
            end = _cut_end(text, start, chunk_chars)
            stripped = end
            while stripped > start and text[stripped - 1].isspace():
                stripped -= 1
            yield ChunkLine(0, f"{doc_id}#{number}", doc_id, start, stripped)
            number += 1
            if end >= len(text):
                break
            following = _word_start(text, max(end - overlap, start + 1), max(1, overlap // 2)) if overlap else _word_start(text, end, 0)
            start = max(following, start + 1)


def chunking_cut(
    *, corpus: Corpus, name: str, chunk_chars: int, overlap: int = 0, replace: bool = False, progress: Progress = no_progress
) -> ChunkingSummary:
    """Cut every document of `corpus` that has text into a new chunking `name`
    (`chunk_documents`), in one transaction."""
    check_cut(chunk_chars, overlap)
    existing = chunking_name_checked(corpus, name, replace=replace)
    pages = Page.objects.filter(corpus=corpus, has_text=True).order_by("id").values_list("id", "doc_id", "text")
    rows = []
    for pk, doc_id, text in progress(pages.iterator(chunk_size=2_000), f"cutting {corpus.slug} into {name}"):
        rows.extend((chunk.chunk_id, pk, chunk.start, chunk.end) for chunk in chunk_documents([(doc_id, text)], chunk_chars, overlap))
    if not rows:
        raise GoldsetError(f"corpus {corpus.slug!r} has no document with text to cut", field="corpus")
    description = f"cut by Goldset: about {chunk_chars} characters, overlap {overlap}"
    return _chunking_write(corpus, name, rows, existing, description, progress)


# --- reads ---------------------------------------------------------------------------


def chunkings_of(corpus: Corpus) -> list[Chunking]:
    """The corpus's chunkings by name (the implicit `documents` is not among them)."""
    return list(Chunking.objects.filter(corpus=corpus).order_by("name"))


def chunk_spans(chunking: Chunking, chunk_ids: Iterable[str]) -> dict[str, tuple[str, int, int]]:
    """{chunk_id: (doc_id, start, end)} of those of `chunk_ids` that are chunks of `chunking`."""
    chunk_ids = list(dict.fromkeys(chunk_ids))
    found = {}
    for start in range(0, len(chunk_ids), TEXT_BLOCK):
        rows = Chunk.objects.filter(chunking=chunking, chunk_id__in=chunk_ids[start : start + TEXT_BLOCK]).values_list(
            "chunk_id", "page__doc_id", "start", "end"
        )
        found.update((chunk_id, (doc_id, begin, end)) for chunk_id, doc_id, begin, end in rows)
    return found
