"""What changed between two versions, or what publishing now would change, as a reviewer
reads it: each change with its query's text and its page's title, counted by kind and by
slice, filtered by either.

Two sides are compared, each a snapshot of (queries with their slice values, labels,
reference answers):
a published version (`version_side`), or what `version_publish` would snapshot now
(`publish_side`: the active queries, the resolved labels and the answers of the active
queries). Labels are compared by
(query, page) primary key; ids, text and titles are read once, for the changes alone.
"""

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from goldenset.answers import ReferenceText, live_reference_answers, version_reference_answers
from goldenset.models import GoldenSet, Page, Query, Version, VersionLabel, VersionQuery
from goldenset.selectors import resolved_labels
from goldenset.version_rows import resolved_label_columns
from lib.bulk import select_int_rows
from lib.ids import natural_key

QUERY_ADDED, QUERY_REMOVED = "query_added", "query_removed"
ADDED, REMOVED, REGRADED = "added", "removed", "regraded"
ANSWER_ADDED, ANSWER_CHANGED, ANSWER_REMOVED = "answer_added", "answer_changed", "answer_removed"
KINDS = (QUERY_ADDED, QUERY_REMOVED, ADDED, REMOVED, REGRADED, ANSWER_ADDED, ANSWER_CHANGED, ANSWER_REMOVED)
ANSWER_KINDS = (ANSWER_ADDED, ANSWER_CHANGED, ANSWER_REMOVED)
KIND_LABELS = {
    QUERY_ADDED: "query added",
    QUERY_REMOVED: "query removed",
    ADDED: "pair added",
    REMOVED: "pair removed",
    REGRADED: "pair regraded",
    ANSWER_ADDED: "answer added",
    ANSWER_CHANGED: "answer changed",
    ANSWER_REMOVED: "answer removed",
}


@dataclass(frozen=True)
class Side:
    """One side of a comparison: query pk -> its slice values, (query pk, page pk) -> grade,
    query pk -> its reference answer."""

    name: str  # "v3", or "now" for what publishing would snapshot
    queries: dict[int, dict]
    labels: dict[tuple[int, int], int]
    answers: dict[int, ReferenceText] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    kind: str
    query_id: str
    query_text: str
    doc_id: str = ""  # "" for a query added or removed
    page_title: str = ""
    old_grade: int | None = None
    new_grade: int | None = None
    slices: tuple[str, ...] = ()  # the query's slices, "field=value", on the side that has it
    old_answer: str = ""  # an answer's change: its text before and after ("" for none)
    new_answer: str = ""

    @property
    def kind_label(self) -> str:
        return KIND_LABELS[self.kind]


@dataclass
class Changes:
    old: str
    new: str
    changes: list[Change] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def counts(self) -> dict[str, int]:
        """kind -> number of changes, every kind present (0 when none)."""
        found = Counter(change.kind for change in self.changes)
        return {kind: found[kind] for kind in KINDS}

    def slice_counts(self) -> list[tuple[str, dict[str, int]]]:
        """(slice, kind -> count) for every slice a change falls in, in natural order."""
        per_slice: dict[str, Counter] = {}
        for change in self.changes:
            for name in change.slices:
                per_slice.setdefault(name, Counter())[change.kind] += 1
        return [(name, {kind: per_slice[name][kind] for kind in KINDS}) for name in sorted(per_slice, key=natural_key)]

    def filtered(self, *, kind: str = "", slice_name: str = "") -> list[Change]:
        return [change for change in self.changes if (not kind or change.kind == kind) and (not slice_name or slice_name in change.slices)]


def _slice_names(values: dict) -> tuple[str, ...]:
    return tuple(f"{name}={value}" for name, value in sorted(values.items()))


def version_side(version: Version) -> Side:
    queries = dict(VersionQuery.objects.filter(version=version).values_list("query_id", "metadata"))
    rows = VersionLabel.objects.filter(version=version).values_list("query_id", "page_id", "grade")
    labels = {(q, p): g for q, p, g in rows.iterator(chunk_size=20_000)}
    return Side(f"v{version.number}", queries, labels, version_reference_answers(version))


def publish_side(golden_set: GoldenSet) -> Side:
    """What version_publish would snapshot now: the active queries (with the set's query
    slice fields) and the resolved labels of those queries."""
    fields = list(golden_set.query_slice_fields)
    queries = {
        pk: {name: metadata[name] for name in fields if name in metadata}
        for pk, metadata in Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("id", "metadata")
    }
    labels = {(q, p): g for q, p, g in resolved_labels(golden_set) if q in queries}
    return Side("now", queries, labels, live_reference_answers(golden_set))


