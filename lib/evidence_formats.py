"""The forms of chunks, evidence spans and hops: JSON lines and CSV with named columns.

Chunks (`import_chunks`): one `{"chunk_id", "doc_id", "start", "end", "text"?}` a line.

Qrels with evidence (`import_qrels --format jsonl`, and the `jsonl` export): one
`{"query_id", "doc_id", "grade"}` a line, with optional `"start"` and `"end"` (the line
marks a span of the document, graded by the line), `"spans"` ([{"start", "end", "grade"}],
as the export writes a label's spans) and `"hop"`. The export ends with one
`{"doc_id", "duplicate_of"}` line for each document a version counts as another of its
duplicate group; a reader passes those over (groups are the corpus's, not an import's).
CSV qrels may name the columns `start`, `end` and `hop` in their header line too.

Readers collect every problem, naming the line, as lib.formats's do; offsets are checked
here for their form only (whole numbers), against the documents by the caller.
"""

import csv
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from lib.errors import ProblemCollector
from lib.formats import GRADE_RANGE, QrelLine, _json_objects, csv_cell_value, read_csv_qrels
from lib.ids import id_problem


@dataclass(frozen=True, slots=True)
class ChunkLine:
    line: int
    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str | None = None


@dataclass(frozen=True, slots=True)
class EvidenceQrelLine(QrelLine):
    """A qrels line with what it marks beyond the grade: its spans ((start, end, grade), the
    offsets as the file gives them) and its hop ("" for none)."""

    spans: tuple[tuple[int, int, int], ...] = ()
    hop: str = ""


def _whole(value: object) -> bool:
    return type(value) is int


