"""What changed between two versions, or what publishing now would change, as a reviewer
reads it: each change with its query's text and its page's title, counted by kind and by
slice, filtered by either.

Two sides are compared, each a snapshot of (queries with their slice values, labels):
a published version (`version_side`), or what `version_publish` would snapshot now
(`publish_side`: the active queries and the resolved labels). Labels are compared by
(query, page) primary key; ids, text and titles are read once, for the changes alone.
"""

from collections import Counter
from dataclasses import dataclass, field

from goldenset.models import GoldenSet, Page, Query, Version, VersionLabel, VersionQuery
from goldenset.selectors import resolved_labels
from lib.ids import natural_key

QUERY_ADDED, QUERY_REMOVED = "query_added", "query_removed"
ADDED, REMOVED, REGRADED = "added", "removed", "regraded"
KINDS = (QUERY_ADDED, QUERY_REMOVED, ADDED, REMOVED, REGRADED)
KIND_LABELS = {
    QUERY_ADDED: "query added", QUERY_REMOVED: "query removed",
    ADDED: "pair added", REMOVED: "pair removed", REGRADED: "pair regraded",
}


@dataclass(frozen=True)
class Side:
    """One side of a comparison: query pk -> its slice values, (query pk, page pk) -> grade."""

    name: str  # "v3", or "now" for what publishing would snapshot
    queries: dict[int, dict]
    labels: dict[tuple[int, int], int]


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
        return [
            change for change in self.changes
            if (not kind or change.kind == kind) and (not slice_name or slice_name in change.slices)
        ]


def _slice_names(values: dict) -> tuple[str, ...]:
    return tuple(f"{name}={value}" for name, value in sorted(values.items()))


def version_side(version: Version) -> Side:
    queries = dict(VersionQuery.objects.filter(version=version).values_list("query_id", "metadata"))
    rows = VersionLabel.objects.filter(version=version).values_list("query_id", "page_id", "grade")
    return Side(f"v{version.number}", queries, {(q, p): g for q, p, g in rows.iterator(chunk_size=20_000)})


def publish_side(golden_set: GoldenSet) -> Side:
    """What version_publish would snapshot now: the active queries (with the set's query
    slice fields) and the resolved labels of those queries."""
    fields = list(golden_set.query_slice_fields)
    queries = {
        pk: {name: metadata[name] for name in fields if name in metadata}
        for pk, metadata in Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("id", "metadata")
    }
    labels = {(q, p): g for q, p, g in resolved_labels(golden_set) if q in queries}
    return Side("now", queries, labels)


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

    query_rows = {pk: (query_id, text) for pk, query_id, text in
                  Query.objects.filter(pk__in={row[1] for row in raw}).values_list("pk", "query_id", "text")}
    page_rows = {pk: (doc_id, title) for pk, doc_id, title in
                 Page.objects.filter(pk__in={row[2] for row in raw if row[2] is not None}).values_list("pk", "doc_id", "title")}
    changes = []
    for kind, q, p, before, after in raw:
        query_id, text = query_rows[q]
        doc_id, title = page_rows[p] if p is not None else ("", "")
        slices = new.queries.get(q, old.queries.get(q, {}))
        changes.append(Change(kind, query_id, text, doc_id, title, before, after, _slice_names(slices)))
    order = {kind: n for n, kind in enumerate(KINDS)}
    changes.sort(key=lambda c: (c.kind not in (QUERY_ADDED, QUERY_REMOVED), natural_key(c.query_id), natural_key(c.doc_id), order[c.kind]))
    return Changes(old.name, new.name, changes)


def version_changes(old: Version, new: Version) -> Changes:
    if old.golden_set_id != new.golden_set_id:
        raise ValueError("versions of different golden sets cannot be compared")
    return changes_between(version_side(old), version_side(new))


def publish_preview(golden_set: GoldenSet) -> Changes:
    """What publishing now would change against the latest version (every query and label
    is new when there is none)."""
    latest = golden_set.versions.order_by("-number").first()
    old = version_side(latest) if latest is not None else Side("nothing", {}, {})
    return changes_between(old, publish_side(golden_set))


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

    @property
    def is_empty(self) -> bool:
        return not (self.queries_added or self.queries_removed or self.pairs_added or self.pairs_removed or self.pairs_regraded)

    def to_dict(self) -> dict:
        return {
            "from": self.old.number,
            "to": self.new.number,
            "queries_added": self.queries_added,
            "queries_removed": self.queries_removed,
            "pairs_added": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in self.pairs_added],
            "pairs_removed": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in self.pairs_removed],
            "pairs_regraded": [
                {"query_id": q, "doc_id": d, "old_grade": a, "new_grade": b} for q, d, a, b in self.pairs_regraded
            ],
        }


def version_diff(old: Version, new: Version) -> VersionDiff:
    """Queries added and removed, pairs added, removed and regraded, in natural id order."""
    changes = version_changes(old, new).changes
    return VersionDiff(
        old=old, new=new,
        queries_added=[c.query_id for c in changes if c.kind == QUERY_ADDED],
        queries_removed=[c.query_id for c in changes if c.kind == QUERY_REMOVED],
        pairs_added=[(c.query_id, c.doc_id, c.new_grade) for c in changes if c.kind == ADDED],
        pairs_removed=[(c.query_id, c.doc_id, c.old_grade) for c in changes if c.kind == REMOVED],
        pairs_regraded=[(c.query_id, c.doc_id, c.old_grade, c.new_grade) for c in changes if c.kind == REGRADED],
    )
