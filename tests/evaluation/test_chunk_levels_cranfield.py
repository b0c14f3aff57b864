"""A real re-chunking of the public Cranfield data, scored at both levels, equals trec_eval.

The test makes its chunkings and its runs itself, from ../shared/data/cranfield: the
documents cut two ways (`whole`: one chunk a document; `sentences`: about three chunks a
document, cut at sentence boundaries), and a BM25 run of each chunking (bm25s over the
chunks' text). Both runs go in through `import_run --chunking`, are scored on one version
by `evaluate --format json`, and each level is compared at 4 decimals with trec_eval's
own numbers (pytrec_eval):

- document level: trec_eval run on the chunk run mapped to documents (each document at
  its best chunk's score, later chunks dropped), against the document qrels;
- chunk level: trec_eval run on the chunk run itself, against the qrels projected onto the
  chunking, which are also what `export_qrels --chunking` writes.
"""

import io
import json
import re
from collections import defaultdict

import numpy as np
import pytest
from django.core.management import call_command

from goldenset.models import Chunk, Chunking, GoldenSet, Page
from goldenset.services import golden_set_import_beir, version_publish
from lib.errors import ProblemCollector
from lib.formats import read_trec_qrels

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db(transaction=False)]

MEASURES = {"recall@100": "recall_100", "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank"}
DEPTH = {"whole": 100, "sentences": 300}


def sentence_cuts(text: str, parts: int = 3) -> list[tuple[int, int]]:
    """[start, end) of about `parts` chunks covering `text`, each cut after a sentence's " . "."""
    ends = [m.end() for m in re.finditer(r" \. ", text)] + [len(text)]
    ends = sorted({end for end in ends if 0 < end <= len(text)})
    groups = [group for group in np.array_split(np.asarray(ends), min(parts, len(ends))) if len(group)]
    cuts, start = [], 0
    for group in groups:
        end = int(group[-1])
        if end > start:
            cuts.append((start, end))
            start = end
    return cuts


def make_chunkings(golden_set: GoldenSet) -> dict[str, dict[str, tuple[str, str]]]:
    """The two chunkings as Chunk rows; {chunking: {chunk_id: (doc_id, text)}}."""
    made: dict[str, dict[str, tuple[str, str]]] = {}
    pages = list(Page.objects.filter(corpus=golden_set.corpus).order_by("id"))
    for name in ("whole", "sentences"):
        chunking = Chunking.objects.create(corpus=golden_set.corpus, name=name)
        rows, texts = [], {}
        for page in pages:
            if not page.text:
                continue  # Cranfield's two empty abstracts have nothing to cut
            cuts = [(0, len(page.text))] if name == "whole" else sentence_cuts(page.text)
            for i, (start, end) in enumerate(cuts):
                chunk_id = f"{page.doc_id}#{i}"
                rows.append(Chunk(chunking=chunking, chunk_id=chunk_id, page=page, start=start, end=end))
                texts[chunk_id] = (page.doc_id, page.text[start:end])
        Chunk.objects.bulk_create(rows, batch_size=2000)
        Chunking.objects.filter(pk=chunking.pk).update(chunk_count=len(rows), document_count=len({r.page_id for r in rows}))
        made[name] = texts
    return made


def bm25_run(chunks: dict[str, tuple[str, str]], queries: dict[str, str], depth: int) -> dict[str, dict[str, str]]:
    """{query_id: {chunk_id: score as written}}: bm25s over the chunks' text."""
    import bm25s

    ids = list(chunks)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([chunks[i][1] for i in ids], stopwords="en", show_progress=False), show_progress=False)
    query_ids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in query_ids], stopwords="en", show_progress=False)
    found, scores = retriever.retrieve(tokens, k=depth, show_progress=False, n_threads=1)
    return {q: {ids[d]: f"{s:.4f}" for d, s in zip(found[i].tolist(), scores[i].tolist())} for i, q in enumerate(query_ids)}


