"""Hop figures of a run on a version whose labels carry hops (SEMANTICS.md, "Hops").

A multi-hop query's relevant documents are grouped into hops (VersionLabel.hop, the deciding
judgment's): the answer needs a document of every hop. Beside the single-hop figures,
for each k (the version's k_final and k_first):

- per-hop recall@k: per query, the mean over its hops of the share of the hop's relevant
  documents in the top k; averaged over the queries with hops;
- all-hops@k: per query, 1 when every hop has a relevant document in the top k, else 0;
  averaged over the queries with hops;
- queries with a missing hop at k: those whose all-hops@k is 0.

A hop counts only its relevant documents (grade at or above the version's threshold); a
hop with none is no hop. Queries without hops are left out of the three figures and
counted beside them (`without_hops`). A run's members of one duplicate group count once,
as their group's first (VersionDuplicate), as in the single-hop figures. Per slice as the
scores are: a query slice keeps its queries, a page slice keeps the hops' documents of
its pages (a query whose hops have none there is left out of it).

Fractions are in [0, 1]. Stored whole on Evaluation.hop_figures (None for a version
without hops), read by the run page.
"""

from collections import defaultdict

import numpy as np

from evaluation import scoring_inputs
from goldenset.models import Version, VersionDuplicate, VersionLabel
from lib.runs import RankedRun


def hop_figures(version: Version, ranked: RankedRun, ks: list[int]) -> dict | None:
    """{"ks": ks, "slices": {slice name ("" for all queries): figures}}, the figures being
    {"queries": with hops, "without_hops": n (None for a page slice), "at": [{"k": k,
    "per_hop_recall": mean, "all_hops": mean, "missing_hop": count}, one per k]}; None when
    no label of the version has a relevant hop. Two queries, plus the version's slices."""
    if not version.hop_count:
        return None
    hops: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for query_id, page, hop in (
        VersionLabel.objects.filter(version=version, grade__gte=version.relevance_threshold)
        .exclude(hop="")
        .values_list("query__query_id", "page_id", "hop")
    ):
        hops[query_id][hop].add(page)
    if not hops:
        return None
    ks = sorted(set(ks))
    groups = dict(VersionDuplicate.objects.filter(version=version).values_list("page_id", "group_page_id"))
    tops = {query_id: _top(ranked, query_id, max(ks), groups) for query_id in hops}
    _, slices = scoring_inputs.get_or_build(version)
    all_queries = version.query_count
    figures = {"": _figures(hops, tops, ks, all_queries)}
    for name, query_ids in slices.query.items():
        kept = {query_id: hops[query_id] for query_id in hops if query_id in query_ids}
        figures[name] = _figures(kept, tops, ks, len(query_ids))
    for name, page_keys in slices.page.items():
        pages = set(page_keys.tolist())
        kept = {}
        for query_id, query_hops in hops.items():
            inside = {hop: docs & pages for hop, docs in query_hops.items() if docs & pages}
            if inside:
                kept[query_id] = inside
        figures[name] = _figures(kept, tops, ks, None)
    return {"ks": ks, "slices": figures}


def _top(ranked: RankedRun, query_id: str, depth: int, groups: dict[int, int]) -> list[int]:
    """The query's first `depth` distinct documents (members as their group's first)."""
    docs = ranked.doc_keys[ranked.rows(query_id)].tolist()
    seen: list[int] = []
    for doc in docs:
        doc = groups.get(doc, doc)
        if doc not in seen:
            seen.append(doc)
            if len(seen) == depth:
                break
    return seen


def _figures(hops: dict[str, dict[str, set[int]]], tops: dict[str, list[int]], ks: list[int], queries: int | None) -> dict:
    count = len(hops)
    at = []
    for k in ks:
        recalls, complete = [], []
        for query_id, query_hops in hops.items():
            top = set(tops[query_id][:k])
            found = [len(docs & top) / len(docs) for docs in query_hops.values()]
            recalls.append(float(np.mean(found)))
            complete.append(all(share > 0 for share in found))
        at.append(
            {
                "k": k,
                "per_hop_recall": float(np.mean(recalls)) if count else None,
                "all_hops": sum(complete) / count if count else None,
                "missing_hop": count - sum(complete),
            }
        )
    return {"queries": count, "without_hops": None if queries is None else queries - count, "at": at}
