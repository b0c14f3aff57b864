"""Golden sets and runs built through the real services, for the tests that need one: a
tiny set (`golden_set`), the sliced set of the coverage and admin tests (`sliced_set`), and
the alerting set of the alert and canary tests (`alerting_set`), each with its runs."""

from datetime import timedelta

from django.utils import timezone

from evaluation.models import Evaluation, Run
from evaluation.services import evaluation_compute, run_import
from goldenset.models import GoldenSet, Membership, default_grade_scale
from goldenset.services import GoldenSetSource, golden_set_create, membership_grant, version_publish
from lib.formats import JsonRecord


def pages(*doc_ids: str, **metadata) -> list[JsonRecord]:
    return [JsonRecord(line=n, id=d, title=f"title {d}", text=_text_of(d), metadata=dict(metadata)) for n, d in enumerate(doc_ids, 1)]


def _text_of(doc_id: str) -> str:
    """'text of d1'; an id with capitals says where they are ("D1", "d1" and "D1" again would
    otherwise be the same text once case is folded: one group of exact duplicates)."""
    if doc_id == doc_id.casefold():
        return f"text of {doc_id}"
    return f"text of {doc_id} (capitals: {''.join('^' if c.isupper() else '.' for c in doc_id)})"


def queries(*query_ids: str, **metadata) -> list[JsonRecord]:
    return [JsonRecord(line=n, id=q, text=f"question {q}", metadata=dict(metadata)) for n, q in enumerate(query_ids, 1)]


def golden_set(slug: str = "tiny", *, manager=None, qrels: dict | None = None, team=None, **options) -> GoldenSet:
    """A set of three queries over five pages, with imported labels `qrels`, in `team` (the
    default team when None)."""
    if qrels is None:
        qrels = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1}
    source = GoldenSetSource(
        pages=options.pop("pages", None) or pages("d1", "d2", "d3", "d4", "d5"),
        queries=options.pop("queries", None) or queries("q1", "q2", "q3"),
        qrels=qrels,
        grade_scale=options.pop("grade_scale", None) or default_grade_scale(),
        **options,
    )
    golden_set_create(slug=slug, name=slug.title(), source=source, team=team)
    golden_set = GoldenSet.objects.get(slug=slug)
    if manager is not None:
        membership_grant(user=manager, golden_set=golden_set, role=Membership.Role.MANAGER)
    return golden_set


def run(golden_set: GoldenSet, name: str, ranking: dict[str, list[str]], *, stage: str = "first_stage"):
    """A run `name` (its own system) that ranks, for each query id, the given doc ids best first."""
    lines = [
        f"{query_id} Q0 {doc_id} {rank} {100 - rank} {name}\n"
        for query_id, doc_ids in ranking.items()
        for rank, doc_id in enumerate(doc_ids, start=1)
    ]
    return run_import(golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=name, stage=stage, name=name)


# --- the sliced set of the coverage tests (and the admin's) -----------------------------


def sliced_set(slug: str = "sliced", *, queries: int = 30, langs: int = 3, doc_types: int = 3, manager=None):
    """`queries` queries over `langs` languages, relevant pages over `doc_types` doc types,
    every third relevant page new; published as v1, with one first-stage run scored on it."""
    now = timezone.now()
    page_records, query_records, qrels = [], [], {}
    for n in range(1, queries + 1):
        new = n % 3 == 0
        published = now - timedelta(days=5 if new else 400)
        page_records.append(
            JsonRecord(
                line=2 * n - 1,
                id=f"d{n}a",
                title=f"page {n}a",
                text=f"text {n}a",
                metadata={"doc_type": f"t{n % doc_types}", "published_at": published.isoformat()},
            )
        )
        page_records.append(
            JsonRecord(
                line=2 * n,
                id=f"d{n}b",
                title=f"page {n}b",
                text=f"text {n}b",
                metadata={"doc_type": f"t{n % doc_types}", "published_at": (now - timedelta(days=400)).isoformat()},
            )
        )
        query_records.append(JsonRecord(line=n, id=f"q{n}", text=f"question {n}", metadata={"lang": f"l{n % langs}"}))
        qrels[(f"q{n}", f"d{n}a")] = 2
        qrels[(f"q{n}", f"d{n}b")] = 0
    made = golden_set(
        slug,
        manager=manager,
        qrels=qrels,
        pages=page_records,
        queries=query_records,
        k_first=10,
        k_final=3,
        query_slice_fields=["lang"],
        page_slice_fields=["doc_type"],
    )
    version = version_publish(golden_set=made, note="first labels")
    run = sliced_run(made, queries)
    evaluation_compute(run=run, version=version)
    return made


def sliced_run(golden_set, queries: int, *, name: str = "bm25 first_stage", system: str = "bm25", stage: str = "first_stage"):
    """Old relevant pages at rank 1, new ones not retrieved (rank 2 and 3: other pages)."""
    lines = []
    for n in range(1, queries + 1):
        docs = [f"d{(n % queries) + 1}b", f"d{n}b"] if n % 3 == 0 else [f"d{n}a", f"d{n}b"]
        lines += [f"q{n} Q0 {doc} {rank} {10 - rank} t\n" for rank, doc in enumerate(docs, 1)]
    return run_import(golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=system, stage=stage, name=name)


# --- the alerting set of the alert and canary tests ---------------------------------------

# The alerting set: 20 queries, q17-q20 German (a query slice), qN's one relevant page dN.
ALERTING_QUERIES = [f"q{n}" for n in range(1, 21)]
GERMAN = ALERTING_QUERIES[16:]


def alerting_set(slug: str = "alerting", *, manager=None):
    """20 queries (q17-q20 German), qN's one relevant page is dN; k_first 3, k_final 1."""
    query_records = queries(*ALERTING_QUERIES[:16], lang="en") + queries(*GERMAN, lang="de")
    page_records = pages(*(f"d{n}" for n in range(1, 21)), "x1", "x2", "x3", "x4")
    qrels = {(query_id, f"d{n}"): 1 for n, query_id in enumerate(ALERTING_QUERIES, 1)}
    return golden_set(
        slug,
        manager=manager,
        qrels=qrels,
        queries=query_records,
        pages=page_records,
        k_first=3,
        k_final=1,
        query_slice_fields=["lang"],
        page_slice_fields=[],
    )


def alerting_run_lines(ranks: dict[str, int] | None = None) -> list[str]:
    """A TREC run answering every query: dN at rank 1, or at ranks[qN], among unjudged x pages."""
    ranks = ranks or {}
    lines = []
    for n, query_id in enumerate(ALERTING_QUERIES, 1):
        docs = ["x1", "x2", "x3", "x4"]
        docs.insert(ranks.get(query_id, 1) - 1, f"d{n}")
        lines += [f"{query_id} Q0 {doc} {rank} {10 - rank} t\n" for rank, doc in enumerate(docs, 1)]
    return lines


def alerting_run(golden_set, name: str, *, system: str = "bm25", stage: str = "first_stage", ranks: dict | None = None) -> Run:
    return run_import(
        golden_set=golden_set, lines=alerting_run_lines(ranks), source_name=f"{name}.run", system=system, stage=stage, name=name
    )


def score(run: Run, version) -> Evaluation:
    return evaluation_compute(run=run, version=version)
