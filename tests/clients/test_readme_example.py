"""The worked example of the API guide, docs/api.md (the block after `<!-- readme-eval-job -->`),
run as it is written against a live server with a real write token: it pulls the pinned
qrels, uploads a run whose scores are TIED where it matters, waits for Goldset's scores and
prints them. Only the pin line is replaced (the set's number and hash are made by the
test). Every printed figure must equal Goldset's stored score exactly, and pytrec_eval's
(trec_eval's tie-breaking); a run ordered by file position on ties would score
differently, so the ties do matter here."""

import re
from pathlib import Path

import pytest
import pytrec_eval

from api.services import api_token_create
from evaluation.models import Run, Score
from goldenset.services import version_publish
from goldset_client import QrelsIntegrityError
from tests.support import factories

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
MARK = "<!-- readme-eval-job:"
PIN = re.compile(r"^SET, VERSION, CONTENT_HASH = .*$", re.M)

# Every query has a relevant page and the run answers every query, so Goldset's rules (a
# query without a relevant page is left out, an unanswered one scores 0) and pytrec_eval's
# (it scores the queries it is given) agree here.
QRELS = {
    ("q1", "d1"): 2,
    ("q1", "d2"): 1,
    ("q1", "d7"): 0,
    ("q2", "d3"): 1,
    ("q2", "d8"): 2,
    ("q3", "d5"): 1,
}
# q1: d9 first, then six pages tied at 1.0. trec_eval ranks ties by doc id descending
# (d7 d6 d4 d3 d2 d1), so both relevant pages, d1 and d2, fall out of the top 5: recall@5
# is 0 where file order (d1 and d2 2nd and 3rd) would give 1. q2: six pages tied.
TIED_RUN = """q1 Q0 d9 1 2.0 bm25
q1 Q0 d1 2 1.0 bm25
q1 Q0 d2 3 1.0 bm25
q1 Q0 d3 4 1.0 bm25
q1 Q0 d4 5 1.0 bm25
q1 Q0 d6 6 1.0 bm25
q1 Q0 d7 7 1.0 bm25
q2 Q0 d3 1 0.5 bm25
q2 Q0 d8 2 0.5 bm25
q2 Q0 d4 3 0.5 bm25
q2 Q0 d6 4 0.5 bm25
q2 Q0 d1 5 0.5 bm25
q2 Q0 d2 6 0.5 bm25
q3 Q0 d5 1 3.0 bm25
"""
# Goldset's metric names -> pytrec_eval's measure (the result key is the measure with _ for .)
TREC_EVAL = [
    (r"recall@(\d+)", "recall.{}"),
    (r"precision@(\d+)", "P.{}"),
    (r"ndcg@(\d+)", "ndcg_cut.{}"),
    (r"hit_rate@(\d+)", "success.{}"),
    (r"mrr", "recip_rank"),
]


def readme_block() -> str:
    """The python block right after the guide's marker comment."""
    text = GUIDE.read_text(encoding="utf-8")
    assert text.count(MARK) == 1, "the guide marks exactly one eval-job block"
    return re.search(r"```python\n(.*?)```", text.split(MARK, 1)[1], re.S).group(1)


def trec_eval_measure(metric: str) -> str | None:
    for pattern, measure in TREC_EVAL:
        if found := re.fullmatch(pattern, metric):
            return measure.format(*found.groups())
    return None


def pytrec_eval_means(qrels: dict, run: dict, metrics: list[str]) -> dict[str, float]:
    measures = {m: trec_eval_measure(m) for m in metrics if trec_eval_measure(m)}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(measures.values())).evaluate(run)
    return {m: sum(q[measure.replace(".", "_")] for q in per_query.values()) / len(per_query) for m, measure in measures.items()}


def recall_in_file_order(qrels: dict, k: int) -> float:
    """recall@k ranking ties by their order in the file (as a naive sort keeps them)."""
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in TIED_RUN.splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        ranked.setdefault(query_id, []).append((float(score), doc_id))
    recalls = []
    for query_id, docs in ranked.items():
        top = [doc for _, doc in sorted(docs, key=lambda pair: -pair[0])][:k]
        relevant = {doc for doc, grade in qrels[query_id].items() if grade >= 1}
        recalls.append(len(relevant & set(top)) / len(relevant))
    return sum(recalls) / len(recalls)


@pytest.fixture
def wiki_demo(make_user):
    manager = make_user("manager")
    pages = factories.pages(*(f"d{n}" for n in range(1, 10)))
    golden_set = factories.golden_set("wiki-demo", manager=manager, qrels=QRELS, pages=pages)  # the set the example names
    version = version_publish(golden_set=golden_set, user=manager, note="v1")
    return golden_set, version, api_token_create(owner=manager, scope="write", golden_set=golden_set)[1]


def test_the_readme_eval_job_prints_goldsets_figures_exactly_on_a_tied_run(wiki_demo, live_server, tmp_path, monkeypatch, capsys):
    golden_set, version, secret = wiki_demo
    (tmp_path / "bm25.run").write_text(TIED_RUN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GOLDSET_URL", live_server.url)
    monkeypatch.setenv("GOLDSET_TOKEN", secret)
    monkeypatch.setenv("GOLDSET_CACHE_DIR", str(tmp_path / "cache"))
    pin = f'SET, VERSION, CONTENT_HASH = "wiki-demo", {version.number}, "{version.content_hash}"'
    block, replaced = PIN.subn(pin, readme_block())
    assert replaced == 1, "the example pins its version on one line"

    exec(compile(block, "docs/api.md", "exec"), {"__name__": "readme_example"})

    first, *figures = capsys.readouterr().out.splitlines()
    assert first == "version 1: 3 queries judged"
    printed = {metric: float(value) for metric, value in (line.split(" ") for line in figures)}
    run = Run.objects.get(golden_set=golden_set)
    stored = dict(Score.objects.filter(evaluation__run=run, evaluation__version=version, slice="").values_list("metric", "value"))
    assert printed == stored and "recall@5" in printed  # exactly: floats print as their shortest exact repr

    qrels = {}
    for (query_id, doc_id), grade in QRELS.items():
        qrels.setdefault(query_id, {})[doc_id] = grade
    as_trec_eval = pytrec_eval_means(qrels, trec_run(), list(printed))
    assert {"recall@5", "ndcg@10", "mrr"} <= set(as_trec_eval)
    assert {m: printed[m] for m in as_trec_eval} == pytest.approx(as_trec_eval, abs=1e-12)
    assert recall_in_file_order(qrels, 5) != pytest.approx(printed["recall@5"])  # the ties change the figure


def trec_run() -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in TIED_RUN.splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        run.setdefault(query_id, {})[doc_id] = float(score)
    return run


def test_the_readme_eval_job_stops_when_the_pinned_hash_is_not_the_versions(wiki_demo, live_server, tmp_path, monkeypatch):
    golden_set, version, secret = wiki_demo
    (tmp_path / "bm25.run").write_text(TIED_RUN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GOLDSET_URL", live_server.url)
    monkeypatch.setenv("GOLDSET_TOKEN", secret)
    monkeypatch.setenv("GOLDSET_CACHE_DIR", str(tmp_path / "cache"))
    block = PIN.sub('SET, VERSION, CONTENT_HASH = "wiki-demo", 1, "not-the-hash"', readme_block())
    with pytest.raises(QrelsIntegrityError):
        exec(compile(block, "docs/api.md", "exec"), {"__name__": "readme_example"})
    assert not Run.objects.filter(golden_set=golden_set).exists()  # nothing uploaded against the wrong labels
