"""Writes to golden sets: imports, judgments, versions, memberships.

Every write of the app (pages, commands, API, tasks) goes through a function here. Each
validates everything first and raises GoldsetError naming the line, field or id at
fault, then writes in one transaction, so bad input never leaves half a change behind.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from goldenset.audit import audit_member, audit_record
from goldenset.duplicates import corpus_duplicates_group
from goldenset.import_rows import insert_imported_judgments, insert_pages, insert_queries
from goldenset.models import (
    DEFAULT_GRADE_SCALE,
    Corpus,
    EvidenceSpan,
    GoldenSet,
    Judgment,
    Membership,
    OrganisationMembership,
    Page,
    Query,
    Team,
    Version,
    default_team,
)
from goldenset.qrels_evidence import QrelPairs, chunking_for_qrels, imported_judgments_insert, qrels_pairs
from goldenset.selectors import roles_forget, user_roles, version_settings
from goldenset.signals import version_published
from goldenset.spans import Span, evidence_rows, hop_checked, spans_checked
from goldenset.version_rows import LABEL_BLOCK, VersionRows, version_rows_read, version_rows_write
from lib.bulk import gc_paused
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.evidence_formats import read_csv_evidence_qrels, read_jsonl_qrels
from lib.formats import JsonRecord, read_beir_qrels, read_json_qrels, read_jsonl, read_trec_qrels
from lib.hashing import version_hash_of_columns
from lib.ids import id_problem, natural_key
from lib.progress import Progress, no_progress

# Metadata keys that hold page dates rather than slice values.
DATE_FIELDS = ("published_at", "modified_at")
# A metadata key with more distinct values than this is an attribute, not a slice.
MAX_SLICE_VALUES = 50


@dataclass
class ImportSummary:
    """What an import wrote, for the command's closing lines and the API's response."""

    golden_set: str
    golden_set_created: bool = False
    pages_created: int = 0
    queries_created: int = 0
    judgments_created: int = 0
    grades: Counter = field(default_factory=Counter)
    duplicate_lines: int = 0
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        grades = ", ".join(f"{grade}: {count}" for grade, count in sorted(self.grades.items()))
        out = [
            f"golden set {self.golden_set}" + (" (created)" if self.golden_set_created else ""),
            f"pages created: {self.pages_created}",
            f"queries created: {self.queries_created}",
            f"judgments imported: {self.judgments_created}",
            f"grades found: {grades or 'none'}",
        ]
        if self.duplicate_lines:
            out.append(f"identical duplicate lines skipped: {self.duplicate_lines}")
        return out + self.notes

    def to_dict(self) -> dict:
        return {
            "golden_set": self.golden_set,
            "golden_set_created": self.golden_set_created,
            "pages_created": self.pages_created,
            "queries_created": self.queries_created,
            "judgments_created": self.judgments_created,
            "grades": {str(grade): count for grade, count in sorted(self.grades.items())},
            "duplicate_lines": self.duplicate_lines,
            "notes": self.notes,
        }


# --- reading and checking input ------------------------------------------------------


def _read_records(path: Path, problems: ProblemCollector, progress: Progress, what: str) -> list[JsonRecord]:
    """All records of a JSONL file; duplicate ids are problems naming both lines."""
    records: list[JsonRecord] = []
    first_line: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for record in read_jsonl(progress(handle, f"reading {path.name}"), path.name, problems):
            if record.id in first_line:
                problems.add(f"{path.name}:{record.line}: duplicate {what} id {record.id!r} (first on line {first_line[record.id]})")
                continue
            first_line[record.id] = record.line
            records.append(record)
    return records


def _page_dates(record: JsonRecord, source: str, problems: ProblemCollector) -> tuple[datetime | None, datetime | None]:
    metadata = record.metadata
    if "published_at" not in metadata and "modified_at" not in metadata:
        return None, None
    dates = []
    for name in DATE_FIELDS:
        raw = metadata.pop(name, None)
        if raw is None or raw == "":
            dates.append(None)
            continue
        parsed = None
        if isinstance(raw, str):
            try:
                # What parse_datetime tries first, without its call: 100,000 pages have a date each.
                parsed = datetime.fromisoformat(raw)
            except ValueError:
                parsed = parse_datetime(raw)
        if parsed is None:
            problems.add(f"{source}:{record.line}: field {name!r} of {record.id!r} is not an ISO 8601 date-time: {raw!r}")
            dates.append(None)
            continue
        if parsed.utcoffset() is None:
            parsed = parsed.replace(tzinfo=UTC)  # a date without an offset is UTC
        dates.append(parsed)
    return dates[0], dates[1]


def grade_scale_for(grades: Iterable[int]) -> list[dict]:
    """The scale a golden set created by an import takes: the grades the file holds,
    labelled with the TREC names where they are the usual 0-3."""
    known = {grade["value"]: grade["label"] for grade in DEFAULT_GRADE_SCALE}
    return [{"value": value, "label": known.get(value, f"grade {value}")} for value in sorted(set(grades))]


def detect_slice_fields(metadatas: Iterable[dict]) -> list[str]:
    """Metadata keys whose values are few scalar strings or numbers: candidates for slices."""
    # A key at a time, each a set built in one comprehension: a fifth of the time of a
    # test per value, at 100,000 pages (bench/import_export.py).
    metadatas = [metadata for metadata in metadatas if metadata]
    fields = []
    for key in set().union(*metadatas):
        try:
            seen = {metadata[key] for metadata in metadatas if key in metadata}
        except TypeError:
            continue  # an object or a list: unhashable, and no slice
        if None not in seen and len(seen) <= MAX_SLICE_VALUES:
            fields.append(key)
    return sorted(fields)


def slug_check(slug: str, what: str = "") -> None:
    """GoldsetError naming the field unless `slug` is lower-case letters, digits and hyphens:
    the slug of a set, a corpus, an organisation or a team (`what` names which)."""
    if not slug or slugify(slug) != slug:
        raise GoldsetError(f"{what + ' ' if what else ''}slug {slug!r} must be lower-case letters, digits and hyphens", field="slug")


def role_check(role: str) -> None:
    """GoldsetError naming the field unless `role` is a role of a set (granted in the set or
    in its team)."""
    if role not in Membership.Role.values:
        raise GoldsetError(f"unknown role {role!r}; choose one of {', '.join(Membership.Role.values)}", field="role")


def organisation_join(user: AbstractBaseUser, organisation_id: int) -> None:
    """Whoever holds a role in a set, or in a team, belongs to its organisation (a member,
    unless they are one already): the organisation's people are all who may reach its sets."""
    OrganisationMembership.objects.get_or_create(user=user, organisation_id=organisation_id)


