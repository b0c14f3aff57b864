"""Reference answers: the one write path (import, set, clear) and the reads of floor 2.

A query's reference answer (ReferenceAnswer) is what a generated answer is graded against
(answers' oracle experiment). It is edited live, like a query's judgments, and a publish
freezes the answers of the active queries as VersionAnswer rows (goldenset.version_rows),
hashed with the version only when it has any (SEMANTICS.md, "Reference answers").

Every write validates first, names each fault by its line (import) or field (one answer),
and writes in one transaction, or nothing.
"""

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from goldenset.models import GoldenSet, Query, ReferenceAnswer, Version, VersionAnswer
from lib.errors import GoldsetError, ProblemCollector
from lib.hashing import answer_line_json
from lib.ids import natural_key
from lib.uploads import ungzipped_lines

FIELDS = ("query_id", "answer", "aliases", "key_facts")
LIST_FIELDS = ("aliases", "key_facts")


@dataclass(frozen=True)
class ReferenceText:
    """A reference answer's content: the answer, other ways of saying it, the key facts a
    full answer holds (each list in its author's order)."""

    answer: str
    aliases: tuple[str, ...] = ()
    key_facts: tuple[str, ...] = ()

    @classmethod
    def of(cls, answer: str, aliases: Iterable[str], key_facts: Iterable[str]) -> "ReferenceText":
        return cls(answer, tuple(aliases), tuple(key_facts))

    def to_dict(self) -> dict:
        """The fields as an import line and the exports write them (without the query id)."""
        return {"answer": self.answer, "aliases": list(self.aliases), "key_facts": list(self.key_facts)}

    def hash_json(self) -> str:
        """The JSON of the answer's line in a version's content hash (lib.hashing)."""
        return answer_line_json(self.answer, self.aliases, self.key_facts)


@dataclass(frozen=True)
class AnswerImportSummary:
    """What an import did: answers new to their query, answers replaced by a different one,
    and lines that held what the query's answer already was."""

    added: int
    replaced: int
    unchanged: int

    def lines(self) -> list[str]:
        return [f"answers added: {self.added}, replaced: {self.replaced}, unchanged: {self.unchanged}"]


# --- validation -------------------------------------------------------------------------


def _text_problem(value: object, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} must be a string, not {_json_type(value)}"
    if not value.strip():
        return f"{what} is empty"
    return None


def _list_problems(value: object, what: str) -> list[str]:
    if not isinstance(value, list):
        return [f"{what} must be a list of strings, not {_json_type(value)}"]
    return [bad for index, item in enumerate(value, start=1) if (bad := _text_problem(item, f"{what} item {index}"))]


def _json_type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(type(value), "a number")


def reference_text_problems(answer: object, aliases: object, key_facts: object) -> list[tuple[str, str]]:
    """(field, problem) for each fault of an answer's fields: the answer a non-empty string,
    aliases and key facts lists of non-empty strings."""
    found = []
    if bad := _text_problem(answer, "answer"):
        found.append(("answer", bad))
    for name, value in (("aliases", aliases), ("key_facts", key_facts)):
        found += [(name, bad) for bad in _list_problems(value, name)]
    return found


# --- writes -----------------------------------------------------------------------------


def _lines_of(path_or_lines: str | os.PathLike | Iterable[str]) -> tuple[str, Iterator[str]]:
    """(the name messages give the input, its lines): a path is read as UTF-8 (gzip too)."""
    if isinstance(path_or_lines, (str, os.PathLike)):
        path = Path(path_or_lines)
        if not path.is_file():
            raise GoldsetError(f"{path}: no such file", field="file")

        def read() -> Iterator[str]:
            with open(path, "rb") as handle:
                yield from ungzipped_lines(handle, path.name, "answers")

        return path.name, read()
    return "answers", iter(path_or_lines)


