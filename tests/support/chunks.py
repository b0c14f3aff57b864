"""Chunkings and runs of chunks for the tests, written as the chunking import will write
them: Chunk rows of a chunking, and a run of it whose entries are Chunk primary keys
(Run.chunking set), ranked as trec_eval ranks (lib.runs.rank_run)."""

from evaluation.models import Run, RunData
from evaluation.selectors import evaluation_settings
from goldenset.models import Chunk, Chunking, GoldenSet, Page
from lib.errors import ProblemCollector
from lib.runs import rank_run, run_entries_from_rankings


def chunking(golden_set: GoldenSet, name: str, chunks: dict[str, tuple[str, int, int]]) -> Chunking:
    """A chunking `name` of the set's corpus: chunk id -> (doc id, start, end)."""
    made = Chunking.objects.create(corpus=golden_set.corpus, name=name)
    pages = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("doc_id", "pk"))
    Chunk.objects.bulk_create(
        Chunk(chunking=made, chunk_id=chunk_id, page_id=pages[doc_id], start=start, end=end)
        for chunk_id, (doc_id, start, end) in chunks.items()
    )
    made.chunk_count, made.document_count = len(chunks), len({doc_id for doc_id, _, _ in chunks.values()})
    made.save(update_fields=["chunk_count", "document_count"])
    return made


def chunk_run(golden_set: GoldenSet, of: Chunking, name: str, ranking: dict[str, list[str]], *, stage: str = "first_stage") -> Run:
    """A run `name` of chunking `of` that ranks, for each query id, the chunk ids given, best first."""
    problems = ProblemCollector()
    rankings = [(query_id, [(chunk_id, float(100 - rank)) for rank, chunk_id in enumerate(ids)]) for query_id, ids in ranking.items()]
    entries = run_entries_from_rankings(rankings, f"{name}.run", problems)
    problems.raise_if_any("bad test run")
    depth = evaluation_settings(golden_set).run_depth_cap
    ranked = rank_run(entries, doc_keys=dict(Chunk.objects.filter(chunking=of).values_list("chunk_id", "pk")), depth=depth)
    run = Run.objects.create(
        golden_set=golden_set,
        name=name,
        system=name,
        stage=stage,
        query_count=len(ranked.query_ids),
        entry_count=len(ranked),
        depth_cap=depth,
        dropped_by_depth=ranked.dropped_by_depth,
        external_doc_count=len(ranked.external_doc_ids),
        chunking=of,
    )
    RunData.objects.create(run=run, ranked=ranked.to_bytes())
    return run


def chunk_run_scored(run: Run, version) -> None:
    """Score a run of chunks on `version`, at both levels, as every run of a chunking is."""
    from evaluation.services import evaluation_compute

    evaluation_compute(run=run, version=version)