def _check_new_slug(slug: str) -> None:
    slug_check(slug)
    if GoldenSet.objects.filter(slug=slug).exists():
        raise GoldsetError(f"a golden set with slug {slug!r} already exists", field="slug")
    if Corpus.objects.filter(slug=slug).exists():
        raise GoldsetError(f"a corpus with slug {slug!r} already exists", field="slug")


# --- golden sets ---------------------------------------------------------------------


@dataclass
class GoldenSetSource:
    """Everything a new golden set is made from, already parsed (from BEIR, or generated)."""

    pages: list[JsonRecord]
    queries: list[JsonRecord]
    # {(query_id, doc_id): grade}
    qrels: dict[tuple[str, str], int]
    source_name: str = "input"
    guidelines: str = ""
    grade_scale: list[dict] | None = None
    query_slice_fields: list[str] | None = None
    page_slice_fields: list[str] | None = None
    k_first: int = 100
    k_final: int = 8


def _founding_manager(user: AbstractBaseUser, golden_set: GoldenSet) -> None:
    """Who made a set manages it, and belongs to the organisation of its team."""
    organisation_join(user, golden_set.team.organisation_id)
    Membership.objects.create(user=user, golden_set=golden_set, role=Membership.Role.MANAGER)


@gc_paused()
def golden_set_create(
    *,
    slug: str,
    name: str,
    source: GoldenSetSource,
    user: AbstractBaseUser | None = None,
    team: Team | None = None,
    progress: Progress = no_progress,
) -> ImportSummary:
    """Create a corpus, a golden set, its queries and imported judgments, all or nothing, in
    `team` (the default team when None)."""
    _check_new_slug(slug)
    problems = ProblemCollector()
    dates = [_page_dates(record, source.source_name, problems) for record in source.pages]
    query_ids = {record.id for record in source.queries}
    doc_ids = {record.id for record in source.pages}
    for query_id, doc_id in source.qrels:
        if query_id not in query_ids or doc_id not in doc_ids:
            missing = f"query id {query_id!r}" if query_id not in query_ids else f"doc id {doc_id!r}"
            problems.add(f"{source.source_name}: judgment ({query_id!r}, {doc_id!r}) names {missing}, which is not in the input")
    problems.raise_if_any(f"cannot import {source.source_name}: {len(problems.problems)} problem(s)")

    grades = Counter(source.qrels.values())
    summary = ImportSummary(golden_set=slug, golden_set_created=True, grades=grades)
    query_slice_fields = source.query_slice_fields
    if query_slice_fields is None:
        query_slice_fields = detect_slice_fields(record.metadata for record in source.queries)
    page_slice_fields = source.page_slice_fields
    if page_slice_fields is None:
        page_slice_fields = detect_slice_fields(record.metadata for record in source.pages)
    if source.grade_scale is None:
        grade_scale = grade_scale_for(grades) if grades else [dict(g) for g in DEFAULT_GRADE_SCALE]
        summary.notes.append(f"grade scale taken from the file: {', '.join(str(g['value']) for g in grade_scale)}")
    else:
        grade_scale = source.grade_scale
    if query_slice_fields or page_slice_fields:
        summary.notes.append(f"slice fields: queries [{', '.join(query_slice_fields)}], pages [{', '.join(page_slice_fields)}]")

    with transaction.atomic():
        team = team or default_team()
        corpus = Corpus.objects.create(slug=slug, name=name, team=team)
        golden_set = GoldenSet.objects.create(
            slug=slug,
            name=name,
            corpus=corpus,
            team=team,
            grade_scale=grade_scale,
            query_slice_fields=query_slice_fields,
            page_slice_fields=page_slice_fields,
            guidelines=source.guidelines,
            k_first=source.k_first,
            k_final=source.k_final,
            created_by=user,
        )
        page_pks, page_hashes = insert_pages(corpus, source.pages, dates, True, progress)
        duplicates = corpus_duplicates_group(corpus=corpus, pages=((page_pks[r.id], r.id, r.text) for r in source.pages), progress=progress)
        if duplicates:
            summary.notes.append(f"{duplicates} document(s) grouped as duplicates of another (goldenset.duplicates)")
        query_pks = insert_queries(golden_set, source.queries, True)
        summary.judgments_created = insert_imported_judgments(
            corpus,
            source.qrels,
            query_pks,
            page_pks,
            progress,
            page_hashes=page_hashes,
        )
        summary.pages_created = len(page_pks)
        summary.queries_created = len(query_pks)
        if user is not None:
            _founding_manager(user, golden_set)
    return summary


