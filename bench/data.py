"""The data the benches generate, the same for the same seed: chunk-style doc ids, query
records, the pages a query's runs draw from, runs stored as run_import stores them, a
golden set with such runs, and a pool part-way through judging.

    from bench.data import candidate_pages, doc_id_of, runs_write

Everything that writes needs Django set up, inside the bench's own database.
"""

import sys

import numpy as np

# Grades 0-3, each labelled by its number: the scale of the generated golden sets.
GRADE_SCALE = [{"value": grade, "label": str(grade)} for grade in range(4)]


def doc_id_of(number: int) -> str:
    """The doc id of corpus page `number` (from 0): chunk-style, with '/' and '#' as RAG
    corpora have (kb/000123#2, four chunks a page); they must survive untouched."""
    return f"kb/{number // 4:06d}#{number % 4}"


def question_records(query_ids: list[str], metadata: list[dict] | None = None) -> list:
    """Query records for `query_ids` (lines from 1, text "question <line>"), with
    metadata[i] as the i-th query's metadata when given."""
    from lib.formats import JsonRecord

    return [
        JsonRecord(line=n, id=query_id, text=f"question {n}", **({"metadata": metadata[n - 1]} if metadata else {}))
        for n, query_id in enumerate(query_ids, start=1)
    ]


def candidate_pages(rng: np.random.Generator, *, queries: int, pages: int, count: int) -> np.ndarray:
    """[queries, count] corpus page numbers: each query's candidates, distinct and spread
    over the corpus (7919 is prime)."""
    starts = rng.integers(0, pages, size=(queries, 1))
    return (starts + np.arange(count) * 7919) % pages


def runs_write(
    *,
    golden_set,
    rng: np.random.Generator,
    candidates: np.ndarray,
    page_keys: np.ndarray,
    query_ids: list[str],
    runs: int,
    depth: int,
    noise: float = 1.0,
    outside_share: float = 0.0,
    verbose: bool = False,
) -> list:
    """`runs` first-stage runs named system-00, system-01, ... that each rank `depth` pages
    per query, written the way run_import stores them (a lib.runs.RankedRun in RunData),
    without parsing a TREC file. Returns the Run rows.

    Row i of `candidates` (corpus page numbers, see candidate_pages) belongs to
    query_ids[i], and page_keys maps a page number to its Page key. Each query's runs draw
    from its candidates by one shared latent relevance plus each run's own Gumbel noise of
    scale `noise`, so that they agree at the top and part deeper down, as retrieval
    systems do; `outside_share` (0-1) of the entries name doc ids outside the corpus.
    """
    from evaluation.models import Run, RunData
    from lib.runs import RankedRun

    queries, count = candidates.shape
    latent = -np.log(np.arange(1, count + 1))  # a shared sense of which pages are best
    offsets = np.arange(queries + 1, dtype=np.int64) * depth
    written = []
    for number in range(runs):
        noisy = latent + rng.gumbel(scale=noise, size=(queries, count))
        top = np.argsort(-noisy, axis=1)[:, :depth]
        scores = -np.sort(-noisy, axis=1)[:, :depth]
        keys = page_keys[np.take_along_axis(candidates, top, axis=1)]
        external_ids: tuple[str, ...] = ()
        if outside_share:
            external = rng.random(keys.shape) < outside_share
            external_ids = tuple(f"elsewhere/{number}/{i}" for i in range(int(external.sum())))
            keys[external] = -np.arange(1, len(external_ids) + 1)
        ranked = RankedRun(
            query_ids=tuple(query_ids),
            offsets=offsets,
            doc_keys=keys.ravel(),
            scores=scores.ravel(),
            external_doc_ids=external_ids,
            depth=depth,
            dropped_by_depth=0,
        )
        run = Run.objects.create(
            golden_set=golden_set,
            name=f"system-{number:02d}",
            system=f"system-{number:02d}",
            stage=Run.Stage.FIRST_STAGE,
            query_count=queries,
            entry_count=len(ranked),
            depth_cap=depth,
            dropped_by_depth=0,
            external_doc_count=len(external_ids),
        )
        RunData.objects.create(run=run, ranked=ranked.to_bytes())
        written.append(run)
        if verbose:
            print(f"  run {number + 1} of {runs} written", file=sys.stderr)
    return written


