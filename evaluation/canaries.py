"""Canary pages: pages a golden set's query must find in every run's top k_first.

A canary is a (query, page) pair a manager marks, typically the newest runbooks: an
average over thousands of queries hides a page nobody can find, a canary does not. Each
evaluation (evaluation_compute) stores where its run ranked every canary of its set whose
query is in the version (Evaluation.canary_ranks); evaluation.alerts.rules raises one
CANARY_MISSED alert per (run, version) with a miss, and the coverage page
(labeling.coverage) shows each run's result, both from those stored ranks.

The rank is the page's 1-based rank in the run's list for the canary's query, in
trec_eval's order (lib.runs); "found" means rank <= k_first of the version.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from evaluation.models import Canary, Evaluation, Run, RunData
from evaluation.selectors import run_ranked
from goldenset.models import GoldenSet, Page, Query, Version, VersionQuery
from lib.errors import GoldsetError
from lib.runs import RankedRun


def canary_check_input(*, golden_set: GoldenSet, query: Query | None, page: Page | None) -> None:
    """GoldsetError (naming the field) unless `query` is a query of `golden_set` and `page` a
    page of its corpus. The admin's form and canary_add both call it: one rule."""
    if query is None:
        raise GoldsetError("a canary needs a query", field="query")
    if page is None:
        raise GoldsetError("a canary needs a page", field="page")
    if query.golden_set_id != golden_set.pk:
        raise GoldsetError(f"query {query.query_id!r} is not a query of golden set {golden_set.slug!r}", field="query")
    if page.corpus_id != golden_set.corpus_id:
        raise GoldsetError(f"page {page.doc_id!r} is not in the corpus of golden set {golden_set.slug!r}", field="page")


def canary_add(
    *,
    golden_set: GoldenSet,
    query: Query,
    page: Page,
    note: str = "",
    user: AbstractBaseUser | None = None,
) -> Canary:
    """Mark `page` as a canary of `query` in `golden_set`; GoldsetError for a query of another
    set, a page of another corpus, or a pair that is a canary already.

    Applies from the next evaluation on (a publish re-scores every run); the coverage
    page checks the stored runs at once.
    """
    canary_check_input(golden_set=golden_set, query=query, page=page)
    try:
        with transaction.atomic():
            return Canary.objects.create(golden_set=golden_set, query=query, page=page, note=(note or "").strip())
    except IntegrityError:
        raise GoldsetError(f"page {page.doc_id!r} is a canary of query {query.query_id!r} already", field="page") from None


@dataclass(frozen=True)
class CanaryResult:
    """One canary in one run: its rank (None when the run did not rank the page), and
    whether that is within `k` (the version's k_first)."""

    canary: Canary
    rank: int | None
    k: int

    @property
    def found(self) -> bool:
        return self.rank is not None and self.rank <= self.k


def canaries_in_version(version: Version) -> list[Canary]:
    """The set's canaries whose query is in `version` (a retired query has nothing to find),
    with query and page, in the order they were added."""
    in_version = VersionQuery.objects.filter(version=version).values("query_id")
    return list(
        Canary.objects.filter(golden_set_id=version.golden_set_id, query_id__in=in_version).select_related("query", "page").order_by("id")
    )


def canary_ranks(canaries: Sequence[Canary], ranked: RankedRun, *, k: int) -> list[CanaryResult]:
    """Where `ranked` put each canary's page for the canary's query (pure: no query)."""
    results = []
    for canary in canaries:
        rows = ranked.rows(canary.query.query_id)
        hits = (ranked.doc_keys[rows] == canary.page_id).nonzero()[0]
        results.append(CanaryResult(canary=canary, rank=int(hits[0]) + 1 if len(hits) else None, k=k))
    return results


def canary_ranks_stored(canaries: Sequence[Canary], ranked: RankedRun, *, k: int) -> dict[str, int | None]:
    """What evaluation_compute stores in Evaluation.canary_ranks: {canary id: rank or None}."""
    return {str(result.canary.pk): result.rank for result in canary_ranks(canaries, ranked, k=k)}


def _from_stored(canaries: Sequence[Canary], stored: dict | None, k: int) -> list[CanaryResult] | None:
    """The results an evaluation stored, or None when it lacks one of `canaries` (added after it was scored)."""
    if stored is None or any(str(canary.pk) not in stored for canary in canaries):
        return None
    return [CanaryResult(canary=canary, rank=stored[str(canary.pk)], k=k) for canary in canaries]


def canary_checks(*, version: Version, runs: Iterable[Run], canaries: Sequence[Canary] | None = None) -> dict[int, list[CanaryResult]]:
    """run id -> its CanaryResult for each canary of the version, at the version's k_first.

    Empty when the set has no canary in the version, without reading any run. Otherwise
    the ranks each run's evaluation on the version stored (one query); only a run that was
    not scored on the version, or was scored before a canary was added, has its entries
    read (one more query, one run decoded at a time).
    """
    if canaries is None:
        canaries = canaries_in_version(version)
    run_ids = [run.pk for run in runs]
    if not canaries or not run_ids:
        return {}
    k = version.k_first
    stored = dict(
        Evaluation.objects.filter(version=version, run_id__in=run_ids, status=Evaluation.Status.DONE).values_list("run_id", "canary_ranks")
    )
    found: dict[int, list[CanaryResult]] = {}
    for run_id in run_ids:
        results = _from_stored(canaries, stored.get(run_id), k)
        if results is not None:
            found[run_id] = results
    missing = [run_id for run_id in run_ids if run_id not in found]
    if missing:
        rows = RunData.objects.filter(run_id__in=missing).values_list("run_id", "ranked")
        for run_id, data in rows.iterator(chunk_size=2):
            found[run_id] = canary_ranks(canaries, RankedRun.from_bytes(bytes(data)), k=k)
    return found


def evaluation_canary_results(evaluation: Evaluation, ranked_run: RankedRun | None = None) -> list[CanaryResult]:
    """The canaries of the evaluation's version checked against its run: the stored ranks
    when they cover every canary, else from the run's entries (`ranked_run`, or read)."""
    version = evaluation.version
    canaries = canaries_in_version(version)
    if not canaries:
        return []
    results = _from_stored(canaries, evaluation.canary_ranks, version.k_first)
    if results is None:
        results = canary_ranks(canaries, ranked_run or run_ranked(evaluation.run), k=version.k_first)
    return results