@gc_paused()
def golden_set_import_beir(
    *,
    directory: Path,
    slug: str,
    name: str | None = None,
    split: str = "test",
    user: AbstractBaseUser | None = None,
    team: Team | None = None,
    progress: Progress = no_progress,
) -> ImportSummary:
    """Import a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as a new golden set."""
    directory = Path(directory)
    files = {"corpus": directory / "corpus.jsonl", "queries": directory / "queries.jsonl", "qrels": directory / "qrels" / f"{split}.tsv"}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise GoldsetError(f"{directory} is not a BEIR folder: missing {', '.join(missing)}")
    _check_new_slug(slug)

    problems = ProblemCollector()
    pages = _read_records(files["corpus"], problems, progress, "doc")
    queries = _read_records(files["queries"], problems, progress, "query")
    doc_ids = {record.id for record in pages}
    query_ids = {record.id for record in queries}
    qrels_name = f"qrels/{split}.tsv"
    pairs = QrelPairs()
    with files["qrels"].open(encoding="utf-8") as handle:
        for qrel in read_beir_qrels(progress(handle, f"reading {qrels_name}"), qrels_name, problems):
            if qrel.query_id not in query_ids:
                problems.add(f"{qrels_name}:{qrel.line}: query id {qrel.query_id!r} is not in queries.jsonl")
                continue
            if qrel.doc_id not in doc_ids:
                problems.add(f"{qrels_name}:{qrel.line}: doc id {qrel.doc_id!r} is not in corpus.jsonl")
                continue
            pairs.add(qrel, qrels_name, problems)
    problems.raise_if_any(f"cannot import {directory}: {len(problems.problems)} problem(s)")

    source = GoldenSetSource(pages=pages, queries=queries, qrels=pairs.grades, source_name=str(directory))
    summary = golden_set_create(slug=slug, name=name or slug, source=source, user=user, team=team, progress=progress)
    summary.duplicate_lines = pairs.duplicates
    return summary


