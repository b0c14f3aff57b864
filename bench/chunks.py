"""Scoring runs of a chunking at two levels, and projecting spans onto a chunking, each
beside its reference measured in the same run (issue 25).

    .venv/bin/python bench/chunks.py [--runs 20 --queries 10000 --depth 100 --pages 50000]
        [--project-spans 1000000 --project-chunks 2000000] [--seed 20261205]
        [--repeats 3] [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_chunks] [--keep]

1. Two levels against one. Creates the database named by --database-url (it must not
   exist beforehand) and, the same for the same seed, two golden sets with the same
   generated labels (--queries queries, 5 relevant pages of grades 1-3 and 0-2 of grade 0
   each, a page slice doc_type and a query slice lang), each on a corpus of --pages pages
   of 900 characters. The second corpus has a chunking of three 300-character chunks a
   page, and half of the second set's relevant labels have an evidence span (written as
   version rows after publishing, which a real publish would hash). --runs runs of --depth
   chunks a query are generated and stored on the second set (not timed); the first set
   gets each run's document level (chunks mapped to their documents, as Goldset reads
   them) as a run of documents: "the same runs over documents". Timed, in this process,
   with the numba kernels loaded as a worker loads them when it starts: evaluation_compute
   of every document run (reference: document level, all slices, completeness,
   leave-one-run-out) and of every chunk run (document level of all that, plus the chunk
   level, evidence recall@8 and @100, prompt tokens@8), a document run and its chunk twin
   in turn, from cold process caches (and no pooled labels stored), then all again with
   the caches warm (a worker re-scoring a set); --repeats times each, the best reported.
   Target: within 1.3x. The document-level scores of each chunk run are checked equal to
   those of its document twin.
2. Projection. --project-spans spans (one per label, 20-400 characters) onto a chunking of
   --project-chunks chunks, with lib.levels.project_labels, arrays in memory. Target: under
   10 s; the reference beside it is np.lexsort of the chunks by page and start, the sort the
   projection cannot do without.

Duplicate grouping's figure is bench/duplicates.py's (the duplicates work), not this one's.
"""

import argparse
import cProfile
import dataclasses
import pstats
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import question_records  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402

LEVELS_TARGET = 1.3
PROJECTION_TARGET_SECONDS = 10.0
TEXT_LENGTH, CHUNK_LENGTH = 900, 300
LANGS = ("en", "de", "fr")
DOC_TYPES = ("article", "faq", "manual")


def labels_generate(rng, *, queries: int, pages: int):
    """(query, page index from 0, grade) arrays: 5 relevant and 0-2 grade-0 pages a query."""
    qs, ps, gs = [], [], []
    for q in range(queries):
        count = 5 + int(rng.integers(0, 3))
        qs.append(np.full(count, q))
        ps.append(rng.choice(pages, size=count, replace=False))
        gs.append(np.concatenate([rng.choice([1, 2, 3], size=5, p=[0.5, 0.3, 0.2]), np.zeros(count - 5, np.int64)]))
    return np.concatenate(qs), np.concatenate(ps), np.concatenate(gs)


# Words the pages are written in: pages of distinct words, so that none is a duplicate of
# another (goldenset.duplicates groups pages of the same or nearly the same text at import).
VOCABULARY = np.array([f"w{n}" for n in range(20_000)])


