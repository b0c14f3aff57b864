"""The union of runs' tops, in numpy: what pools and completeness samples are made of.

A run is read whole as columnar arrays (lib.runs.RankedRun) and its top `depth` entries of
every query are packed, with the other runs', into one int64 per entry and sorted once:
the distinct (query, page) pairs come out in order, with each run's rank of each
(`Union.ranks`). Pairs are then classified against what the golden set has already:
pages outside the corpus, pairs already in a pool of the set, pairs already labelled, and
the new ones (`classify`). Reads only; labeling.pools.services and
labeling.completeness.services write.
"""

import itertools
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from django.db import connection

from evaluation.models import Run
from goldenset.duplicates import group_map, to_groups
from goldenset.models import GoldenSet, Judgment, Query
from labeling.models import Pool, PoolQuery
from labeling.pools.chunk_runs import ChunkRows, documents_of
from labeling.pools.duplicates import fold_duplicates
from lib.progress import Progress
from lib.runs import RankedRun

# The union packs (pair, run, rank) into one int64 and sorts that when the bits suffice:
# one sort of plain integers, where an argsort of the pair key and the gathers after it
# move every column again (bench/pool_build.py). Wider keys (huge corpora or sets) take
# the argsort.
PACK_LIMIT_BITS = 63


@dataclass
class RunSpec:
    """A run to read: its column in run_ranks and the depth to take."""

    run: Run
    ordinal: int
    depth: int


@dataclass
class Union:
    """Distinct (query, doc) pairs of the runs' tops, sorted by (query, page key).

    `query_dense` indexes `query_pks` (all the set's queries, sorted); `page_keys` are
    Page primary keys, or negative for doc ids outside the corpus; `ranks` is the
    candidates x columns ranks matrix (columns = PoolRun ordinals).
    """

    query_pks: np.ndarray
    query_ids: list[str]
    retired: np.ndarray  # bool per entry of query_pks
    query_dense: np.ndarray
    page_keys: np.ndarray
    ranks: np.ndarray
    page_offset: int  # page key + page_offset >= 0 for every candidate
    page_span: int
    # bool per entry of query_pks: a query the caller did not choose (pool_build's
    # `queries`); its pairs are left out like a retired query's, and counted apart.
    unchosen: np.ndarray | None = None
    # Distinct (query, page) pairs the runs named with a duplicate member other than its
    # group's first, folded into the first's pair (labeling.pools.duplicates).
    folded_pairs: int = 0
    # The chunks runs of a chunking returned (labeling.pools.chunk_runs), their
    # query_index a dense query (an index of query_pks); None when no run has a chunking.
    chunks: ChunkRows | None = None

    @property
    def left_out(self) -> np.ndarray:
        """bool per entry of query_pks: queries whose pairs become no task."""
        return self.retired if self.unchosen is None else self.retired | self.unchosen

    def pair_keys(self, query_dense: np.ndarray, page_keys: np.ndarray) -> np.ndarray:
        """Sortable int64 keys of pairs, comparable with this union's `keys`; pairs
        whose page lies outside the union's key range get -1 (they match nothing)."""
        shifted = page_keys + self.page_offset
        inside = (shifted >= 0) & (shifted < self.page_span)
        return np.where(inside, query_dense * self.page_span + shifted, -1)

    @property
    def keys(self) -> np.ndarray:
        return self.query_dense * self.page_span + self.page_keys + self.page_offset


def _read_runs(specs: Iterable[RunSpec]) -> Iterator[tuple[RunSpec, RankedRun]]:
    """Each spec with its run's RankedRun, in order. A run's bytes are decoded in a
    worker thread while the next run's are fetched (zlib and the socket both release the
    GIL), which takes about a third off reading 20 runs. The fetch stays on this thread,
    in its transaction; it is the query of evaluation.selectors.run_ranked."""
    with ThreadPoolExecutor(max_workers=1) as decoder:
        pending = None
        for spec in specs:
            blob = Run.objects.filter(pk=spec.run.pk).values_list("data__ranked", flat=True).get()
            decoding = decoder.submit(RankedRun.from_bytes, bytes(blob))
            if pending is not None:
                yield pending[0], pending[1].result()
            pending = (spec, decoding)
        if pending is not None:
            yield pending[0], pending[1].result()