# The qrels forms an import reads: every form Goldset's export writes (lib.formats.QREL_FORMATS).
QREL_READERS = {
    "trec": read_trec_qrels,
    "beir": read_beir_qrels,
    "csv": read_csv_evidence_qrels,
    "json": read_json_qrels,
    "jsonl": read_jsonl_qrels,
}


def qrels_import(
    *,
    golden_set_slug: str,
    lines: Iterable[str],
    source_name: str,
    create_missing: bool = False,
    user: AbstractBaseUser | None = None,
    progress: Progress = no_progress,
    fmt: str = "trec",
    chunking: str | None = None,
) -> ImportSummary:
    """Import qrels (TREC, BEIR TSV, CSV, JSON or JSON lines, as `fmt` says) as `imported`
    judgments of a golden set, with the spans and hops the lines give (goldenset.qrels_evidence);
    with `chunking`, the lines' doc ids are chunk ids of that chunking of the set's corpus,
    each made a span of its document.

    Ids the set does not know are refused, all listed, unless `create_missing`: then
    id-only pages and queries (has_text=False) are made, and the golden set itself, with
    an id-only corpus of the same slug, if it does not exist.
    """
    problems = ProblemCollector()
    if fmt not in QREL_READERS:
        raise GoldsetError(f"unknown qrels format {fmt!r}; choose one of {', '.join(QREL_READERS)}", field="format")
    golden_set = GoldenSet.objects.filter(slug=golden_set_slug).select_related("corpus").first()
    chunks = chunking_for_qrels(golden_set, chunking)
    qrels = QREL_READERS[fmt](progress(lines, f"reading {source_name}"), source_name, problems)
    pairs = qrels_pairs(qrels, source_name, problems, chunks)
    problems.raise_if_any(f"cannot import {source_name}: {len(problems.problems)} problem(s)")
    if not pairs.grades:
        raise GoldsetError(f"{source_name} holds no qrels lines")

    if golden_set is None and not create_missing:
        raise GoldsetError(f"no golden set {golden_set_slug!r} (use --create-missing to create one from the file)", field="golden_set")

    grades = Counter(pairs.grades.values())
    summary = ImportSummary(golden_set=golden_set_slug, grades=grades, duplicate_lines=pairs.duplicates)
    with transaction.atomic():
        if golden_set is None:
            _check_new_slug(golden_set_slug)
            team = default_team()
            corpus = Corpus.objects.create(
                slug=golden_set_slug, name=golden_set_slug, description=f"id-only corpus made from {source_name}", team=team
            )
            golden_set = GoldenSet.objects.create(
                slug=golden_set_slug,
                name=golden_set_slug,
                corpus=corpus,
                team=team,
                grade_scale=grade_scale_for(grades),
                created_by=user,
            )
            summary.golden_set_created = True
            summary.notes.append(f"grade scale taken from the file: {', '.join(str(g) for g in sorted(grades))}")
            if user is not None:
                _founding_manager(user, golden_set)

        query_pks = dict(Query.objects.filter(golden_set=golden_set).values_list("query_id", "id"))
        page_pks = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("doc_id", "id"))
        missing_queries = _first_seen(query_id for query_id, _ in pairs.grades if query_id not in query_pks)
        missing_docs = _first_seen(doc_id for _, doc_id in pairs.grades if doc_id not in page_pks)
        if (missing_queries or missing_docs) and not create_missing:
            query_lines: dict[str, int] = {}
            doc_lines: dict[str, int] = {}
            for (query_id, doc_id), line in pairs.lines.items():
                query_lines.setdefault(query_id, line)
                doc_lines.setdefault(doc_id, line)
            unknown = [f"{source_name}:{query_lines[q]}: query id {q!r} is not in the golden set" for q in missing_queries]
            unknown += [f"{source_name}:{doc_lines[d]}: doc id {d!r} is not in the corpus" for d in missing_docs]
            raise GoldsetError(
                f"{source_name}: {len(missing_queries)} query id(s) and {len(missing_docs)} doc id(s) are not in golden set "
                f"{golden_set.slug!r} (use --create-missing to add them as id-only)",
                problems=unknown,
            )
        if missing_docs:
            records = [JsonRecord(line=0, id=doc_id) for doc_id in missing_docs]
            page_pks.update(insert_pages(golden_set.corpus, records, [(None, None)] * len(records), False, progress)[0])
            summary.pages_created = len(missing_docs)
            summary.notes.append(f"{len(missing_docs)} id-only page(s) created, flagged as having no text")
        if missing_queries:
            records = [JsonRecord(line=0, id=query_id) for query_id in missing_queries]
            query_pks = insert_queries(golden_set, records, False)
            summary.queries_created = len(missing_queries)
            summary.notes.append(f"{len(missing_queries)} id-only query(ies) created, flagged as having no text")

        outside = sorted(set(grades) - set(golden_set.grade_values()))
        if outside and not summary.golden_set_created:
            summary.notes.append(f"grades outside the set's scale kept as they are: {', '.join(map(str, outside))}")
        summary.judgments_created = imported_judgments_insert(golden_set, pairs, query_pks, page_pks, source_name, progress)
        if pairs.spans or pairs.hops:
            summary.notes.append(f"evidence spans: {pairs.span_count()}, pairs with a hop: {len(pairs.hops)}")
    return summary


