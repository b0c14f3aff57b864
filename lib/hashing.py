"""Content hashes: stable across databases, Python versions and row order."""

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime


def text_hash(*parts: str) -> str:
    """sha256 hex digest of the parts, separated so ("ab", "c") != ("a", "bc")."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def canonical_json(value: object) -> str:
    """JSON with sorted keys and no spaces: the same data always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class StreamHash:
    """Feeds lines into sha256 one at a time, so a million labels need no big string."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, line: str) -> None:
        self._digest.update(line.encode("utf-8"))
        self._digest.update(b"\n")

    def add_lines(self, lines: Iterable[str], *, block: int = 10_000) -> None:
        """add() of each line, `block` lines per update: the same bytes, so the same digest,
        for a fraction of the calls (a million labels are a million lines)."""
        pending: list[str] = []
        for line in lines:
            pending.append(line)
            if len(pending) == block:
                self._digest.update(("\n".join(pending) + "\n").encode("utf-8"))
                pending.clear()
        if pending:
            self._digest.update(("\n".join(pending) + "\n").encode("utf-8"))

    def add_block(self, lines: str) -> None:
        """add() of each line of `lines` ("\\n"-joined, no final newline): the same digest."""
        self._digest.update((lines + "\n").encode("utf-8"))

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


# One label's line of a version's hash: query_id, doc_id, grade, tab-separated.
LABEL_LINE = "L\t{}\t{}\t{}".format


@dataclass(frozen=True)
class VersionEvidence:
    """What a version holds beyond its labels, queries and pages, each in the version's
    canonical order: hops (query_id, doc_id, hop), evidence spans (query_id, doc_id, start,
    end, grade), the span projection settings (min overlap characters, share; hashed only
    when there are spans), duplicate groups (member doc_id, the group's doc_id) and
    reference answers (query_id, answer_line_json of the answer) and sampling weights
    (query_id, weight_line_json of the query's inclusion probability, stratum and traffic
    count; only the queries that have one) in natural query id order. A version with none
    of them hashes exactly as versions made before they existed."""

    hops: Sequence[tuple[str, str, str]] = ()
    spans: Sequence[tuple[str, str, int, int, int]] = ()
    span_overlap: tuple[int, float] | None = None
    duplicates: Sequence[tuple[str, str]] = ()
    answers: Sequence[tuple[str, str]] = ()
    weights: Sequence[tuple[str, str]] = ()

    def lines(self) -> Iterator[str]:
        for query_id, doc_id, hop in self.hops:
            yield f"H\t{query_id}\t{doc_id}\t{hop}"
        if self.spans:
            chars, share = self.span_overlap or (None, None)
            yield f"O\t{chars}\t{float(share)!r}"
        for query_id, doc_id, start, end, grade in self.spans:
            yield f"S\t{query_id}\t{doc_id}\t{start}\t{end}\t{grade}"
        for member, group in self.duplicates:
            yield f"D\t{member}\t{group}"
        for query_id, answer_json in self.answers:
            yield f"A\t{query_id}\t{answer_json}"
        for query_id, weight_json in self.weights:
            yield f"W\t{query_id}\t{weight_json}"


def answer_line_json(answer: str, aliases: Sequence[str], key_facts: Sequence[str]) -> str:
    """A reference answer as its hash line holds it: canonical JSON of its three fields, the
    lists in their stored order (an alias list is the author's, its order kept as written)."""
    return canonical_json({"answer": answer, "aliases": list(aliases), "key_facts": list(key_facts)})


def weight_line_json(inclusion_probability: float | None, stratum: str, traffic_count: int | None) -> str | None:
    """A query's sampling weight as its hash line holds it (canonical JSON of the three),
    or None for a query without one (no inclusion probability, stratum or traffic count):
    such a query has no line, so versions of sets never drawn from a log hash as before."""
    if inclusion_probability is None and not stratum and traffic_count is None:
        return None
    return canonical_json({"inclusion_probability": inclusion_probability, "stratum": stratum, "traffic_count": traffic_count})


NO_EVIDENCE = VersionEvidence()


def version_hash(
    settings: dict,
    labels: Iterable[tuple[str, str, int]],
    queries: Iterable[tuple[str, dict]],
    pages: Iterable[tuple[str, dict, datetime | None, str]],
    evidence: VersionEvidence = NO_EVIDENCE,
) -> str:
    """The content hash of a version: its settings, then every label, query and page.

    `labels` are (query_id, doc_id, grade) in the version's canonical order; `queries`
    (query_id, slice metadata) and `pages` (doc_id, slice metadata, published_at, content
    hash) in the natural order of their ids. Publishing and the export's re-check both
    hash through here (publishing through version_hash_of_columns, the same lines), so the
    two can never disagree on what the hash covers.
    """
    digest = StreamHash()
    digest.add(canonical_json(settings))
    digest.add_lines(LABEL_LINE(query_id, doc_id, grade) for query_id, doc_id, grade in labels)
    return _queries_and_pages(digest, queries, pages, evidence)


def version_hash_of_columns(
    settings: dict,
    label_blocks: Iterable[tuple[list[str], list[str], list[int]]],
    queries: Iterable[tuple[str, dict | str]],
    pages: Iterable[tuple[str, dict | str, datetime | None, str]],
    evidence: VersionEvidence = NO_EVIDENCE,
) -> str:
    """version_hash with the labels given as blocks of three parallel lists (query_ids,
    doc_ids, grades), each block's lines joined at once: a million labels without a
    Python call per label. A query's or page's metadata may come as its canonical_json
    text already (publishing makes it once per distinct slice value)."""
    digest = StreamHash()
    digest.add(canonical_json(settings))
    for query_ids, doc_ids, grades in label_blocks:
        if query_ids:
            digest.add_block("\n".join(map(LABEL_LINE, query_ids, doc_ids, grades)))
    return _queries_and_pages(digest, queries, pages, evidence)


def _queries_and_pages(digest: StreamHash, queries: Iterable[tuple[str, dict]], pages: Iterable[tuple], evidence: VersionEvidence) -> str:
    for query_id, metadata in queries:
        text = metadata if isinstance(metadata, str) else canonical_json(metadata)
        digest.add(f"Q\t{query_id}\t{text}")
    for doc_id, metadata, published_at, content_hash in pages:
        stamp = published_at.isoformat() if published_at else ""
        text = metadata if isinstance(metadata, str) else canonical_json(metadata)
        digest.add(f"P\t{doc_id}\t{text}\t{stamp}\t{content_hash}")
    digest.add_lines(evidence.lines())
    return digest.hexdigest()