def pool_union(golden_set: GoldenSet, specs: list[RunSpec], columns: int, progress: Progress) -> Union:
    """Read the runs and take the union of their tops, all in numpy."""
    rows = sorted(Query.objects.filter(golden_set=golden_set).values_list("id", "query_id", "retired_at"))
    query_pks = np.array([pk for pk, _, _ in rows], dtype=np.int64)
    query_ids = [query_id for _, query_id, _ in rows]
    retired = np.array([retired_at is not None for _, _, retired_at in rows], dtype=bool)
    dense_of = {query_id: i for i, query_id in enumerate(query_ids)}

    # Per run: the dense query of each of its queries, how many entries each keeps (a
    # run's entries are best first, so its top `depth` are the first ones of each
    # query), and the kept doc keys. Entries are not expanded to one query and one rank
    # each until they are packed below, in place.
    external: dict[str, int] = {}
    members, groups = group_map(golden_set.corpus_id)
    folded: list[np.ndarray] = []
    parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    chunk_parts: list[ChunkRows] = []
    low, high, deepest = 0, -1, 0
    for spec, ranked in _read_runs(progress(specs, "reading runs")):
        if spec.run.chunking_id is not None:
            # A run of chunks pools documents, each at its best chunk's rank.
            ranked, chunks = documents_of(spec.run, ranked, spec.depth)
            dense = np.array([dense_of.get(query_id, -1) for query_id in ranked.query_ids], dtype=np.int64)[chunks.query_index]
            chunk_parts.append(ChunkRows(dense[dense >= 0], chunks.page_keys[dense >= 0], chunks.chunk_pks[dense >= 0]))
        counts = np.diff(ranked.offsets)
        kept = np.minimum(counts, spec.depth)
        docs = ranked.doc_keys
        if (kept != counts).any():
            docs = docs[np.arange(len(docs)) - np.repeat(ranked.offsets[:-1], counts) < spec.depth]
        # run_import refuses query ids the set lacks, so every one maps; -1 is a guard.
        query_map = np.array([dense_of.get(query_id, -1) for query_id in ranked.query_ids], dtype=np.int64)
        if (query_map < 0).any():
            docs = docs[np.repeat(query_map >= 0, kept)]
            kept, query_map = kept[query_map >= 0], query_map[query_map >= 0]
        if ranked.external_doc_ids and len(docs):
            # A run's negative keys are its own; one key per doc id across all the runs.
            external_map = np.array(
                [-(external.setdefault(doc_id, len(external)) + 1) for doc_id in ranked.external_doc_ids], dtype=np.int64
            )
            outside = docs < 0
            docs = docs.copy()
            docs[outside] = external_map[-docs[outside] - 1]
        if len(members) and len(docs):
            docs, kept, run_folded = fold_duplicates(docs, kept, members, groups)
            run_folded[:, 0] = query_map[run_folded[:, 0]]
            folded.append(run_folded)
        if len(docs):
            low, high = min(low, int(docs.min())), max(high, int(docs.max()))
            deepest = max(deepest, int(kept.max()))
        parts.append((spec.ordinal, query_map, kept, docs))

    page_offset = -low
    page_span = high + page_offset + 1 if high >= low else 1
    total = sum(len(part[3]) for part in parts)
    key_bits = (len(query_pks) * page_span).bit_length()
    column_bits = max(columns - 1, 1).bit_length()
    rank_bits = max(deepest, 1).bit_length()
    packable = key_bits + column_bits + rank_bits <= PACK_LIMIT_BITS
    shift = column_bits + rank_bits if packable else 0

    # (pair key, run column, rank) of every entry packed into one int64 and sorted: on
    # 20 million entries one sort of int64 costs a fraction of an argsort and the gathers
    # after it. Wider keys (huge corpora or sets) take the argsort.
    key = np.empty(total, dtype=np.int64)
    if not packable:
        run_column, rank = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    at = 0
    for ordinal, query_map, kept, docs in parts:
        piece = key[at : at + len(docs)]
        np.add(np.repeat(query_map * page_span + page_offset, kept), docs, out=piece)
        starts = np.cumsum(kept) - kept
        ranks_of_run = np.arange(1, len(docs) + 1, dtype=np.int64) - np.repeat(starts, kept)
        if packable:
            piece <<= shift
            piece |= ranks_of_run
            piece |= ordinal << rank_bits
        else:
            run_column[at : at + len(docs)] = ordinal
            rank[at : at + len(docs)] = ranks_of_run
        at += len(docs)
    del parts

    if packable:
        key.sort()
        packed, key = key, key >> shift
        sorted_column = (packed >> rank_bits) & ((1 << column_bits) - 1)
        sorted_rank = packed & ((1 << rank_bits) - 1)
        del packed
    else:
        order = np.argsort(key)
        key, sorted_column, sorted_rank = key[order], run_column[order], rank[order]
        del order, run_column, rank

    first = np.empty(len(key), dtype=bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    unique_keys = key[starts]
    del key, first
    # Each entry's cell in the ranks matrix. np.repeat, not a cumsum of `first`: numpy's
    # cumsum of a bool array casts element by element.
    cell = np.repeat(np.arange(0, len(starts) * columns, columns, dtype=np.int64), np.diff(np.append(starts, len(sorted_rank))))
    cell += sorted_column
    ranks_matrix = np.zeros((len(unique_keys), columns), dtype=np.uint16)
    ranks_matrix.ravel()[cell] = sorted_rank
    del cell, sorted_column, sorted_rank
    return Union(
        query_pks=query_pks,
        query_ids=query_ids,
        retired=retired,
        query_dense=unique_keys // page_span,
        page_keys=unique_keys % page_span - page_offset,
        ranks=ranks_matrix,
        page_offset=page_offset,
        page_span=page_span,
        folded_pairs=len(np.unique(np.concatenate(folded), axis=0)) if folded else 0,
        chunks=ChunkRows(*(np.concatenate(column) for column in zip(*((c.query_index, c.page_keys, c.chunk_pks) for c in chunk_parts))))
        if chunk_parts
        else None,
    )


def union_chunks(union: Union, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query pks, page pks, chunk pks) of the union's chunks whose pair is among `pairs`
    (a mask over the union's candidates): what the pool stores of those pairs' chunks."""
    if union.chunks is None or not pairs.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    chunks = union.chunks
    inside = member(union.pair_keys(chunks.query_index, chunks.page_keys), union.keys[pairs])
    return union.query_pks[chunks.query_index[inside]], chunks.page_keys[inside], chunks.chunk_pks[inside]


_PAIR_ROW = np.dtype([("fields", ">i2"), ("first_length", ">i4"), ("first", ">i8"), ("second_length", ">i4"), ("second", ">i8")])


def copy_pairs(queryset, sql: str) -> tuple[np.ndarray, np.ndarray]:
    """Two bigint columns as int64 arrays: on PostgreSQL `sql` (a SELECT of two bigint
    columns) through a binary COPY parsed by numpy, elsewhere `queryset` (the same
    pairs through the ORM). A pool's set may hold millions of tasks; a Python tuple
    each would take seconds."""
    if connection.vendor == "postgresql":
        buffer = bytearray()
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)") as copy:
                for data in copy:
                    buffer += data
        # 19 bytes of header (signature, flags, extension length), 2 of trailer.
        rows = np.frombuffer(bytes(buffer[19:-2]), dtype=_PAIR_ROW)
        return rows["first"].astype(np.int64), rows["second"].astype(np.int64)
    flat = np.fromiter(itertools.chain.from_iterable(queryset.iterator(chunk_size=50_000)), dtype=np.int64)
    pairs = flat.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def member(keys: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Boolean mask: which of `keys` are in `of` (sort and binary search; np.isin and
    np.unique take a hash path in numpy 2.3 that is minutes slower on millions)."""
    if not len(of) or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    of = np.sort(of)
    at = np.searchsorted(of, keys)
    at[at == len(of)] = 0
    return of[at] == keys


def dense_queries(union: Union, query_pks: np.ndarray) -> np.ndarray:
    """Index in union.query_pks of each of `query_pks` (all are the set's)."""
    return np.searchsorted(union.query_pks, query_pks)


def _labelled_mask(golden_set: GoldenSet, union: Union) -> np.ndarray:
    """Which candidates have at least one judgment (any source, any grade)."""
    query_pks, page_pks = copy_pairs(
        Judgment.objects.filter(query__golden_set=golden_set).values_list("query_id", "page_id").distinct(),
        "SELECT DISTINCT j.query_id, j.page_id FROM goldenset_judgment AS j JOIN goldenset_query AS q ON q.id = j.query_id "
        f"WHERE q.golden_set_id = {int(golden_set.pk)}",
    )
    # A judgment of a member is the group's (publish maps it onto the group's first).
    page_pks = to_groups(page_pks, *group_map(golden_set.corpus_id))
    keys = union.pair_keys(dense_queries(union, query_pks), page_pks)
    return member(union.keys, keys[keys >= 0])


def classify(golden_set: GoldenSet, union: Union, pool_task_keys: np.ndarray) -> dict[str, np.ndarray]:
    """Masks over the union's candidates, each candidate in exactly one (pairs of retired
    or unchosen queries in none): outside_corpus, already_tasks, already_labelled, new_tasks."""
    live = ~union.left_out[union.query_dense]
    outside = union.page_keys < 0
    tasks = member(union.keys, pool_task_keys) & ~outside
    labelled = _labelled_mask(golden_set, union) & ~outside & ~tasks
    return {
        "outside_corpus": outside & live,
        "already_tasks": tasks & live,
        "already_labelled": labelled & live,
        "new_tasks": ~outside & ~tasks & ~labelled & live,
    }


def set_pool_keys(golden_set: GoldenSet, union: Union, exclude_pool: Pool | None = None) -> np.ndarray:
    """Pair keys of the pairs of the set's pools (of any pool but `exclude_pool`)."""
    query_pks, page_pks = set_pool_pairs(golden_set, exclude_pool)
    keys = union.pair_keys(dense_queries(union, query_pks), page_pks)
    return keys[keys >= 0]


def set_pool_pairs(golden_set: GoldenSet, exclude_pool: Pool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(query pks, page pks) of every pair of the set's pools (but `exclude_pool`'s),
    whether it is a task yet or not."""
    rows = PoolQuery.objects.filter(pool__golden_set=golden_set)
    if exclude_pool is not None:
        rows = rows.exclude(pool=exclude_pool)
    query_pks, pages = [], []
    for query_pk, blob in rows.values_list("query_id", "page_ids").iterator(chunk_size=2000):
        page = np.frombuffer(bytes(blob), dtype="<i8")
        pages.append(page)
        query_pks.append(np.full(len(page), query_pk, dtype=np.int64))
    if not pages:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(query_pks), np.concatenate(pages).astype(np.int64)
