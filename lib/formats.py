"""Readers and writers for the relevance formats of the field: TREC, BEIR, JSON, CSV.

Readers yield plain tuples with the 1-based line number they came from, so the caller
can name the line at fault; they collect every problem instead of stopping at the
first. Writers take an iterable of (query_id, doc_id, grade) rows and write them
in the order given, so a caller that streams rows from the database never holds
them all in memory.
"""

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

import orjson

from lib.errors import ProblemCollector
from lib.ids import id_problem

QREL_FORMATS = ("trec", "json", "beir", "csv", "jsonl")
# How a download of each format is labelled (Content-Type) and named (file extension).
QREL_CONTENT_TYPES = {
    "trec": "text/plain",
    "json": "application/json",
    "beir": "text/tab-separated-values",
    "csv": "text/csv",
    "jsonl": "application/jsonl",
}
QREL_EXTENSIONS = {"trec": "qrels", "json": "json", "beir": "tsv", "csv": "csv", "jsonl": "jsonl"}
# Grades are stored in 16-bit columns (Judgment.grade, VersionLabel.grade): a grade outside
# this range is refused where it enters, not left to fail as a database error.
GRADE_RANGE = (-32768, 32767)


@dataclass(frozen=True)
class QrelLine:
    line: int
    query_id: str
    doc_id: str
    grade: int


@dataclass
class JsonRecord:
    """One object of a BEIR corpus.jsonl or queries.jsonl file."""

    line: int
    id: str
    title: str = ""
    text: str = ""
    url: str = ""
    metadata: dict = field(default_factory=dict)


