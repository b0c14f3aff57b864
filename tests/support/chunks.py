"""Chunkings and runs of chunks for the tests: Chunk rows of a chunking, and a run of it
uploaded through run_import with its chunking (its entries then Chunk primary keys)."""

from evaluation.models import Run
from evaluation.services import run_import
from goldenset.models import Chunk, Chunking, GoldenSet, Page


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
    """A run `name` of chunking `of` that ranks, for each query id, the chunk ids given, best
    first, uploaded as any run of a chunking is (run_import with its chunking)."""
    lines = [
        f"{query_id} Q0 {chunk_id} {rank + 1} {100 - rank} tag\n" for query_id, ids in ranking.items() for rank, chunk_id in enumerate(ids)
    ]
    return run_import(golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=name, stage=stage, name=name, chunking=of.name)


def chunk_run_scored(run: Run, version) -> None:
    """Score a run of chunks on `version`, at both levels, as every run of a chunking is."""
    from evaluation.services import evaluation_compute

    evaluation_compute(run=run, version=version)