def read_chunk_lines(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[ChunkLine]:
    """Chunks as JSON lines; a line whose fields are missing or of the wrong kind is a problem
    naming the line (and the chunk id, when it has one)."""
    for number, obj in _json_objects(lines, source, problems):
        missing = [name for name in ("chunk_id", "doc_id", "start", "end") if name not in obj]
        if missing:
            problems.add(f"{source}:{number}: field {missing[0]!r} is missing")
            continue
        bad = id_problem(obj["chunk_id"], "chunk_id") or id_problem(obj["doc_id"], "doc_id")
        if bad:
            problems.add(f"{source}:{number}: {bad}")
            continue
        where = f"{source}:{number}: chunk {obj['chunk_id']!r}"
        if not (_whole(obj["start"]) and _whole(obj["end"])):
            problems.add(f"{where}: start and end must be whole numbers, found {obj['start']!r} and {obj['end']!r}")
            continue
        text = obj.get("text")
        if text is not None and not isinstance(text, str):
            problems.add(f"{where}: field 'text' must be a string")
            continue
        yield ChunkLine(number, obj["chunk_id"], obj["doc_id"], obj["start"], obj["end"], text)


def _grade(value: object) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if type(value) is not int or not GRADE_RANGE[0] <= value <= GRADE_RANGE[1]:
        return None
    return value


def _hop(value: object) -> str | None:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else None


def read_jsonl_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[EvidenceQrelLine]:
    """Qrels as JSON lines (see the module's docstring)."""
    for number, obj in _json_objects(lines, source, problems):
        if "duplicate_of" in obj and "query_id" not in obj:
            continue  # a duplicate group line of an export
        missing = [name for name in ("query_id", "doc_id", "grade") if name not in obj]
        if missing:
            problems.add(f"{source}:{number}: field {missing[0]!r} is missing")
            continue
        bad = id_problem(obj["query_id"], "query id") or id_problem(obj["doc_id"], "doc id")
        if bad:
            problems.add(f"{source}:{number}: {bad}")
            continue
        where = f"{source}:{number}: ({obj['query_id']!r}, {obj['doc_id']!r})"
        grade = _grade(obj["grade"])
        if grade is None:
            problems.add(f"{where}: grade {obj['grade']!r} is not an integer grade")
            continue
        hop = _hop(obj.get("hop"))
        if hop is None:
            problems.add(f"{where}: field 'hop' must be a string")
            continue
        spans = []
        if "start" in obj or "end" in obj:
            spans.append((obj.get("start"), obj.get("end"), grade))
        raw_spans = obj.get("spans") or []
        if not isinstance(raw_spans, list) or not all(isinstance(span, dict) for span in raw_spans):
            problems.add(f"{where}: field 'spans' must be a list of {{start, end, grade}}")
            continue
        for span in raw_spans:
            spans.append((span.get("start"), span.get("end"), _grade(span["grade"]) if "grade" in span else grade))
        wrong = [span for span in spans if not (_whole(span[0]) and _whole(span[1]) and span[2] is not None)]
        if wrong:
            start, end, _ = wrong[0]
            problems.add(f"{where}: span offsets must be whole numbers and its grade an integer, found start {start!r}, end {end!r}")
            continue
        yield EvidenceQrelLine(number, obj["query_id"], obj["doc_id"], grade, tuple(spans), hop)


_CSV_GRADE_NAMES = ("relevance", "grade", "score")


def read_csv_evidence_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[QrelLine]:
    """CSV qrels: as lib.formats.read_csv_qrels reads them, or, when the header line names
    `start`, `end` or `hop` among its columns, each line with its span and hop. A line with
    an empty start and end grades the document as a whole."""
    lines = iter(lines)
    first = list(itertools.islice(lines, 1))
    header = next(csv.reader(first), []) if first else []
    names = [name.strip().lower() for name in header]
    if not ({"start", "end", "hop"} & set(names)):
        yield from read_csv_qrels(itertools.chain(first, lines), source, problems)
        return
    grade_name = next((name for name in _CSV_GRADE_NAMES if name in names), None)
    missing = [
        name
        for name, present in (("query_id", "query_id" in names), ("doc_id", "doc_id" in names), ("relevance", grade_name))
        if not present
    ]
    if missing:
        problems.add(f"{source}:1: the header line names no column {missing[0]!r}")
        return
    column = {name: names.index(name) for name in names}
    for number, row in enumerate(csv.reader(lines), start=2):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(names):
            problems.add(f"{source}:{number}: expected {len(names)} comma-separated columns as the header names, found {len(row)}")
            continue
        query_id, doc_id = csv_cell_value(row[column["query_id"]]), csv_cell_value(row[column["doc_id"]])
        bad = id_problem(query_id, "query id") or id_problem(doc_id, "doc id")
        if bad:
            problems.add(f"{source}:{number}: {bad}")
            continue
        grade = _grade(_csv_number(row[column[grade_name]]))
        if grade is None:
            problems.add(f"{source}:{number}: grade {row[column[grade_name]]!r} is not an integer")
            continue
        start = row[column["start"]].strip() if "start" in column else ""
        end = row[column["end"]].strip() if "end" in column else ""
        spans = ()
        if start or end:
            offsets = (_csv_number(start), _csv_number(end))
            if not all(_whole(value) for value in offsets):
                problems.add(f"{source}:{number}: ({query_id!r}, {doc_id!r}): start {start!r} and end {end!r} must be whole numbers")
                continue
            spans = ((offsets[0], offsets[1], grade),)
        hop = csv_cell_value(row[column["hop"]].strip()) if "hop" in column else ""
        yield EvidenceQrelLine(number, query_id, doc_id, grade, spans, hop)


def _csv_number(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None


# --- writers -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvidenceLabel:
    """A version's label with its evidence, as the JSON and JSON lines exports write it."""

    query_id: str
    doc_id: str
    grade: int
    hop: str = ""
    spans: tuple[tuple[int, int, int], ...] = ()

    def to_dict(self) -> dict:
        record: dict = {"query_id": self.query_id, "doc_id": self.doc_id, "grade": self.grade}
        if self.hop:
            record["hop"] = self.hop
        if self.spans:
            record["spans"] = [{"start": start, "end": end, "grade": grade} for start, end, grade in self.spans]
        return record


def jsonl_chunks(labels: Iterable[EvidenceLabel], duplicates: Iterable[tuple[str, str]], block: int = 10_000) -> Iterator[str]:
    """One JSON object a label, then one `{"doc_id", "duplicate_of"}` a duplicate, a block of
    lines at a time."""
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    buffer = []
    for label in labels:
        buffer.append(dumps(label.to_dict()) + "\n")
        if len(buffer) >= block:
            yield "".join(buffer)
            buffer.clear()
    for doc_id, group_doc_id in duplicates:
        buffer.append(dumps({"doc_id": doc_id, "duplicate_of": group_doc_id}) + "\n")
    if buffer:
        yield "".join(buffer)


def json_evidence_document(labels: Iterable[EvidenceLabel], duplicates: Iterable[tuple[str, str]]) -> dict:
    """The JSON export of a version with evidence: `{"qrels": {query_id: {doc_id: grade}},
    "hops": {query_id: {doc_id: hop}}, "spans": {query_id: {doc_id: [{start, end, grade}]}},
    "duplicates": {doc_id: first member}}`, the last three only when not empty. (A version
    without any is exported as the bare `qrels` object, ranx's form, as before.)"""
    qrels: dict = {}
    hops: dict = {}
    spans: dict = {}
    for label in labels:
        qrels.setdefault(label.query_id, {})[label.doc_id] = label.grade
        if label.hop:
            hops.setdefault(label.query_id, {})[label.doc_id] = label.hop
        if label.spans:
            spans.setdefault(label.query_id, {})[label.doc_id] = label.to_dict()["spans"]
    document: dict = {"qrels": qrels}
    if hops:
        document["hops"] = hops
    if spans:
        document["spans"] = spans
    duplicates = dict(duplicates)
    if duplicates:
        document["duplicates"] = duplicates
    return document