def _parse_grade(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        # "2.0" is a float in form but an integer grade in meaning; accept it.
        try:
            as_float = float(raw)
        except ValueError:
            return None
        return int(as_float) if as_float.is_integer() else None


def read_trec_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[QrelLine]:
    """TREC qrels: `query_id iteration doc_id grade`, whitespace separated.

    Lines whose first non-blank character is `#` are comments (trec_eval 10 does the
    same); a `#` anywhere else is part of an id, e.g. `CR93E-3103#37`.
    """
    for number, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split()
        if len(parts) != 4:
            problems.add(f"{source}:{number}: expected 4 columns 'query_id iteration doc_id grade', found {len(parts)}: {stripped[:80]!r}")
            continue
        query_id, _iteration, doc_id, raw_grade = parts
        qrel = _checked_qrel(number, query_id, doc_id, raw_grade, source, problems)
        if qrel is not None:
            yield qrel


def _checked_qrel(number: int, query_id: str, doc_id: str, raw_grade: str, source: str, problems: ProblemCollector) -> QrelLine | None:
    """The qrel of one line, or None with its problem added (naming the line)."""
    bad = id_problem(query_id, "query id") or id_problem(doc_id, "doc id")
    if bad:
        problems.add(f"{source}:{number}: {bad}")
        return None
    grade = _parse_grade(raw_grade.strip())
    if grade is None:
        problems.add(f"{source}:{number}: grade {raw_grade!r} is not an integer")
        return None
    if not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
        problems.add(f"{source}:{number}: grade {grade} is outside {GRADE_RANGE[0]}..{GRADE_RANGE[1]}")
        return None
    return QrelLine(number, query_id, doc_id, grade)


def read_beir_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[QrelLine]:
    """BEIR qrels: tab separated `query-id corpus-id score` with a header line.

    Split on tabs only, so that the ids stay exactly as written; an id holding a space
    is then caught by the id check with a clear message.
    """
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        parts = line.split("\t")
        if number == 1 and parts[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(parts) != 3:
            problems.add(
                f"{source}:{number}: expected 3 tab-separated columns 'query-id corpus-id score', found {len(parts)}: {line[:80]!r}"
            )
            continue
        query_id, doc_id, raw_grade = parts
        qrel = _checked_qrel(number, query_id, doc_id, raw_grade, source, problems)
        if qrel is not None:
            yield qrel


def read_csv_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[QrelLine]:
    """CSV qrels as Goldset writes them: `query_id,doc_id,relevance`, a header line first.

    Fields are read with the csv module's quoting, and the spreadsheet guard the writer
    adds (a leading `'`, see `csv_cell`) is taken off again, so an exported file imports
    back to the very same ids.
    """
    for number, row in enumerate(csv.reader(lines), start=1):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if number == 1 and row[0].strip().lower() in ("query_id", "query-id", "qid"):
            continue
        if len(row) != 3:
            problems.add(f"{source}:{number}: expected 3 comma-separated columns 'query_id,doc_id,relevance', found {len(row)}")
            continue
        query_id, doc_id, raw_grade = row
        qrel = _checked_qrel(number, csv_cell_value(query_id), csv_cell_value(doc_id), raw_grade, source, problems)
        if qrel is not None:
            yield qrel


def read_json_qrels(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[QrelLine]:
    """JSON qrels as Goldset's export writes them: `{query_id: {doc_id: grade}}` (ranx's
    Qrels.to_dict). A problem names the key path (`qrels.json: ["q1"]["d7"]: ...`); a key
    given twice in one object is refused, since JSON would silently keep the last. A
    QrelLine's `line` is the label's position in the file, counting from 1."""
    text = "".join(lines).lstrip("\ufeff")
    repeated: list[str] = []

    def refuse_repeats(pairs):
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return result

    try:
        qrels = json.loads(text, object_pairs_hook=refuse_repeats)
    except (ValueError, RecursionError) as exc:
        where = f"{source}:{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else source
        problems.add(f"{where}: not JSON ({exc})")
        return
    for key in repeated:
        problems.add(f"{source}: key {json.dumps(key, ensure_ascii=False)} appears twice in one object")
    if not isinstance(qrels, dict):
        problems.add(f"{source}: expected an object {{query_id: {{doc_id: grade}}}}, found {type(qrels).__name__}")
        return
    number = 0
    for query_id, grades in qrels.items():
        path = f"{source}: [{json.dumps(query_id, ensure_ascii=False)}]"
        if not isinstance(grades, dict):
            problems.add(f"{path}: expected an object {{doc_id: grade}}, found {type(grades).__name__}")
            continue
        for doc_id, grade in grades.items():
            number += 1
            where = f"{path}[{json.dumps(doc_id, ensure_ascii=False)}]"
            bad = id_problem(query_id, "query id") or id_problem(doc_id, "doc id")
            if bad:
                problems.add(f"{where}: {bad}")
            elif type(grade) is not int:
                problems.add(f"{where}: grade {grade!r} is not an integer")
            elif not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
                problems.add(f"{where}: grade {grade} is outside {GRADE_RANGE[0]}..{GRADE_RANGE[1]}")
            else:
                yield QrelLine(number, query_id, doc_id, grade)


def _json_objects(
    lines: Iterable[str],
    source: str,
    problems: ProblemCollector,
    loads: Callable[[str], object] = json.loads,
) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line that holds a JSON object; a line that
    does not is reported in `problems`, naming it, and passed over. `loads` must give
    json.loads's value and raise its JSONDecodeError, as _loads_as_json does."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = loads(raw)
        except json.JSONDecodeError as exc:
            problems.add(f"{source}:{number}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.add(f"{source}:{number}: expected a JSON object, found {type(obj).__name__}")
            continue
        yield number, obj


def _loads_as_json(raw: str) -> object:
    """json.loads(raw), read by orjson where that gives the same value: faster on the lines
    of a corpus, which a large import reads by the hundred thousand (bench/import_export.py).

    orjson refuses some text json takes (NaN, a lone surrogate, 1e400) and reads an
    integer past 64 bits as a float where json keeps it whole. So a line orjson refuses,
    or whose value holds a float anywhere, is read again by json: the value, and the
    message of an error, are json's. Corpus records rarely hold a float.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)
    kind = type(value)
    if kind is float or ((kind is dict or kind is list) and _holds_float(value)):
        return json.loads(raw)
    return value


def _holds_float(container: dict | list) -> bool:
    for value in container.values() if type(container) is dict else container:
        kind = type(value)
        if kind is str:
            continue  # most values: one test, not three
        if kind is float or ((kind is dict or kind is list) and _holds_float(value)):
            return True
    return False


def read_jsonl(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[JsonRecord]:
    """BEIR corpus or queries: one JSON object a line with `_id` and `text` (and `title`).

    Keys other than `_id`, `title`, `text`, `url` and `metadata` are folded into
    `metadata`, so fields such as `lang` or `doc_type` become slice candidates.
    """
    for number, obj in _json_objects(lines, source, problems, _loads_as_json):
        if "_id" not in obj:
            problems.add(f"{source}:{number}: field '_id' is missing")
            continue
        raw_id = obj.pop("_id")
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)  # some BEIR exports write numeric ids unquoted
        bad = id_problem(raw_id, "_id")
        if bad:
            problems.add(f"{source}:{number}: {bad}")
            continue
        metadata = obj.pop("metadata", None) or {}
        if not isinstance(metadata, dict):
            problems.add(f"{source}:{number}: field 'metadata' must be an object")
            continue
        texts = [obj.pop("title", ""), obj.pop("text", ""), obj.pop("url", "")]
        if not (type(texts[0]) is str and type(texts[1]) is str and type(texts[2]) is str):
            texts = ["" if value is None else value for value in texts]
            wrong = [name for name, value in zip(("title", "text", "url"), texts) if not isinstance(value, str)]
            if wrong:
                problems.add(f"{source}:{number}: field {wrong[0]!r} must be a string")
                continue
        metadata.update(obj)
        yield JsonRecord(line=number, id=raw_id, title=texts[0], text=texts[1], url=texts[2], metadata=metadata)


@dataclass(frozen=True)
class ModelLabelLine:
    """One model label of an import: the pair, the grade read from the answer, and the
    model's own score and raw answer when the file gives them."""

    line: int
    query_id: str
    doc_id: str
    grade: int
    score: float | None = None
    raw: str = ""


def read_model_labels_trec(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[ModelLabelLine]:
    """Model labels as TREC qrels (`query_id 0 doc_id grade`): read_trec_qrels, no score."""
    for qrel in read_trec_qrels(lines, source, problems):
        yield ModelLabelLine(qrel.line, qrel.query_id, qrel.doc_id, qrel.grade)


def read_model_labels_jsonl(lines: Iterable[str], source: str, problems: ProblemCollector) -> Iterator[ModelLabelLine]:
    """Model labels as JSON lines: `{"query_id", "doc_id", "grade", "score"?, "raw"?}`.

    `grade` is an integer (2 or 2.0, not "2"); `score` a number or null; `raw` the model's
    answer as text. Every problem names its line and field.
    """
    for number, obj in _json_objects(lines, source, problems):
        missing = [name for name in ("query_id", "doc_id", "grade") if name not in obj]
        if missing:
            problems.add(f"{source}:{number}: field {missing[0]!r} is missing")
            continue
        bad = id_problem(obj["query_id"], "query_id") or id_problem(obj["doc_id"], "doc_id")
        if bad:
            problems.add(f"{source}:{number}: {bad}")
            continue
        grade = obj["grade"]
        if isinstance(grade, float) and grade.is_integer():
            grade = int(grade)
        if type(grade) is not int or not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
            problems.add(f"{source}:{number}: field 'grade' {grade!r} is not an integer grade")
            continue
        score = obj.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or score != score):
            problems.add(f"{source}:{number}: field 'score' {score!r} is not a number")
            continue
        raw = obj.get("raw", "")
        if raw is None:
            raw = ""
        if not isinstance(raw, str):
            problems.add(f"{source}:{number}: field 'raw' must be a string")
            continue
        if "\x00" in raw:
            # No database text column can hold NUL (PostgreSQL refuses it outright).
            problems.add(f"{source}:{number}: field 'raw' holds a NUL character")
            continue
        yield ModelLabelLine(number, obj["query_id"], obj["doc_id"], grade, None if score is None else float(score), raw)


MODEL_LABEL_READERS = {"trec": read_model_labels_trec, "jsonl": read_model_labels_jsonl}


# --- writers -------------------------------------------------------------------------

CHUNK_ROWS = 10_000


def qrels_chunks(rows: Iterable[tuple[str, str, int]], fmt: str) -> Iterator[str]:
    """The text of rows in one of QREL_FORMATS, yielded a chunk (up to CHUNK_ROWS rows) at a time.

    Rows must arrive grouped by query id (the json form relies on it). Streaming chunks
    lets an HTTP response or a file take a million labels without holding them all.
    """
    if fmt == "trec":
        yield from _chunked(rows, lambda q, d, g: f"{q} 0 {d} {g}\n")
    elif fmt == "beir":
        yield "query-id\tcorpus-id\tscore\n"
        yield from _chunked(rows, lambda q, d, g: f"{q}\t{d}\t{g}\n")
    elif fmt == "csv":
        yield "query_id,doc_id,relevance\n"
        yield from _chunked(rows, lambda q, d, g: f"{csv_cell(q)},{csv_cell(d)},{g}\n")
    elif fmt == "json":
        yield from _json_chunks(rows)
    elif fmt == "jsonl":
        # As lib.evidence_formats.jsonl_chunks writes a label without evidence.
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        yield from _chunked(rows, lambda q, d, g: dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n")
    else:
        raise ValueError(f"unknown qrels format {fmt!r}; choose one of {', '.join(QREL_FORMATS)}")


def write_qrels(rows: Iterable[tuple[str, str, int]], out: TextIO, fmt: str) -> None:
    for chunk in qrels_chunks(rows, fmt):
        out.write(chunk)


def qrels_to_text(rows: Iterable[tuple[str, str, int]], fmt: str) -> str:
    return "".join(qrels_chunks(rows, fmt))


def _chunked(rows, line) -> Iterator[str]:
    buffer = []
    for query_id, doc_id, grade in rows:
        buffer.append(line(query_id, doc_id, grade))
        if len(buffer) >= CHUNK_ROWS:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


# A spreadsheet reads a cell that starts with one of these as a formula (OWASP, "CSV
# Injection"); `'` is among them so that the guard below can always be taken off again.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(value: str) -> str:
    """An id as a CSV cell that no spreadsheet runs: a leading `'` before a formula start
    (`=cmd|...` becomes `'=cmd|...`), then the csv module's quoting (ids may hold commas
    or quotes). `csv_cell_value` undoes the guard."""
    if value.startswith(_FORMULA_STARTS):
        value = "'" + value
    if any(ch in value for ch in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_cell_value(cell: str) -> str:
    """The id a cell written by `csv_cell` holds (after the csv module's unquoting)."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(_FORMULA_STARTS) else cell


def _json_chunks(rows) -> Iterator[str]:
    """{query_id: {doc_id: grade}}, loadable with ranx.Qrels.from_dict."""
    dumps = json.dumps
    buffer = ["{"]
    current = None
    count = 0
    for query_id, doc_id, grade in rows:
        if query_id != current:
            buffer.append(("}, " if current is not None else "") + dumps(query_id, ensure_ascii=False) + ": {")
            current = query_id
        else:
            buffer.append(", ")
        buffer.append(f"{dumps(doc_id, ensure_ascii=False)}: {grade}")
        count += 1
        if count % CHUNK_ROWS == 0:
            yield "".join(buffer)
            buffer.clear()
    buffer.append("}}\n" if current is not None else "}\n")
    yield "".join(buffer)