def changes_between(old: Side, new: Side) -> Changes:
    """Every change from `old` to `new`, queries first, then pairs, each in natural id order."""
    raw: list[tuple[str, int, int | None, int | None, int | None]] = []  # kind, query pk, page pk, old, new grade
    raw += [(QUERY_ADDED, q, None, None, None) for q in new.queries.keys() - old.queries.keys()]
    raw += [(QUERY_REMOVED, q, None, None, None) for q in old.queries.keys() - new.queries.keys()]
    for pair, grade in new.labels.items():
        before = old.labels.get(pair)
        if before is None:
            raw.append((ADDED, pair[0], pair[1], None, grade))
        elif before != grade:
            raw.append((REGRADED, pair[0], pair[1], before, grade))
    raw += [(REMOVED, q, p, grade, None) for (q, p), grade in old.labels.items() if (q, p) not in new.labels]
    raw += [(kind, q, None, None, None) for kind, q in answer_changes(old.answers, new.answers)]

    changes = _built(raw, old.queries, new.queries, old.answers, new.answers)
    changes.sort(key=_reading_order)
    return Changes(old.name, new.name, changes)


_KIND_ORDER = {kind: n for n, kind in enumerate(KINDS)}


def answer_changes(old: dict[int, ReferenceText], new: dict[int, ReferenceText]) -> list[tuple[str, int]]:
    """(kind, query pk) of each answer added, changed (any of its fields) or removed."""
    found = [(ANSWER_ADDED if q not in old else ANSWER_CHANGED, q) for q, text in new.items() if old.get(q) != text]
    return found + [(ANSWER_REMOVED, q) for q in old.keys() - new.keys()]


def _reading_order(change: Change) -> tuple:
    """Queries added and removed first, then pairs and answers, each by natural query id,
    doc id (an answer's is "": first of its query), kind."""
    return (
        change.kind not in (QUERY_ADDED, QUERY_REMOVED),
        natural_key(change.query_id),
        natural_key(change.doc_id),
        _KIND_ORDER[change.kind],
    )


def _built(raw: list[tuple], old_queries: dict, new_queries: dict, old_answers: dict, new_answers: dict) -> list[Change]:
    """Change objects of (kind, query pk, page pk or None, old grade, new grade) rows, with
    their query's text and page's title read in one query each, an answer's change with
    the answer's text on either side."""
    query_rows = {
        pk: (query_id, text)
        for pk, query_id, text in Query.objects.filter(pk__in={row[1] for row in raw}).values_list("pk", "query_id", "text")
    }
    page_rows = {
        pk: (doc_id, title)
        for pk, doc_id, title in Page.objects.filter(pk__in={row[2] for row in raw if row[2] is not None}).values_list(
            "pk", "doc_id", "title"
        )
    }
    changes = []
    for kind, q, p, before, after in raw:
        query_id, text = query_rows[q]
        doc_id, title = page_rows[p] if p is not None else ("", "")
        slices = new_queries.get(q, old_queries.get(q, {}))
        answers = ("", "")
        if kind in ANSWER_KINDS:
            answers = tuple(side[q].answer if q in side else "" for side in (old_answers, new_answers))
        changes.append(Change(kind, query_id, text, doc_id, title, before, after, _slice_names(slices), *answers))
    return changes


def version_changes(old: Version, new: Version) -> Changes:
    if old.golden_set_id != new.golden_set_id:
        raise ValueError("versions of different golden sets cannot be compared")
    return changes_between(version_side(old), version_side(new))


def publish_preview(golden_set: GoldenSet) -> Changes:
    """What publishing now would change against the latest version (every query, label and
    answer is new when there is none)."""
    latest = golden_set.versions.order_by("-number").first()
    old = version_side(latest) if latest is not None else Side("nothing", {}, {})
    return changes_between(old, publish_side(golden_set))


@dataclass(frozen=True)
class PreviewSummary:
    """What publishing now would change, as the publish page shows it: the counts of every
    change by kind and by slice, and the first changes in reading order, without a Change
    object per label (a first version of a million labels is a million pairs added)."""

    old: str
    new: str
    kind_counts: dict[str, int]
    per_slice: list[tuple[str, dict[str, int]]]
    first: list[Change]  # the first changes of publish_preview(...).changes, as many as asked
    total: int

    @property
    def is_empty(self) -> bool:
        return not self.total

    def counts(self) -> dict[str, int]:
        return self.kind_counts

    def slice_counts(self) -> list[tuple[str, dict[str, int]]]:
        return self.per_slice