def _first_seen(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def query_retire(*, query: Query) -> None:
    """Take a query out of the versions published from now on; old versions keep it."""
    if query.retired_at is None:
        query.retired_at = timezone.now()
        query.save(update_fields=["retired_at"])


def membership_grant(*, user: AbstractBaseUser, golden_set: GoldenSet, role: str, by: AbstractBaseUser | None = None) -> Membership:
    """Give `user` `role` in `golden_set`, granted by `by` (None: the system); granting a
    role held already records nothing."""
    role_check(role)
    with transaction.atomic():
        organisation_join(user, golden_set.team.organisation_id)
        membership, made = Membership.objects.get_or_create(user=user, golden_set=golden_set, role=role)
        if made:
            audit_member(by=by, action="member.grant", member=user, golden_set=golden_set, role=role, membership=membership)
    roles_forget(user)
    return membership


def membership_revoke(*, user: AbstractBaseUser, golden_set: GoldenSet, role: str, by: AbstractBaseUser | None = None) -> bool:
    """Take `role` in `golden_set` from `user`; False if they did not hold it. Refuses
    (GoldsetError) to take the last manager's role: nobody could grant it back but staff."""
    role_check(role)
    with transaction.atomic():
        # Lock the set's managers, so two managers revoking each other at once cannot both succeed.
        managers = list(
            Membership.objects.select_for_update()
            .filter(golden_set=golden_set, role=Membership.Role.MANAGER)
            .values_list("user_id", flat=True)
        )
        if role == Membership.Role.MANAGER and managers == [user.pk]:
            raise GoldsetError(
                f"{user.get_username()} is the last manager of {golden_set.slug!r}; grant the role to someone else first", field="role"
            )
        deleted, _ = Membership.objects.filter(user=user, golden_set=golden_set, role=role).delete()
        if deleted:
            audit_member(by=by, action="member.revoke", member=user, golden_set=golden_set, role=role)
    roles_forget(user)
    return bool(deleted)


# --- judgments -----------------------------------------------------------------------


def judgment_record(
    *,
    query: Query,
    page: Page,
    grade: int,
    annotator: AbstractBaseUser | None,
    source: str = Judgment.Source.HUMAN,
    note: str = "",
    seconds_spent: float | None = None,
    spans: Iterable[Span] = (),
    hop: str = "",
) -> Judgment:
    """Append one grade for a pair. A human or adjudicated grade must be on the golden
    set's scale; an adjudicated one (which overrides the pair's other grades, see
    selectors.resolved_labels) must come from an adjudicator or manager of the set.
    `spans`: the evidence spans of the document that answer the query (goldenset.spans),
    none to grade the document as a whole; `hop`: its evidence group ("" for none)."""
    golden_set = query.golden_set
    if page.corpus_id != golden_set.corpus_id:
        raise GoldsetError(f"page {page.doc_id!r} is not in the corpus of golden set {golden_set.slug!r}", field="page")
    if source not in Judgment.Source.values:
        raise GoldsetError(f"unknown judgment source {source!r}; choose one of {', '.join(Judgment.Source.values)}", field="source")
    if source in (Judgment.Source.HUMAN, Judgment.Source.ADJUDICATED):
        if annotator is None:
            raise GoldsetError(f"a {source} judgment needs its annotator", field="annotator")
        if source == Judgment.Source.ADJUDICATED and not (
            annotator.is_staff or user_roles(annotator, golden_set) & {Membership.Role.ADJUDICATOR, Membership.Role.MANAGER}
        ):
            raise GoldsetError(f"{annotator.get_username()} is not an adjudicator or manager of {golden_set.slug!r}", field="annotator")
        if grade not in golden_set.grade_values():
            allowed = ", ".join(map(str, golden_set.grade_values()))
            raise GoldsetError(f"grade {grade} is not on the scale of {golden_set.slug!r} ({allowed})", field="grade")
    if seconds_spent is not None and seconds_spent < 0:
        raise GoldsetError("seconds_spent cannot be negative", field="seconds_spent")
    spans = spans_checked(page, grade, spans)
    hop = hop_checked(hop)
    # No savepoint: inside a caller's transaction (the judging cycle) a failure rolls the
    # whole of it back; alone, this is its own transaction.
    with transaction.atomic(savepoint=False):
        judgment = Judgment.objects.create(
            query=query,
            page=page,
            grade=grade,
            annotator=annotator,
            source=source,
            note=note,
            seconds_spent=seconds_spent,
            page_hash=page.content_hash,
            hop=hop,
        )
        if spans:
            EvidenceSpan.objects.bulk_create(evidence_rows(judgment.pk, page, spans))
    return judgment


# --- versions ------------------------------------------------------------------------


def nothing_changed(golden_set: GoldenSet, previous: Version) -> ConflictError:
    """The refusal of a publish that would snapshot what `previous` holds already."""
    return ConflictError(f"nothing changed since version {previous.number} of {golden_set.slug!r}; not published")


def no_queries(golden_set: GoldenSet) -> GoldsetError:
    return GoldsetError(f"golden set {golden_set.slug!r} has no queries to publish")


# The steps version_publish reports through its `progress`, in order (a job shows "step 3 of 6").
PUBLISH_STEPS = ("resolving labels", "reading pages", "hashing", "writing labels", "writing queries", "writing pages")


# A publish holds a tuple or more for each query and labelled page until it is written:
# the cyclic collector would scan them again and again while they grow, finding nothing
# to collect.
@gc_paused()
def version_publish(
    *,
    golden_set: GoldenSet,
    user: AbstractBaseUser | None = None,
    note: str = "",
    progress: Progress = no_progress,
) -> Version:
    """Snapshot the resolved labels and slice metadata into version N+1 and return it.

    Refuses (GoldsetError) when nothing changed since the latest version. Sends
    `version_published` inside the transaction; receivers act on commit. `progress`
    wraps each step's rows, named as in PUBLISH_STEPS (a job reports them to the page).
    The steps: read the labels and what they name, order them, hash them, write them
    (goldenset.version_rows).
    """
    with transaction.atomic():
        # Lock the set so that two publishes cannot both take number N+1.
        golden_set = GoldenSet.objects.select_for_update().get(pk=golden_set.pk)
        previous = golden_set.versions.order_by("-number").first()
        # Counted before the labels are read: a judgment committed in between makes the
        # count too low, never too high, so a later "unchanged" check errs toward publishing.
        judgment_count = Judgment.objects.filter(query__golden_set=golden_set).count()

        rows = version_rows_read(golden_set, progress, PUBLISH_STEPS[:2]).ordered()
        content_hash = _version_rows_hash(golden_set, rows, progress)
        if previous is not None and previous.content_hash == content_hash:
            raise nothing_changed(golden_set, previous)
        if not rows.queries:
            raise no_queries(golden_set)

        threshold = golden_set.relevance_threshold
        relevant = rows.label_grade >= threshold
        try:
            version = Version.objects.create(
                golden_set=golden_set,
                number=(previous.number + 1) if previous else 1,
                content_hash=content_hash,
                note=note,
                author=user,
                relevance_threshold=threshold,
                k_first=golden_set.k_first,
                k_final=golden_set.k_final,
                query_slice_fields=list(golden_set.query_slice_fields),
                page_slice_fields=list(golden_set.page_slice_fields),
                span_min_overlap_chars=golden_set.span_min_overlap_chars,
                span_min_overlap_share=golden_set.span_min_overlap_share,
                query_count=len(rows.queries),
                label_count=len(rows.label_grade),
                relevant_count=int(np.count_nonzero(relevant)),
                queries_without_relevant=len(rows.queries) - len(np.unique(rows.label_query[relevant])),
                hop_count=len(rows.hops),
                span_count=len(rows.span_label),
                duplicate_count=len(rows.duplicates),
                answer_count=len(rows.answers),
                judgment_count=judgment_count,
            )
        except IntegrityError as exc:  # only if the row lock were bypassed
            raise ConflictError(
                f"version {(previous.number + 1) if previous else 1} of {golden_set.slug!r} was published meanwhile"
            ) from exc
        version_rows_write(version.id, rows, progress, PUBLISH_STEPS[3:])
        audit_record(
            user=user,
            action="version.publish",
            obj=version,
            golden_set=golden_set,
            before={"version": previous.number if previous else None},
            after={"version": version.number, "content_hash": content_hash, "note": note},
            label=f"{golden_set.slug} v{version.number}",
        )
        version_published.send(sender=Version, version_id=version.id)
    return version


def _version_rows_hash(golden_set: GoldenSet, rows: VersionRows, progress: Progress) -> str:
    """The content hash of ordered `rows` under the set's settings (lib.hashing), the labels
    hashed in blocks of LABEL_BLOCK, each block an item of the step PUBLISH_STEPS[2]."""
    # Ids by natural rank: a label's query id is query_ids[its query's rank].
    query_ids = np.array([query_id for _, query_id, *_ in rows.queries] or [""], dtype=object)
    doc_ids = np.array([doc_id for _, doc_id, *_ in rows.pages] or [""], dtype=object)
    count = len(rows.label_grade)
    blocks = (
        (query_ids[rows.label_query_rank[block]].tolist(), doc_ids[rows.label_page_rank[block]].tolist(), rows.label_grade[block].tolist())
        for block in (slice(start, start + LABEL_BLOCK) for start in progress(range(0, count, LABEL_BLOCK), PUBLISH_STEPS[2]))
    )
    return version_hash_of_columns(
        version_settings(golden_set),
        blocks,
        ((query_id, canonical) for _, query_id, canonical, _ in rows.queries),
        ((doc_id, canonical, published_at, page_hash) for _, doc_id, canonical, _, published_at, page_hash in rows.pages),
        rows.evidence((golden_set.span_min_overlap_chars, golden_set.span_min_overlap_share)),
    )


# --- queries added to an existing set ------------------------------------------------


def queries_add(*, golden_set: GoldenSet, records: list[JsonRecord]) -> list[Query]:
    """Add queries with text to an existing golden set, all or nothing.

    Returns the created queries in the order of `records`. Refuses (GoldsetError, every
    problem listed) an empty list, a record without text, and ids that are malformed,
    repeated in `records` or already in the set; retired queries count as in the set,
    because a query id names one question for the whole history of its versions.
    """
    if not records:
        raise GoldsetError(f"no queries to add to {golden_set.slug!r}")
    problems = ProblemCollector()
    positions: dict[str, int] = {}
    for position, record in enumerate(records, start=1):
        bad = id_problem(record.id, "query id")
        if bad:
            problems.add(f"query {position}: {bad}")
            continue
        if record.id in positions:
            problems.add(f"query {position}: duplicate query id {record.id!r} (first as query {positions[record.id]})")
            continue
        positions[record.id] = position
        if not record.text.strip():
            problems.add(f"query {position}: query {record.id!r} has no text")
    taken = Query.objects.filter(golden_set=golden_set, query_id__in=list(positions)).values_list("query_id", flat=True)
    for query_id in sorted(taken, key=natural_key):
        problems.add(f"query {positions[query_id]}: query id {query_id!r} is already in golden set {golden_set.slug!r}")
    problems.raise_if_any(f"cannot add queries to {golden_set.slug!r}: {len(problems.problems)} problem(s)")

    with transaction.atomic():
        query_pks = insert_queries(golden_set, records, True)
        created = Query.objects.in_bulk([query_pks[record.id] for record in records])
    return [created[query_pks[record.id]] for record in records]
