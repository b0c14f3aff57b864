"""Duplicate groups of a corpus's documents (SEMANTICS.md, "Duplicate groups").

Two documents are in one group when their normalised texts are equal (exact: casefolded,
whitespace collapsed) or when the Jaccard similarity of their word shingles, as MinHash
estimates it, is at or above the corpus's `duplicate_threshold` (near; 1.0 = exact only);
groups are closed under both (a chain of near duplicates is one group). A group's first
member in natural doc_id order stands for it: every other member's Page.duplicate_of points
at it, and judging, publish and scoring read that pointer.

The near step is datasketch's own batch, not a hand-rolled sketch: MinHash.generator (one
initialised MinHash copied per document) into a MinHashLSH insertion session. Candidates
are then read from the index's buckets rather than by querying it once per document (a
query costs about what an insert does), and each candidate pair is kept when its
estimated Jaccard reaches the threshold, which weeds out the bands' false positives.
Only the first of each exact group is sketched. bench/duplicates.py measures the whole
grouping against the library's batch alone over the same documents.

The grouping reads only text: a page without text (an id-only page) is never a duplicate.
The title is left out, as offsets and spans index the text alone.
"""

from collections.abc import Iterable, Sequence

import numpy as np
from django.db import transaction

from goldenset.models import Corpus, Page
from lib.errors import GoldsetError
from lib.ids import natural_order
from lib.progress import Progress, no_progress

# Words per shingle: three tell a reworded sentence from a copied one while a changed word
# touches only three shingles of a long text.
SHINGLE_WORDS = 3
# Permutations of each MinHash: at 64 the estimate of a Jaccard of 0.9 is within about
# 0.04 (one standard deviation), and the sketches of a million documents fit in 256 MB.
NUM_PERM = 64
SEED = 1
# A bucket larger than this is compared member by member with its first only: a
# boilerplate shingle band shared by thousands of documents would otherwise cost the
# square of its size.
BUCKET_ALL_PAIRS = 200
UPDATE_BATCH = 5_000


def normalised(text: str) -> str:
    """`text` casefolded with every run of whitespace one space, stripped."""
    return " ".join(text.casefold().split())


# A text of fewer words is grouped with its exact duplicates only: its few shingles make the
# MinHash estimate of its similarity too coarse to trust ("text of page 1" and "text of
# page 2" share one shingle of two, and across 100,000 such pages some pairs' estimates
# reached 0.9).
NEAR_MIN_WORDS = 10


def shingles(normal: str) -> list[bytes]:
    """The distinct word shingles (SHINGLE_WORDS words each) of a normalised text; a text
    shorter than a shingle is one shingle."""
    words = normal.split(" ")
    if len(words) <= SHINGLE_WORDS:
        return [normal.encode()]
    return list({" ".join(words[i : i + SHINGLE_WORDS]).encode() for i in range(len(words) - SHINGLE_WORDS + 1)})