def publish_preview_summary(golden_set: GoldenSet, *, first: int) -> PreviewSummary:
    """publish_preview's counts, slice counts and first `first` changes, computed on integer
    columns: the labels resolved as version_publish resolves them (version_rows), the
    latest version's read by a binary COPY, compared in numpy; text, titles and natural
    keys are read only for the changes that can be among the first."""
    latest = golden_set.versions.order_by("-number").first()
    old_queries = dict(VersionQuery.objects.filter(version=latest).values_list("query_id", "metadata")) if latest else {}
    fields = list(golden_set.query_slice_fields)
    new_queries = {
        pk: {name: metadata[name] for name in fields if name in metadata}
        for pk, metadata in Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("id", "metadata")
    }
    new_q, new_p, new_g = resolved_label_columns(golden_set.pk)
    old = np.empty((0, 3), dtype=np.int64)
    if latest is not None:
        old = select_int_rows(VersionLabel.objects.filter(version=latest).values_list("query_id", "page_id", "grade"))
    old_q, old_p, old_g = old[:, 0], old[:, 1], old[:, 2]
    # One int64 key a pair: query pk * (largest page pk + 1) + page pk.
    width = int(max(new_p.max(initial=0), old_p.max(initial=0))) + 1
    new_key, old_key = new_q * width + new_p, old_q * width + old_p
    by_old_key = np.argsort(old_key, kind="stable")
    found = np.searchsorted(old_key[by_old_key], new_key)
    found_clipped = np.minimum(found, max(len(old_key) - 1, 0))
    in_old = (found < len(old_key)) & (old_key[by_old_key][found_clipped] == new_key) if len(old_key) else np.zeros(len(new_key), bool)
    before = old_g[by_old_key][found_clipped] if len(old_key) else np.zeros(len(new_key), np.int64)
    regraded = in_old & (before != new_g)
    removed = ~np.isin(old_key, new_key)
    # kind code (index in KINDS), query pk, page pk, old grade (-1 none), new grade (-1 none)
    pairs = (
        np.concatenate(
            [
                np.column_stack([np.full(n, code), q, p, o, g])
                for code, n, q, p, o, g in (
                    (
                        KINDS.index(ADDED),
                        int((~in_old).sum()),
                        new_q[~in_old],
                        new_p[~in_old],
                        np.full(int((~in_old).sum()), -1),
                        new_g[~in_old],
                    ),
                    (KINDS.index(REGRADED), int(regraded.sum()), new_q[regraded], new_p[regraded], before[regraded], new_g[regraded]),
                    (
                        KINDS.index(REMOVED),
                        int(removed.sum()),
                        old_q[removed],
                        old_p[removed],
                        old_g[removed],
                        np.full(int(removed.sum()), -1),
                    ),
                )
            ]
        )
        .astype(np.int64)
        .reshape(-1, 5)
    )
    # Answer changes ride with the pair changes (page pk -1): the same counting and reading order.
    old_answers = version_reference_answers(latest) if latest is not None else {}
    new_answers = live_reference_answers(golden_set)
    answer_rows = [(KINDS.index(kind), q, -1, -1, -1) for kind, q in answer_changes(old_answers, new_answers)]
    pairs = np.concatenate([pairs, np.array(answer_rows, dtype=np.int64).reshape(-1, 5)])
    query_changes = [(QUERY_ADDED, q) for q in new_queries.keys() - old_queries.keys()]
    query_changes += [(QUERY_REMOVED, q) for q in old_queries.keys() - new_queries.keys()]

    counts = {kind: 0 for kind in KINDS}
    per_slice: dict[str, dict[str, int]] = {}

    def count(kind: str, query_pk: int, how_many: int) -> None:
        counts[kind] += how_many
        for name in _slice_names(new_queries.get(query_pk, old_queries.get(query_pk, {}))):
            per_slice.setdefault(name, {k: 0 for k in KINDS})[kind] += how_many

    for kind, q in query_changes:
        count(kind, q, 1)
    for code in (KINDS.index(kind) for kind in (ADDED, REGRADED, REMOVED, *ANSWER_KINDS)):
        queries, how_many = np.unique(pairs[pairs[:, 0] == code, 1], return_counts=True)
        for q, n in zip(queries.tolist(), how_many.tolist()):
            count(KINDS[code], q, n)

    return PreviewSummary(
        old=f"v{latest.number}" if latest else "nothing",
        new="now",
        kind_counts=counts,
        per_slice=[(name, per_slice[name]) for name in sorted(per_slice, key=natural_key)],
        first=_first_changes(query_changes, pairs, (old_queries, new_queries), (old_answers, new_answers), first),
        total=len(query_changes) + len(pairs),
    )