def golden_set_with_runs(
    *,
    slug: str,
    queries: int,
    runs: int,
    depth: int,
    pages: int,
    candidates: int,
    noise: float,
    judgments: int,
    seed: int,
) -> dict:
    """A golden set for the pool benches, written through the app's models: `pages` id-only
    pages, `queries` queries, `judgments` imported judgments (half of them on pairs the
    runs are likely to retrieve, so that a pool has labelled pairs to leave out) and
    `runs` runs of `depth` pages a query drawn from `candidates` pages a query (see
    runs_write; 0.1% of the entries outside the corpus). Returns {"judgments": count}."""
    from goldenset.models import GoldenSet, Page
    from goldenset.services import GoldenSetSource, golden_set_create
    from lib.formats import JsonRecord

    rng = np.random.default_rng(seed)
    query_ids = [f"q{n}" for n in range(queries)]
    doc_ids = [doc_id_of(n) for n in range(pages)]
    candidate = candidate_pages(rng, queries=queries, pages=pages, count=candidates)
    # Judgments: half on pairs the runs are likely to retrieve (the head of the
    # candidates), half anywhere.
    labelled = set()
    head = max(candidates // 4, 1)
    while len(labelled) < judgments // 2:
        q = int(rng.integers(queries))
        labelled.add((q, int(candidate[q, rng.integers(head)])))
    while len(labelled) < judgments:
        labelled.add((int(rng.integers(queries)), int(rng.integers(pages))))
    qrels = {(query_ids[q], doc_ids[d]): int(rng.integers(0, 4)) for q, d in labelled}

    source = GoldenSetSource(
        pages=[JsonRecord(line=n, id=doc_id, title=doc_id) for n, doc_id in enumerate(doc_ids, 1)],
        queries=question_records(query_ids),
        qrels=qrels,
        grade_scale=GRADE_SCALE,
    )
    golden_set_create(slug=slug, name="pool bench", source=source)
    golden_set = GoldenSet.objects.get(slug=slug)
    page_pk = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("doc_id", "id"))
    page_keys = np.array([page_pk[doc_id] for doc_id in doc_ids], dtype=np.int64)
    # query_ids are in the order of their numbers, as a run lists its queries.
    runs_write(
        golden_set=golden_set,
        rng=rng,
        candidates=candidate,
        page_keys=page_keys,
        query_ids=query_ids,
        runs=runs,
        depth=depth,
        noise=noise,
        outside_share=0.001,
        verbose=True,
    )
    return {"judgments": len(qrels)}


def pool_judged_earlier(pool, share: float, spread_seconds: int = 0) -> int:
    """Close `share` (0-1) of a pool's pairs that are no task yet, as if judged before the
    bench: their tasks are written done, with a grade of 0-3 and done_at up to
    `spread_seconds` ago, and no judgment rows (what the benches check is new judgments).
    A pool part-way through judging then costs its counts and curves what it will. Every
    k-th pair (k = 1 / share) by (query, page), so the same data closes the same pairs.
    Returns how many."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from labeling.models import JudgingTask
    from labeling.pools import strategies as pooling
    from labeling.pools.selectors import pool_pairs
    from lib.bulk import bulk_insert

    pairs = pool_pairs(pool)
    every = max(round(1 / share), 1) if share > 0 else 0
    if not every:
        return 0
    chosen = np.flatnonzero((np.arange(len(pairs)) % every == 0) & (pairs.task_ids == 0))
    best_rank, _ = pooling.best_rank_and_run(pairs.ranks[chosen])
    packed = pooling.pack_ranks(pairs.ranks[chosen])
    now = timezone.now()
    rows = (
        (
            pool.golden_set_id,
            pool.pk,
            q,
            p,
            "pool",
            int(best),
            bytes(blob),
            "done",
            (i // every) % 4,
            now - timedelta(seconds=i % spread_seconds if spread_seconds else 0),
            1,
            1,
        )
        for i, q, p, best, blob in zip(
            chosen.tolist(),
            pairs.query_pks[chosen].tolist(),
            pairs.page_pks[chosen].tolist(),
            best_rank.tolist(),
            packed,
        )
    )
    columns = [
        "golden_set_id",
        "pool_id",
        "query_id",
        "page_id",
        "kind",
        "best_rank",
        "run_ranks",
        "status",
        "grade",
        "done_at",
        "judgments_required",
        "judgments_done",
    ]
    with transaction.atomic():
        return bulk_insert(JudgingTask._meta.db_table, columns, rows)