def answers_import(
    *, golden_set: GoldenSet, path_or_lines: str | os.PathLike | Iterable[str], user: AbstractBaseUser | None
) -> AnswerImportSummary:
    """Set the reference answers of JSON lines `{"query_id", "answer", "aliases"?,
    "key_facts"?}` on the set's active queries, all or nothing: a query's answer is replaced
    by its line's. Returns the counts of answers added, replaced and unchanged.

    Refuses (GoldsetError, every fault listed, each naming its line and field): a line that
    is not a JSON object, an unknown field, a missing or unknown query id (a retired query
    included), a missing or empty answer, aliases or key facts that are not lists of
    non-empty strings, a query id twice in the file, and a file without a line.
    """
    name, lines = _lines_of(path_or_lines)
    problems = ProblemCollector()
    records: dict[str, tuple[int, ReferenceText]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{where}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(record, dict):
            problems.add(f"{where}: a line must be a JSON object, not {_json_type(record)}")
            continue
        for unknown in sorted(record.keys() - set(FIELDS)):
            problems.add(f"{where}: unknown field {unknown!r} (a line holds {', '.join(FIELDS)})")
        query_id = record.get("query_id")
        if bad := ("query_id is missing" if "query_id" not in record else _text_problem(query_id, "query_id")):
            problems.add(f"{where}: {bad}")
            query_id = None
        elif query_id in records:
            problems.add(f"{where}: query_id {query_id!r} is in the file twice (first on line {records[query_id][0]})")
            query_id = None
        # A missing answer is named as missing, not as empty: "x" stands in for it below.
        faults = [("answer", "answer is missing")] if "answer" not in record else []
        faults += reference_text_problems(record.get("answer", "x"), record.get("aliases", []), record.get("key_facts", []))
        for _, bad in faults:
            problems.add(f"{where}: {bad}")
        if query_id is not None:
            text = ReferenceText.of(record["answer"], record.get("aliases", []), record.get("key_facts", [])) if not faults else None
            records[query_id] = (number, text)
    if not records and not problems:
        raise GoldsetError(f"cannot import answers into {golden_set.slug!r}: {name} holds no answer", field="file")
    queries = dict(Query.objects.filter(golden_set=golden_set, query_id__in=list(records)).values_list("query_id", "pk"))
    retired = set(
        Query.objects.filter(golden_set=golden_set, query_id__in=list(records), retired_at__isnull=False).values_list("query_id", flat=True)
    )
    for query_id in sorted(records, key=natural_key):
        number = records[query_id][0]
        if query_id not in queries:
            problems.add(f"{name}:{number}: query_id {query_id!r} is not a query of golden set {golden_set.slug!r}")
        elif query_id in retired:
            problems.add(f"{name}:{number}: query {query_id!r} is retired; it takes no answer")
    problems.raise_if_any(f"cannot import answers into {golden_set.slug!r}: {len(problems.problems)} problem(s); nothing was stored")

    wanted = {queries[query_id]: text for query_id, (_, text) in records.items()}
    with transaction.atomic():
        held = {row.query_id: row for row in ReferenceAnswer.objects.select_for_update().filter(query_id__in=list(wanted))}
        added, replaced, unchanged = [], [], 0
        for query_pk, text in wanted.items():
            row = held.get(query_pk)
            if row is None:
                added.append(ReferenceAnswer(query_id=query_pk, **text.to_dict(), updated_by=user))
            elif _text_of(row) == text:
                unchanged += 1
            else:
                row.answer, row.aliases, row.key_facts, row.updated_by = text.answer, list(text.aliases), list(text.key_facts), user
                replaced.append(row)
        ReferenceAnswer.objects.bulk_create(added, batch_size=2_000)
        # bulk_update skips auto_now: the time of the change is set here.
        for row in replaced:
            row.save(update_fields=["answer", "aliases", "key_facts", "updated_by", "updated_at"])
    return AnswerImportSummary(added=len(added), replaced=len(replaced), unchanged=unchanged)


def reference_answer_set(
    *, query: Query, answer: str, aliases: list[str], key_facts: list[str], user: AbstractBaseUser | None
) -> ReferenceAnswer:
    """Set `query`'s reference answer (replacing any). Refuses (GoldsetError, the field at
    fault named) an empty answer, aliases or key facts that are not non-empty strings, and
    a retired query."""
    faults = reference_text_problems(answer, aliases, key_facts)
    if faults:
        field = faults[0][0]
        raise GoldsetError(
            f"cannot set the answer of query {query.query_id!r}: {faults[0][1]}", problems=[p for _, p in faults], field=field
        )
    if query.retired_at is not None:
        raise GoldsetError(f"query {query.query_id!r} is retired; it takes no answer", field="query_id")
    with transaction.atomic():
        row, _ = ReferenceAnswer.objects.update_or_create(
            query=query, defaults={"answer": answer, "aliases": list(aliases), "key_facts": list(key_facts), "updated_by": user}
        )
    return row


def reference_answer_clear(*, query: Query) -> bool:
    """Remove `query`'s reference answer; whether it had one. Versions keep theirs."""
    deleted, _ = ReferenceAnswer.objects.filter(query=query).delete()
    return bool(deleted)


# --- reads ------------------------------------------------------------------------------


def _text_of(row: ReferenceAnswer | VersionAnswer) -> ReferenceText:
    return ReferenceText.of(row.answer, row.aliases, row.key_facts)


def query_reference_answer(query: Query) -> ReferenceText | None:
    """The query's reference answer now, or None."""
    row = ReferenceAnswer.objects.filter(query=query).first()
    return _text_of(row) if row is not None else None


def live_reference_answers(golden_set: GoldenSet) -> dict[int, ReferenceText]:
    """{query pk: its answer} of the set's active queries that have one: what a publish now
    would freeze."""
    rows = ReferenceAnswer.objects.filter(query__golden_set=golden_set, query__retired_at__isnull=True)
    return {pk: ReferenceText.of(*rest) for pk, *rest in rows.values_list("query_id", "answer", "aliases", "key_facts").iterator(2_000)}


def live_reference_answer_rows(golden_set: GoldenSet) -> list[tuple[int, str, ReferenceText]]:
    """(query pk, query_id, answer) of the set's active queries that have an answer, in
    natural query id order: the rows a publish freezes and hashes."""
    rows = ReferenceAnswer.objects.filter(query__golden_set=golden_set, query__retired_at__isnull=True).values_list(
        "query_id", "query__query_id", "answer", "aliases", "key_facts"
    )
    found = [(pk, query_id, ReferenceText.of(*rest)) for pk, query_id, *rest in rows.iterator(2_000)]
    return sorted(found, key=lambda row: natural_key(row[1]))


def version_reference_answers(version: Version, query_pks: Iterable[int] | None = None) -> dict[int, ReferenceText]:
    """{query pk: its answer as `version` froze it} of the version's queries that have one,
    of those in `query_pks` when given (empty for a version without answers, with no query
    made)."""
    if not version.answer_count:
        return {}
    rows = VersionAnswer.objects.filter(version=version)
    if query_pks is not None:
        rows = rows.filter(query_id__in=list(query_pks))
    rows = rows.values_list("query_id", "answer", "aliases", "key_facts")
    return {pk: ReferenceText.of(*rest) for pk, *rest in rows.iterator(2_000)}


def version_answer_rows(version: Version) -> list[tuple[str, ReferenceText]]:
    """(query_id, answer) of the version's answers in natural query id order: what its
    hash, its exports and the API give (empty, with no query made, for none)."""
    if not version.answer_count:
        return []
    rows = VersionAnswer.objects.filter(version=version).values_list("query__query_id", "answer", "aliases", "key_facts")
    return sorted(((query_id, ReferenceText.of(*rest)) for query_id, *rest in rows.iterator(2_000)), key=lambda row: natural_key(row[0]))


def answers_jsonl(rows: Iterable[tuple[str, ReferenceText]]) -> Iterator[str]:
    """The JSON lines of (query_id, answer) rows, the import's own form: what imports back."""
    for query_id, text in rows:
        yield json.dumps({"query_id": query_id, **text.to_dict()}, ensure_ascii=False) + "\n"