def _first_changes(
    query_changes: list[tuple[str, int]], pairs: np.ndarray, queries: tuple[dict, dict], answers: tuple[dict, dict], first: int
) -> list[Change]:
    """The first `first` changes in reading order (_reading_order): the query changes, then
    the pair changes of the queries that come first, their natural keys read only for
    those queries and, among them, the pages of the first queries' changes."""
    if len(query_changes) > first:  # a first version: every query added
        query_ids = dict(Query.objects.filter(pk__in=[q for _, q in query_changes]).values_list("pk", "query_id"))
        query_changes = sorted(query_changes, key=lambda change: natural_key(query_ids[change[1]]))[:first]
    raw = [(kind, q, None, None, None) for kind, q in query_changes]
    wanted = first - len(raw)
    if wanted > 0 and len(pairs):
        query_ids = dict(Query.objects.filter(pk__in=np.unique(pairs[:, 1]).tolist()).values_list("pk", "query_id"))
        ranked = sorted(query_ids, key=lambda pk: natural_key(query_ids[pk]))
        pks, ranks = np.array(ranked, dtype=np.int64), np.arange(len(ranked))
        by_pk = np.argsort(pks)
        rank = ranks[by_pk][np.searchsorted(pks[by_pk], pairs[:, 1])]
        # Every change of the queries up to the one holding the wanted-th change can be among the first.
        cutoff = np.sort(rank)[min(wanted, len(rank)) - 1]
        candidates = pairs[rank <= cutoff]
        raw += [
            (KINDS[code], q, None if p < 0 else p, None if o < 0 else o, None if g < 0 else g) for code, q, p, o, g in candidates.tolist()
        ]
    changes = _built(raw, *queries, *answers)
    changes.sort(key=_reading_order)
    return changes[:first]


@dataclass
class VersionDiff:
    """What changed from version `old` to version `new`, as ids (the API's diff and the run
    page): `version_changes` read down to its ids, in the same natural order."""

    old: Version
    new: Version
    queries_added: list[str] = field(default_factory=list)
    queries_removed: list[str] = field(default_factory=list)
    pairs_added: list[tuple[str, str, int]] = field(default_factory=list)
    pairs_removed: list[tuple[str, str, int]] = field(default_factory=list)
    # (query_id, doc_id, old grade, new grade)
    pairs_regraded: list[tuple[str, str, int, int]] = field(default_factory=list)
    # The query ids whose reference answer was added, changed or removed.
    answers_added: list[str] = field(default_factory=list)
    answers_changed: list[str] = field(default_factory=list)
    answers_removed: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (
            self.queries_added
            or self.queries_removed
            or self.pairs_added
            or self.pairs_removed
            or self.pairs_regraded
            or self.answers_added
            or self.answers_changed
            or self.answers_removed
        )

    def to_dict(self) -> dict:
        return {
            "from": self.old.number,
            "to": self.new.number,
            "queries_added": self.queries_added,
            "queries_removed": self.queries_removed,
            "pairs_added": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in self.pairs_added],
            "pairs_removed": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in self.pairs_removed],
            "pairs_regraded": [{"query_id": q, "doc_id": d, "old_grade": a, "new_grade": b} for q, d, a, b in self.pairs_regraded],
            "answers_added": self.answers_added,
            "answers_changed": self.answers_changed,
            "answers_removed": self.answers_removed,
        }


def version_diff(old: Version, new: Version) -> VersionDiff:
    """Queries added and removed, pairs added, removed and regraded, answers added, changed
    and removed, in natural id order."""
    changes = version_changes(old, new).changes
    return VersionDiff(
        old=old,
        new=new,
        queries_added=[c.query_id for c in changes if c.kind == QUERY_ADDED],
        queries_removed=[c.query_id for c in changes if c.kind == QUERY_REMOVED],
        pairs_added=[(c.query_id, c.doc_id, c.new_grade) for c in changes if c.kind == ADDED],
        pairs_removed=[(c.query_id, c.doc_id, c.old_grade) for c in changes if c.kind == REMOVED],
        pairs_regraded=[(c.query_id, c.doc_id, c.old_grade, c.new_grade) for c in changes if c.kind == REGRADED],
        answers_added=[c.query_id for c in changes if c.kind == ANSWER_ADDED],
        answers_changed=[c.query_id for c in changes if c.kind == ANSWER_CHANGED],
        answers_removed=[c.query_id for c in changes if c.kind == ANSWER_REMOVED],
    )