def trec_eval_means(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, str]:
    """trec_eval's per-query values (pytrec_eval), averaged over the queries with a relevant
    document, as Goldset averages (here every query the qrels hold has one and is answered)."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    per_query = evaluator.evaluate(run)
    counted = [q for q, labels in qrels.items() if any(g >= 1 for g in labels.values())]
    assert set(counted) <= set(per_query)
    return {ours: f"{np.mean([per_query[q][theirs] for q in counted]):.4f}" for ours, theirs in MEASURES.items()}


def test_both_levels_of_a_real_rechunking_equal_trec_eval(shared_data, tmp_path, django_capture_on_commit_callbacks):
    folder = shared_data / "cranfield"
    golden_set_import_beir(directory=folder, slug="cranfield")
    golden_set = GoldenSet.objects.get(slug="cranfield")
    from evaluation.models import EvaluationSettings

    EvaluationSettings.objects.create(golden_set=golden_set, metrics=list(MEASURES))
    version = version_publish(golden_set=golden_set)
    problems = ProblemCollector()
    doc_qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for label in read_trec_qrels((folder / "runs" / "qrels_original_grades.trec").open(encoding="utf-8"), "qrels", problems):
        doc_qrels[label.query_id][label.doc_id] = label.grade
    assert not problems.problems and len(doc_qrels) == 225
    queries = {row["_id"]: row["text"] for row in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))}

    chunkings = make_chunkings(golden_set)
    assert 2.5 < len(chunkings["sentences"]) / len(chunkings["whole"]) < 3.1  # about three chunks a document
    expected: dict[tuple[str, str], dict[str, str]] = {}
    for name, chunks in chunkings.items():
        run = bm25_run(chunks, queries, DEPTH[name])
        path = tmp_path / f"{name}.run"
        path.write_text(
            "".join(f"{q} Q0 {c} {r} {s} bm25\n" for q, ranking in run.items() for r, (c, s) in enumerate(ranking.items(), 1)),
            encoding="utf-8",
        )
        with django_capture_on_commit_callbacks(execute=True):
            call_command(
                "import_run", str(path), golden_set="cranfield", system=f"bm25-{name}", stage="first_stage", name=name, chunking=name
            )
        scores = {q: {c: float(s) for c, s in ranking.items()} for q, ranking in run.items()}
        # Document level: the run trec_eval reads once each chunk is its document and a
        # document's later chunks are dropped (its best chunk's score is its first's).
        mapped: dict[str, dict[str, float]] = {}
        for q, ranking in scores.items():
            documents = mapped.setdefault(q, {})
            for chunk_id, score in ranking.items():
                doc_id = chunks[chunk_id][0]
                documents[doc_id] = max(score, documents.get(doc_id, score))
        expected[(name, "document")] = trec_eval_means(dict(doc_qrels), mapped)
        # Chunk level: no spans in these qrels, so each chunk carries its document's grade.
        chunk_qrels: dict[str, dict[str, int]] = defaultdict(dict)
        for chunk_id, (doc_id, _) in chunks.items():
            for q, labels in doc_qrels.items():
                if doc_id in labels:
                    chunk_qrels[q][chunk_id] = labels[doc_id]
        expected[(name, "chunk")] = trec_eval_means(dict(chunk_qrels), scores)
        exported = tmp_path / f"{name}.qrels"
        call_command("export_qrels", "cranfield", chunking=name, output=str(exported), stderr=io.StringIO())
        written: dict[str, dict[str, int]] = defaultdict(dict)
        for line in exported.read_text(encoding="utf-8").splitlines():
            q, _, chunk_id, grade = line.split()
            written[q][chunk_id] = int(grade)
        assert written == chunk_qrels

    out = io.StringIO()
    call_command("evaluate", "cranfield", "--format", "json", stdout=out)
    rows = [row for row in json.loads(out.getvalue()) if row["slice"] is None]
    found = {(row["chunking"], row["level"]): {m: f"{row['metrics'][m]:.4f}" for m in MEASURES} for row in rows}
    assert found == expected
    assert {(row["chunking"], row["level"]): row["queries"] for row in rows} == dict.fromkeys(expected, 225)
    chunk_rows = [row for row in rows if row["level"] == "chunk"]
    assert all(0 < row["metrics"][f"evidence_recall@{version.k_first}"] <= 1 for row in chunk_rows)
    assert all(row["prompt_tokens"]["value"] > 0 for row in chunk_rows)