def page_text(rng: np.random.Generator, number: int) -> str:
    """TEXT_LENGTH characters of words drawn at random, no two pages alike."""
    text = f"page {number} " + " ".join(VOCABULARY[rng.integers(0, len(VOCABULARY), size=TEXT_LENGTH // 4)].tolist())
    return text[:TEXT_LENGTH]


def golden_set_make(slug: str, labels, *, pages: int, queries: int, seed: int):
    from goldenset.models import GoldenSet, default_grade_scale
    from goldenset.services import GoldenSetSource, golden_set_create
    from lib.formats import JsonRecord

    rng = np.random.default_rng(seed)
    types = rng.integers(0, len(DOC_TYPES), size=pages).tolist()
    records = [
        JsonRecord(line=i + 1, id=f"p{i}", title="", text=page_text(rng, i), metadata={"doc_type": DOC_TYPES[types[i]]})
        for i in range(pages)
    ]
    langs = rng.integers(0, len(LANGS), size=queries).tolist()
    query_records = question_records([f"q{q + 1}" for q in range(queries)], [{"lang": LANGS[lang]} for lang in langs])
    qrels = {(f"q{q + 1}", f"p{p}"): g for q, p, g in zip(*(a.tolist() for a in labels))}
    source = GoldenSetSource(
        pages=records,
        queries=query_records,
        qrels=qrels,
        source_name="generated",
        grade_scale=default_grade_scale(),
        query_slice_fields=["lang"],
        page_slice_fields=["doc_type"],
        k_first=100,
        k_final=8,
    )
    golden_set_create(slug=slug, name=slug, source=source)
    return GoldenSet.objects.get(slug=slug)


def chunk_runs_generate(rng, labels, *, queries: int, pages: int, depth: int, runs: int):
    """Per run, [queries, depth] chunk numbers (page * 3 + part) best first, and scores:
    each relevant page found with a probability of 0.85 by one of its chunks (a second of
    its chunks a third of the time), the rest chunks drawn at random, ties now and then."""
    label_q, label_p, label_g = labels
    relevant = label_g > 0
    out = []
    for _ in range(runs):
        chunks = rng.integers(0, pages * 3, size=(queries, depth))
        found = relevant & (rng.random(len(label_q)) < 0.85)
        rank = np.minimum(rng.geometric(0.08, size=len(label_q)) - 1, depth - 1)
        part = rng.integers(0, 3, size=len(label_q))
        chunks[label_q[found], rank[found]] = label_p[found] * 3 + part[found]
        second = found & (rng.random(len(label_q)) < 0.33)
        chunks[label_q[second], np.minimum(rank[second] + 3, depth - 1)] = label_p[second] * 3 + (part[second] + 1) % 3
        scores = np.round(np.sort(rng.random((queries, depth)) * 20, axis=1)[:, ::-1], 2)
        out.append((chunks, scores))
    return out


def ranked_of(chunks: np.ndarray, scores: np.ndarray, keys: np.ndarray, query_ids: list[str]):
    """A RankedRun of chunk numbers (keys[number] the Chunk key), a chunk once a query, in
    trec_eval order (score descending, ties by key here: any fixed order will do)."""
    from lib.runs import RankedRun

    rows_keys, rows_scores, counts = [], [], []
    for q in range(chunks.shape[0]):
        seen, kept_keys, kept_scores = set(), [], []
        for c, s in zip(chunks[q].tolist(), scores[q].tolist()):
            if c not in seen:
                seen.add(c)
                kept_keys.append(int(keys[c]))
                kept_scores.append(s)
        rows_keys += kept_keys
        rows_scores += kept_scores
        counts.append(len(kept_keys))
    return RankedRun(
        query_ids=tuple(query_ids),
        offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        doc_keys=np.asarray(rows_keys, np.int64),
        scores=np.asarray(rows_scores, np.float64),
        external_doc_ids=(),
        depth=1000,
        dropped_by_depth=0,
    )


def run_store(golden_set, name: str, ranked, chunking=None):
    from evaluation.models import Run, RunData

    run = Run.objects.create(
        golden_set=golden_set,
        name=name,
        system=name,
        stage="first_stage",
        query_count=len(ranked.query_ids),
        entry_count=len(ranked),
        depth_cap=1000,
        dropped_by_depth=0,
        external_doc_count=0,
        chunking=chunking,
    )
    RunData.objects.create(run=run, ranked=ranked.to_bytes())
    return run


def forget_caches() -> None:
    from evaluation import chunk_inputs, pooled_labels, scoring_inputs

    chunk_inputs.forget()
    pooled_labels.forget()
    scoring_inputs.forget()


def measure_levels(args) -> dict:
    from django.core.management import call_command
    from django.db import connection

    from evaluation import chunk_inputs
    from evaluation.models import Evaluation, RunPooledLabels, Score
    from evaluation.selectors import run_ranked
    from evaluation.services import evaluation_compute
    from evaluation.warmup import warm_kernels
    from goldenset.models import Chunk, Chunking, Page, Query, VersionSpan
    from goldenset.services import version_publish

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(args.seed)
    labels = labels_generate(rng, queries=args.queries, pages=args.pages)
    print(f"  two golden sets: {args.pages} pages, {args.queries} queries, {len(labels[0])} labels each ...", file=sys.stderr)
    documents_set = golden_set_make("bench-documents", labels, pages=args.pages, queries=args.queries, seed=args.seed)
    chunks_set = golden_set_make("bench-chunks", labels, pages=args.pages, queries=args.queries, seed=args.seed)
    documents_version = version_publish(golden_set=documents_set)
    chunks_version = version_publish(golden_set=chunks_set)

    chunking = Chunking.objects.create(corpus=chunks_set.corpus, name="thirds")
    page_keys = dict(Page.objects.filter(corpus=chunks_set.corpus).values_list("doc_id", "id"))
    page_of = np.asarray([page_keys[f"p{i}"] for i in range(args.pages)], np.int64)
    Chunk.objects.bulk_create(
        (
            Chunk(
                chunking=chunking,
                chunk_id=f"p{i}#{part}",
                page_id=int(page_of[i]),
                start=part * CHUNK_LENGTH,
                end=(part + 1) * CHUNK_LENGTH,
            )
            for i in range(args.pages)
            for part in range(3)
        ),
        batch_size=10_000,
    )
    chunk_keys = dict(Chunk.objects.filter(chunking=chunking).values_list("chunk_id", "id"))
    key_of_number = np.asarray([chunk_keys[f"p{n // 3}#{n % 3}"] for n in range(args.pages * 3)], np.int64)
    # Half the relevant labels get a span of 40-400 characters somewhere in the page.
    query_pk = dict(Query.objects.filter(golden_set=chunks_set).values_list("query_id", "id"))
    label_q, label_p, label_g = labels
    with_span = np.flatnonzero((label_g > 0) & (rng.random(len(label_g)) < 0.5))
    starts = rng.integers(0, TEXT_LENGTH - 400, size=len(with_span))
    lengths = rng.integers(40, 400, size=len(with_span))
    VersionSpan.objects.bulk_create(
        (
            VersionSpan(
                version=chunks_version,
                query_id=query_pk[f"q{label_q[i] + 1}"],
                page_id=int(page_of[label_p[i]]),
                start=int(s),
                end=int(s + n),
                grade=int(label_g[i]),
            )
            for i, s, n in zip(with_span.tolist(), starts.tolist(), lengths.tolist())
        ),
        batch_size=10_000,
    )
    chunks_version.span_count = len(with_span)  # versions are append-only: said here, for the readers of this object

    print(f"  {args.runs} chunk runs and their document twins ...", file=sys.stderr)
    query_ids = [f"q{q + 1}" for q in range(args.queries)]
    doc_key_to_other = {}
    other_keys = dict(Page.objects.filter(corpus=documents_set.corpus).values_list("doc_id", "id"))
    for doc_id, key in page_keys.items():
        doc_key_to_other[key] = other_keys[doc_id]
    translate = np.vectorize(doc_key_to_other.__getitem__, otypes=[np.int64])
    chunk_runs, document_runs = [], []
    for number, (chunks, scores) in enumerate(
        chunk_runs_generate(rng, labels, queries=args.queries, pages=args.pages, depth=args.depth, runs=args.runs)
    ):
        ranked = ranked_of(chunks, scores, key_of_number, query_ids)
        chunk_runs.append(run_store(chunks_set, f"system-{number + 1}", ranked, chunking))
        documents = chunk_inputs.document_ranked(ranked=ranked, version=chunks_version, chunking=chunking)
        twin = dataclasses.replace(documents, doc_keys=translate(documents.doc_keys))
        document_runs.append(run_store(documents_set, f"system-{number + 1}", twin))
    entries = sum(len(run_ranked(run)) for run in chunk_runs)

    with connection.cursor() as cursor:
        # As autovacuum does within a minute or so of a bulk load: what is timed is a
        # database with statistics, not the minute after it was filled.
        cursor.execute("ANALYZE")
    warm_kernels()  # as a worker does when it starts (evaluation.tasks): loading them is not scoring
    profiler = cProfile.Profile() if args.profile else None

    def both_scored() -> tuple[float, float]:
        """Seconds to score every run of documents, and every run of chunks: a run of each
        in turn, so that what else the shared machine does meanwhile weighs on both alike."""
        documents, chunks = 0.0, 0.0
        for document_run, chunk_run in zip(document_runs, chunk_runs):
            started = time.perf_counter()
            evaluation_compute(run=document_run, version=documents_version)
            documents += time.perf_counter() - started
            if profiler:
                profiler.enable()
            started = time.perf_counter()
            evaluation_compute(run=chunk_run, version=chunks_version)
            chunks += time.perf_counter() - started
            if profiler:
                profiler.disable()
        return documents, chunks

    cold, warm = [], []
    for _ in range(args.repeats):
        forget_caches()
        RunPooledLabels.objects.filter(version__in=[documents_version, chunks_version]).delete()
        cold.append(both_scored())
        if profiler:
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(r"/(evaluation|goldenset|lib)/", 60)
            profiler = None
        # Warm: the same again in this process, as a worker re-scoring a set's runs holds
        # each version's arrays, its projection and what every run pools after the first run.
        warm.append(both_scored())
    # The best of the repeats of each: what the code costs, less what else ran meanwhile.
    documents_seconds, chunks_seconds = min(d for d, _ in cold), min(c for _, c in cold)
    documents_warm, chunks_warm = min(d for d, _ in warm), min(c for _, c in warm)

    worst = 0.0
    for document_run, chunk_run in zip(document_runs, chunk_runs):
        b = dict(Score.objects.filter(evaluation__run=chunk_run, slice="").values_list("metric", "value"))
        a = dict(Score.objects.filter(evaluation__run=document_run, slice="").values_list("metric", "value"))
        worst = max(worst, max(abs(a[m] - b[m]) for m in a))
    chunk_scores = Score.every_level.filter(evaluation__run__in=chunk_runs, level=Score.Level.CHUNK).count()
    return {
        "server": server_version(),
        "labels": len(labels[0]),
        "spans": len(with_span),
        "chunks": args.pages * 3,
        "entries": entries,
        "documents_entries": sum(len(run_ranked(run)) for run in document_runs),
        "documents_seconds": documents_seconds,
        "chunks_seconds": chunks_seconds,
        "documents_warm": documents_warm,
        "chunks_warm": chunks_warm,
        "worst": worst,
        "chunk_scores": chunk_scores,
        "evaluations": Evaluation.objects.filter(status="done").count(),
    }


def measure_projection(args) -> dict:
    from lib import levels

    rng = np.random.default_rng(args.seed)
    pages = args.project_chunks // 3
    chunk_pages = np.repeat(np.arange(1, pages + 1), 3)
    starts = np.tile(np.arange(3) * CHUNK_LENGTH, pages)
    order = rng.permutation(len(chunk_pages))  # chunk keys do not follow pages
    table = levels.ChunkTable(
        keys=np.arange(1, len(chunk_pages) + 1, dtype=np.int64),
        pages=chunk_pages[order].astype(np.int64),
        starts=starts[order].astype(np.int64),
        ends=(starts[order] + CHUNK_LENGTH).astype(np.int64),
    )
    n = args.project_spans
    queries = rng.integers(0, max(n // 5, 1), size=n)
    label_pages = rng.integers(1, pages + 1, size=n)
    pairs = np.unique(queries * (pages + 1) + label_pages)  # a label per (query, page)
    queries, label_pages = pairs // (pages + 1), pairs % (pages + 1)
    span_starts = rng.integers(0, TEXT_LENGTH - 400, size=len(pairs))
    span_ends = span_starts + rng.integers(20, 400, size=len(pairs))
    grades = rng.integers(1, 4, size=len(pairs))
    arguments = dict(
        label_queries=queries,
        label_pages=label_pages,
        label_grades=grades,
        span_queries=queries,
        span_pages=label_pages,
        span_starts=span_starts,
        span_ends=span_ends,
        span_grades=grades,
        min_chars=100,
        min_share=0.5,
    )
    small = levels.ChunkTable(keys=table.keys[:10], pages=table.pages[:10], starts=table.starts[:10], ends=table.ends[:10])
    levels.project_labels(**{**{k: v[:10] if isinstance(v, np.ndarray) else v for k, v in arguments.items()}, "chunks": small})  # compiled
    started = time.perf_counter()
    projection = levels.project_labels(**arguments, chunks=table)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    np.lexsort((table.starts, table.pages))
    reference = time.perf_counter() - started
    return {"spans": len(pairs), "chunks": len(table.keys), "rows": len(projection.grades), "seconds": seconds, "reference": reference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--project-spans", type=int, default=1_000_000)
    parser.add_argument("--project-chunks", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--repeats", type=int, default=3, help="times each pass is timed (cold, then warm); the best is reported")
    parser.add_argument("--profile", action="store_true", help="print where the chunk runs' scoring spends its time")
    parser.add_argument("--keep", action="store_true", help="do not drop the database at the end (to look into it)")
    parser.add_argument("--skip-levels", action="store_true", help="only the projection figure (no database)")
    database_url_argument(parser, "goldset_bench_chunks")
    args = parser.parse_args()

    django_setup(args.database_url)
    projection = measure_projection(args)
    levels_found = None
    if not args.skip_levels:
        with scratch_database(args.database_url, keep=args.keep):
            levels_found = measure_levels(args)

    print()
    print("Goldset: runs of a chunking scored at two levels, and spans projected onto a chunking")
    if levels_found:
        f = levels_found
        ratio = f["chunks_seconds"] / f["documents_seconds"]
        print(
            f"data: {args.queries} queries, {f['labels']} labels ({f['spans']} with a span) over {args.pages} pages "
            f"({f['chunks']} chunks); {args.runs} runs x {args.queries} queries x depth {args.depth} = {f['entries']} chunk "
            f"entries ({f['documents_entries']} at document level); PostgreSQL {f['server']}; metrics: 10 defaults, "
            f"slices overall + lang x3 + doc_type x3 + age"
        )
        print(f"cold process caches, best of {args.repeats}:")
        print(f"{'evaluation_compute, runs of documents, one level (reference)':<66}{f['documents_seconds']:>8.2f}s")
        print(f"{'evaluation_compute, the same runs of chunks, both levels':<66}{f['chunks_seconds']:>8.2f}s")
        print(f"levels: {ratio:.2f}x the reference (target {LEVELS_TARGET}x)  {'PASS' if ratio <= LEVELS_TARGET else 'MISS'}")
        warm = f["chunks_warm"] / f["documents_warm"]
        print(f"warm process caches, best of {args.repeats}:")
        print(f"{'the same again, warm process caches: runs of documents (reference)':<66}{f['documents_warm']:>8.2f}s")
        print(f"{'the same again, warm process caches: runs of chunks, both levels':<66}{f['chunks_warm']:>8.2f}s")
        print(f"warm:   {warm:.2f}x the reference (target {LEVELS_TARGET}x)  {'PASS' if warm <= LEVELS_TARGET else 'MISS'}")
        print(
            f"check:  {f['evaluations']} evaluations, {f['chunk_scores']} chunk-level scores; largest difference between a "
            f"chunk run's document level and its document twin's scores {f['worst']:.1e}"
        )
    p = projection
    print(
        f"projection: {p['spans']} spans onto {p['chunks']} chunks -> {p['rows']} chunk labels in {p['seconds']:.2f}s "
        f"(target under {PROJECTION_TARGET_SECONDS:.0f}s)  {'PASS' if p['seconds'] < PROJECTION_TARGET_SECONDS else 'MISS'}; "
        f"reference beside it: np.lexsort of the chunks by page and start {p['reference']:.2f}s"
    )


if __name__ == "__main__":
    main()