def threshold_checked(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise GoldsetError(
            f"duplicate threshold {threshold!r} must be a number above 0 and at most 1 (1 = exact duplicates only)", field="threshold"
        )
    return float(threshold)


def group_firsts(texts: Sequence[str | None], threshold: float, progress: Progress = no_progress) -> np.ndarray:
    """For each of `texts` (in natural doc_id order), the index of its group's first member:
    its own index when it is alone or first. None or blank texts are never grouped."""
    count = len(texts)
    parent = np.arange(count, dtype=np.int64)
    representatives: list[int] = []
    normals: list[str] = []
    seen: dict[str, int] = {}
    for index, text in enumerate(progress(texts, "exact duplicates")):
        normal = normalised(text) if text else ""
        if not normal:
            continue
        first = seen.setdefault(normal, index)
        if first != index:
            parent[index] = first
        elif normal.count(" ") + 1 >= NEAR_MIN_WORDS:
            representatives.append(index)
            normals.append(normal)
    if threshold < 1.0 and len(representatives) > 1:
        for left, right in near_pairs(normals, threshold, progress):
            _union(parent, representatives[left], representatives[right])
    return _roots(parent)


def near_pairs(normals: Sequence[str], threshold: float, progress: Progress = no_progress) -> Iterable[tuple[int, int]]:
    """Pairs (i, j), i < j, of `normals` whose estimated Jaccard is at least `threshold`
    (each pair once or more)."""
    # Here, not at the top: datasketch brings scipy, which a web worker that never groups
    # a corpus should not load at start (tests/goldset/test_startup.py).
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    sketches = np.empty((len(normals), NUM_PERM), dtype=np.uint32)
    minhashes = MinHash.generator((shingles(normal) for normal in normals), num_perm=NUM_PERM, seed=SEED)
    with lsh.insertion_session() as session:
        for index, minhash in enumerate(progress(minhashes, "near duplicates")):
            session.insert(index, minhash, check_duplication=False)
            sketches[index] = minhash.hashvalues
    for table in lsh.hashtables:
        for band in table.keys():
            members = table.get(band)
            if len(members) < 2:
                continue
            members = np.fromiter(members, dtype=np.int64, count=len(members))
            members.sort()
            yield from _similar_in(members, sketches, threshold)


def _similar_in(members: np.ndarray, sketches: np.ndarray, threshold: float) -> Iterable[tuple[int, int]]:
    """The pairs of one bucket's `members` (sorted) at or above `threshold`."""
    tops = members if len(members) <= BUCKET_ALL_PAIRS else members[:1]
    rows = sketches[members]
    for at, top in enumerate(tops.tolist()):
        later = members[at + 1 :]
        similar = (rows[at + 1 :] == rows[at]).mean(axis=1) >= threshold
        for other in later[similar].tolist():
            yield top, other


def _find(parent: np.ndarray, index: int) -> int:
    root = index
    while parent[root] != root:
        root = parent[root]
    while parent[index] != root:
        parent[index], index = root, parent[index]
    return int(root)


def _union(parent: np.ndarray, left: int, right: int) -> None:
    # The lower index becomes the root: the group's first member in natural doc_id order.
    left, right = _find(parent, left), _find(parent, right)
    if left != right:
        parent[max(left, right)] = min(left, right)


def _roots(parent: np.ndarray) -> np.ndarray:
    """Each index's root, with every path compressed."""
    roots = parent.copy()
    while True:
        nxt = roots[roots]
        if np.array_equal(nxt, roots):
            return roots
        roots = nxt


def corpus_duplicates_group(
    *,
    corpus: Corpus,
    threshold: float | None = None,
    pages: Iterable[tuple[int, str, str | None]] | None = None,
    progress: Progress = no_progress,
) -> int:
    """Group `corpus`'s documents and write every page's Page.duplicate_of (see the module
    docstring); return how many documents are a member other than their group's first.

    `threshold` (0 < t <= 1) is saved as the corpus's duplicate_threshold when given.
    `pages` are (pk, doc_id, text) of all the corpus's pages when the caller has them at
    hand (an import that just wrote them); they are read otherwise. Only rows whose
    pointer changes are written, in one transaction."""
    if threshold is not None:
        threshold = threshold_checked(threshold)
    with transaction.atomic():
        if threshold is not None and threshold != corpus.duplicate_threshold:
            corpus.duplicate_threshold = threshold
            corpus.save(update_fields=["duplicate_threshold"])
        if pages is None:
            pages = Page.objects.filter(corpus=corpus).values_list("pk", "doc_id", "text").iterator(chunk_size=20_000)
        rows = list(pages)
        order = natural_order([doc_id for _, doc_id, _ in rows])
        pks = np.array([rows[i][0] for i in order], dtype=np.int64)
        firsts = group_firsts([rows[i][2] for i in order], corpus.duplicate_threshold, progress)
        del rows
        wanted = np.where(firsts == np.arange(len(pks)), 0, pks[firsts])
        current = dict(Page.objects.filter(corpus=corpus, duplicate_of__isnull=False).values_list("pk", "duplicate_of_id"))
        changed = [
            Page(pk=pk, duplicate_of_id=target or None) for pk, target in zip(pks.tolist(), wanted.tolist()) if current.get(pk, 0) != target
        ]
        Page.objects.bulk_update(changed, ["duplicate_of"], batch_size=UPDATE_BATCH)
    return int(np.count_nonzero(wanted))


def group_map(corpus_pk: int) -> tuple[np.ndarray, np.ndarray]:
    """(member page pks, sorted; their group's first page pk) of the corpus's duplicates now."""
    pairs = np.array(
        list(Page.objects.filter(corpus_id=corpus_pk, duplicate_of__isnull=False).order_by("pk").values_list("pk", "duplicate_of_id")),
        dtype=np.int64,
    ).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def to_groups(pages: np.ndarray, members: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """`pages` (pks; negative keys pass through) with every member replaced by its group's first."""
    if not len(members) or not len(pages):
        return pages
    found = np.searchsorted(members, pages).clip(0, len(members) - 1)
    return np.where(members[found] == pages, groups[found], pages)
