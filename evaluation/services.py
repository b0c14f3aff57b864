"""Writes of the evaluation floor: uploading runs, scheduling and computing evaluations."""

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import BinaryIO

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from evaluation import chunk_inputs, chunk_scoring, completeness, engine, pooled_labels, scoring_inputs
from evaluation.alerts.rules import alerts_check
from evaluation.canaries import canaries_in_version, canary_ranks_stored
from evaluation.hops import hop_figures
from evaluation.models import (
    Completeness,
    Evaluation,
    Run,
    RunData,
    RunQueryFailure,
    Score,
    Series,
)
from evaluation.selectors import PerQuery, SliceQueries, evaluation_settings, metrics_for, run_ranked
from evaluation.signals import run_uploaded
from goldenset.audit import audit_record, changed_fields
from goldenset.models import Chunking, GoldenSet, Page, Query, Version, VersionQuery
from lib.background_jobs import NO_HOLDER, Holder
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.progress import Progress, no_progress
from lib.run_formats import ExpansionLimit, read_run
from lib.runs import (
    RankedRun,
    RunEntries,
    rank_run,
    read_trec_run,
    run_entries_from_rankings,
)

logger = logging.getLogger(__name__)


def series_for(*, golden_set: GoldenSet, name: str) -> Series:
    """The set's series named `name`, made on first use (an upload or an endpoint names it)."""
    name = (name or "").strip()
    if not name:
        raise GoldsetError("a series needs a name", field="series")
    if len(name) > 200:
        raise GoldsetError("a series name has at most 200 characters", field="series")
    series, _ = Series.objects.get_or_create(golden_set=golden_set, name=name)
    return series


def run_fields_check(*, golden_set: GoldenSet, system: str, stage: str, name: str | None) -> tuple[str, str]:
    system = (system or "").strip()
    if not system:
        raise GoldsetError("a run needs the name of its system", field="system")
    if stage not in Run.Stage.values:
        raise GoldsetError(f"unknown stage {stage!r}; choose one of {', '.join(Run.Stage.values)}", field="stage")
    name = (name or "").strip() or f"{system} {stage}"
    if Run.objects.filter(golden_set=golden_set, name=name).exists():
        raise ConflictError(f"golden set {golden_set.slug!r} already has a run named {name!r}", field="name")
    return system, name


def _run_store(
    *,
    golden_set: GoldenSet,
    entries: RunEntries,
    source_name: str,
    system: str,
    stage: str,
    name: str,
    user: AbstractBaseUser | None,
    series: Series | None,
    measured_at: datetime | None,
    failures: Sequence[tuple[str, str, int | None]] = (),
    index_size: int | None = None,
    coverage: tuple[int, int, bool] | None = None,
    version_asked: Version | None = None,
    chunking: Chunking | None = None,
    doc_keys: dict[str, int] | None = None,
) -> Run:
    """Rank `entries` as trec_eval does and store the run, its entries and its failures in
    one transaction; run_uploaded on commit schedules its evaluation. A run of `chunking`
    comes with `doc_keys`, the Chunk key of each of its ids (chunk_inputs.chunk_run_keys)."""
    if series is not None and measured_at is None:
        raise GoldsetError("a run of a series needs the time it measures (measured_at)", field="measured_at")
    if doc_keys is None:
        doc_keys = dict(Page.objects.filter(corpus_id=golden_set.corpus_id).values_list("doc_id", "id"))
    depth = evaluation_settings(golden_set).run_depth_cap
    ranked = rank_run(entries, doc_keys=doc_keys, depth=depth)
    with transaction.atomic():
        run = Run.objects.create(
            golden_set=golden_set,
            name=name,
            system=system,
            stage=stage,
            source_name=source_name[:300],
            uploaded_by=user,
            query_count=len(ranked.query_ids),
            entry_count=len(ranked),
            depth_cap=depth,
            dropped_by_depth=ranked.dropped_by_depth,
            external_doc_count=len(ranked.external_doc_ids),
            extra_column_lines=entries.extra_column_lines,
            series=series,
            measured_at=measured_at,
            failed_query_count=len(failures),
            index_size=index_size,
            version_asked=version_asked,
            chunking=chunking,
            **(dict(zip(("expected_query_count", "answered_query_count", "partial"), coverage)) if coverage else {}),
        )
        RunData.objects.create(run=run, ranked=ranked.to_bytes())
        RunQueryFailure.objects.bulk_create(
            RunQueryFailure(run=run, query_id=query_id, error=error[:2000], status=status) for query_id, error, status in failures
        )
        run_uploaded.send(sender=Run, run_id=run.id)
    return run


def run_import(
    *,
    golden_set: GoldenSet,
    source_name: str,
    system: str,
    stage: str,
    lines: Iterable[str] | None = None,
    data: BinaryIO | Iterable[bytes] | None = None,
    fmt: str = "auto",
    name: str | None = None,
    user: AbstractBaseUser | None = None,
    progress: Progress = no_progress,
    series: str = "",
    measured_at: datetime | None = None,
    chunking: str = "",
) -> Run:
    """Store a run of `system` at `stage`, all or nothing, and evaluate it on commit.

    The run is either `data`, the file's bytes (a stream or chunks: an upload, a file,
    standard input) in any form lib.run_formats reads, named by `fmt` or found from its
    content ("auto"), or `lines`, the text lines of a TREC run already in hand.

    Refuses (GoldsetError, every problem naming its line) wrong column counts, scores that
    are not finite numbers, a doc twice for one query and query ids the set does not have.
    Doc ids outside the corpus are kept and count as unjudged. Entries are ranked as
    trec_eval ranks them and capped at the set's depth. With `series`, the run joins that
    series (made on first use) as the night `measured_at` (default: now). With `chunking`,
    the name of one of the corpus's chunkings, the run's ids are that chunking's chunk ids
    (an id that is not one is refused, naming its line); "" or "documents": doc ids.
    """
    system, name = run_fields_check(golden_set=golden_set, system=system, stage=stage, name=name)
    of_chunking = chunk_inputs.chunking_named(golden_set.corpus_id, chunking)
    problems = ProblemCollector()
    known_queries = set(Query.objects.filter(golden_set=golden_set).values_list("query_id", flat=True))
    if data is not None:
        limit = ExpansionLimit(ratio=settings.RUN_MAX_EXPANSION_RATIO, ceiling_bytes=settings.RUN_MAX_EXPANDED_MB << 20)
        entries = read_run(data, source_name, problems, fmt=fmt, known_query_ids=known_queries, progress=progress, limit=limit)
    elif lines is not None:
        entries = read_trec_run(progress(lines, f"reading {source_name}"), source_name, problems, known_query_ids=known_queries)
    else:
        raise TypeError("run_import needs the run's data (bytes) or its lines (text)")
    chunk_keys = chunk_inputs.chunk_run_keys(of_chunking, entries, problems) if of_chunking is not None and not problems else None
    problems.raise_if_any(f"cannot import run {source_name}: {len(problems.problems)} problem(s); nothing was stored")
    in_series = series_for(golden_set=golden_set, name=series) if (series or "").strip() else None
    if in_series is not None and measured_at is None:
        measured_at = timezone.now()
    return _run_store(
        golden_set=golden_set,
        entries=entries,
        source_name=source_name,
        system=system,
        stage=stage,
        name=name,
        user=user,
        series=in_series,
        measured_at=measured_at if in_series is not None else None,
        coverage=_run_coverage(golden_set, entries.query_ids, in_series=in_series is not None),
        chunking=of_chunking,
        doc_keys=chunk_keys,
    )


def _run_coverage(golden_set: GoldenSet, query_ids: Iterable[str], *, in_series: bool) -> tuple[int, int, bool]:
    """(the set's queries, how many of them the run answers, partial) for an upload.

    The set's queries are those of its latest version, which is what the run is scored
    against first (a query it leaves out scores 0 there), or the live queries when nothing
    is published yet. A run of a series is never partial: an endpoint's night asks every
    query of the version and records each one that failed, which raises "endpoint failing"
    (EvaluationSettings.failing_share), and an eval job's nights are compared among
    themselves, so a second, upload-time judgement would only hide the same nights twice.
    """
    latest = golden_set.versions.order_by("-number").first()
    if latest is not None:
        expected = set(VersionQuery.objects.filter(version=latest).values_list("query__query_id", flat=True))
    else:
        expected = set(Query.objects.filter(golden_set=golden_set).values_list("query_id", flat=True))
    answered = len(expected.intersection(query_ids))
    share = answered / len(expected) if expected else 1.0
    partial = not in_series and share < evaluation_settings(golden_set).partial_share
    return len(expected), answered, partial


def run_from_rankings(
    *,
    golden_set: GoldenSet,
    rankings: Iterable[tuple[str, Iterable[tuple[str, float]]]],
    source_name: str,
    system: str,
    stage: str,
    name: str,
    series: Series,
    measured_at: datetime,
    failures: Sequence[tuple[str, str, int | None]] = (),
    index_size: int | None = None,
) -> Run:
    """Store the rankings an endpoint answered (query id, [(doc id, score), ...]) as a run of
    `series`, with the queries that failed as (query id, error, HTTP status or None).

    The same checks and order as run_import, so the run scores exactly as the same rankings
    uploaded as a TREC file would; a ranking with a bad id or score refuses the whole run
    (GoldsetError naming the query and hit), as a bad line refuses a file.
    """
    problems = ProblemCollector()
    entries = run_entries_from_rankings(rankings, source_name, problems)
    return run_from_entries(
        golden_set=golden_set,
        entries=entries,
        problems=problems,
        source_name=source_name,
        system=system,
        stage=stage,
        name=name,
        series=series,
        measured_at=measured_at,
        failures=failures,
        index_size=index_size,
    )


def run_from_entries(
    *,
    golden_set: GoldenSet,
    entries: RunEntries,
    problems: ProblemCollector,
    source_name: str,
    system: str,
    stage: str,
    name: str,
    series: Series,
    measured_at: datetime,
    failures: Sequence[tuple[str, str, int | None]] = (),
    index_size: int | None = None,
    version_asked: Version | None = None,
    chunking: Chunking | None = None,
) -> Run:
    """run_from_rankings for entries already built (lib.runs.RunEntriesBuilder, as a nightly
    run builds them while the answers come in), with the problems found building them.
    `version_asked`, the version whose queries were asked, is the first the run is scored on
    (Run.version_asked). With `chunking` (an endpoint's), its ids must be chunks of it."""
    system, name = run_fields_check(golden_set=golden_set, system=system, stage=stage, name=name)
    chunk_keys = chunk_inputs.chunk_run_keys(chunking, entries, problems) if chunking is not None and not problems else None
    problems.raise_if_any(f"cannot store run {name}: {len(problems.problems)} problem(s); nothing was stored")
    return _run_store(
        chunking=chunking,
        doc_keys=chunk_keys,
        golden_set=golden_set,
        entries=entries,
        source_name=source_name,
        system=system,
        stage=stage,
        name=name,
        user=None,
        series=series,
        measured_at=measured_at,
        failures=failures,
        index_size=index_size,
        version_asked=version_asked,
    )


def series_runs_past_rescoring(*, golden_set_id: int | None = None) -> set[int]:
    """Ids of series runs a new version does not re-score: all but the latest
    `series_rescore_nights` of each series (by measured_at), and nights whose entries
    retention dropped. They keep the scores of the versions they were scored on."""
    nights: dict[int, int] = {}
    kept: dict[int, int] = {}
    past: set[int] = set()
    runs = Run.objects.filter(series__isnull=False)
    if golden_set_id is not None:
        runs = runs.filter(golden_set_id=golden_set_id)
    rows = runs.order_by("series_id", "-measured_at", "-id").values_list("id", "series_id", "golden_set_id", "entries_dropped_at")
    for run_id, series_id, set_id, dropped in rows:
        if set_id not in nights:
            nights[set_id] = evaluation_settings(GoldenSet(pk=set_id)).series_rescore_nights
        kept[series_id] = kept.get(series_id, 0) + 1
        if dropped is not None or kept[series_id] > nights[set_id]:
            past.add(run_id)
    return past


def evaluations_schedule(*, version: Version) -> list[Evaluation]:
    """A pending evaluation of every run of the version's set (existing rows are kept as
    they are), but of each series only its recent nights (series_runs_past_rescoring)."""
    past = series_runs_past_rescoring(golden_set_id=version.golden_set_id)
    evaluations = []
    for run in Run.objects.filter(golden_set_id=version.golden_set_id).exclude(pk__in=past).order_by("id"):
        evaluation, _ = Evaluation.objects.get_or_create(run=run, version=version)
        evaluations.append(evaluation)
    return evaluations


def evaluations_missing_create() -> int:
    """A pending evaluation for every (run, version) pair that publishing and uploading
    schedule and that has no row yet, in every golden set; returns how many were made.

    A publish scores every run of the set against the new version, an upload scores the
    run against the latest version: so a run is scored against every version from the one
    that was latest when it was uploaded on, or from the one it asked (Run.version_asked).
    A pair is missing when the task that should have made it was never sent (a broker
    outage) or was lost, whichever version it is: a version superseded before anyone
    noticed still gets its scores.
    """
    # Each run paired with each version of its set, but not with a version that had been
    # superseded (a later one published) before the run was uploaded.
    # One join to the versions, named once: a second mention of the path would join again.
    pairs = Run.objects.annotate(version_id=F("golden_set__versions__id"), version_number=F("golden_set__versions__number"))
    superseded_before_upload = Version.objects.filter(
        golden_set=OuterRef("golden_set"),
        number__gt=OuterRef("version_number"),
        created_at__lte=OuterRef("created_at"),
    )
    scored = Evaluation.objects.filter(run=OuterRef("pk"), version=OuterRef("version_id"))
    from_upload = Q(version_asked__isnull=True) & ~Exists(superseded_before_upload)
    from_asked = Q(version_asked__isnull=False, version_number__gte=F("version_asked__number"))
    pairs = (
        pairs.filter(version_id__isnull=False).filter(from_upload | from_asked, ~Exists(scored)).order_by().values_list("pk", "version_id")
    )
    past = series_runs_past_rescoring()
    missing = [Evaluation(run_id=run_id, version_id=version_id) for run_id, version_id in pairs if run_id not in past]
    # A publish or upload task making the same row meanwhile wins; this one is skipped.
    Evaluation.objects.bulk_create(missing, ignore_conflicts=True)
    return len(missing)


def evaluation_compute(*, run: Run, version: Version, ranked: RankedRun | None = None, holder: Holder = NO_HOLDER) -> Evaluation:
    """Score `run` against `version`, overall and per slice, with its completeness
    figures (evaluation.completeness), and store the results. `holder` is the worker start
    computing it (lib.background_jobs.Holder, empty in-process), recorded while it runs so that the
    sweeper can tell when that worker is gone.

    Idempotent: the (run, version) row is upserted and its scores and completeness rows
    replaced in one transaction, so a task that is redelivered after a worker died, or
    sent again by the sweeper while the first copy still runs, leaves every figure there
    exactly once. Returns the evaluation, status done.
    """
    if run.golden_set_id != version.golden_set_id:
        raise GoldsetError(f"run {run.name!r} and version {version} belong to different golden sets")
    evaluation, _ = Evaluation.objects.get_or_create(run=run, version=version)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.RUNNING,
        started_at=timezone.now(),
        error="",
        **holder.fields(),
    )

    metrics = metrics_for(version.golden_set, version)
    ranked = ranked or run_ranked(run)
    # A run of a chunking: its chunk level now, then every figure below at document level.
    chunking = run.chunking
    rows, chunk_level = None, None
    if chunking is not None:  # each chunk's row in its chunking's table, looked up once for both levels
        rows = chunk_inputs.chunk_table(chunking).rows(ranked.doc_keys)
        chunk_level = chunk_scoring.chunk_level(ranked=ranked, version=version, chunking=chunking, metrics=metrics, rows=rows)
    ranked = chunk_inputs.document_ranked(ranked=ranked, version=version, chunking=chunking, rows=rows)
    qrels, slices = scoring_inputs.get_or_build(version)
    threshold = version.relevance_threshold
    # The run looked up among the labels once: every score, Judged@k, the pages it pools,
    # the recall curve and a run of documents' evidence below are read from it.
    match = engine.match_run(qrels, ranked)
    if chunking is None and Chunking.objects.filter(corpus_id=version.golden_set.corpus_id).exists():
        # A run of documents in a corpus with chunkings: its evidence recall and prompt
        # tokens, each document one chunk, so that it compares with the chunkings' runs.
        chunk_level = chunk_scoring.documents_level(ranked=ranked, version=version, match=match)
    overall = engine.evaluate_run(qrels, ranked, metrics, relevance_threshold=threshold, match=match)
    results = {"": overall}
    for name, query_ids in slices.query.items():
        results[name] = engine.restrict_to_queries(overall, query_ids)
    for name, page_keys in slices.page.items():
        results[name] = engine.evaluate_run(
            qrels,
            ranked,
            metrics,
            relevance_threshold=threshold,
            page_slice=page_keys,
            match=match,
        )
    recall_curve = _recall_curve(match, version) if overall.query_count else None

    scores = [
        Score(
            evaluation=evaluation,
            slice=slice_name,
            metric=metric,
            value=min(max(value, 0.0), 1.0),
            queries_averaged=result.query_count,
            no_relevant_count=result.no_relevant_count,
        )
        for slice_name, result in results.items()
        for metric, value in result.means.items()
        if value is not None  # a slice with no relevant page has nothing to average
    ]
    scores += [
        Score(
            evaluation=evaluation,
            level=Score.Level.CHUNK,
            metric=figure.metric,
            value=_fraction(figure.value),
            queries_averaged=figure.queries,
            no_relevant_count=figure.no_relevant,
        )
        for figure in (chunk_level.figures if chunk_level else ())
    ]
    completeness_rows = _completeness_rows(evaluation, run, match, version, slices.query, overall)
    # The run is in hand: where it put each canary page is stored now, so that alerts and
    # the coverage page never read its entries again.
    canary_ranks = canary_ranks_stored(canaries_in_version(version), ranked, k=version.k_first)
    per_query = PerQuery(
        overall.query_ids, overall.values, overall.answered, overall.relevant_counts, slices=_slice_queries(overall, results, version)
    )
    with transaction.atomic():
        # Two computations of one (run, version) (a redelivered task beside the first, the
        # sweeper beside a publish) take turns here: without the lock the second's delete
        # misses the first's uncommitted scores and its insert then breaks their uniqueness.
        Evaluation.objects.select_for_update().filter(pk=evaluation.pk).exists()
        Score.every_level.filter(evaluation=evaluation).delete()
        Score.objects.bulk_create(scores)
        Completeness.objects.filter(evaluation=evaluation).delete()
        Completeness.objects.bulk_create(completeness_rows)
        Evaluation.objects.filter(pk=evaluation.pk).update(
            status=Evaluation.Status.DONE,
            finished_at=timezone.now(),
            metrics=[m.name for m in metrics],
            queries_in_version=len(qrels.query_ids),
            queries_averaged=overall.query_count,
            unanswered_count=overall.unanswered_count,
            no_relevant_count=overall.no_relevant_count,
            per_query=per_query.to_bytes(),
            recall_curve=recall_curve,
            canary_ranks=canary_ranks,
            hop_figures=hop_figures(version, ranked, [version.k_final, version.k_first]),
            prompt_tokens_k_final=chunk_level.prompt_tokens if chunk_level else None,
            error="",
        )
    evaluation.refresh_from_db()
    return evaluation


def _slice_queries(overall: engine.Evaluation, results: dict[str, engine.Evaluation], version: Version) -> dict[str, SliceQueries]:
    """Each slice's queries as positions in `overall`, with a page slice's own recall values:
    the paired drop test compares slices query by query (evaluation.alerts.noise). Every
    slice's queries are among the overall's: a query with a relevant page in a page slice
    has a relevant page."""
    position = {query_id: i for i, query_id in enumerate(overall.query_ids)}
    recalls = [f"recall@{version.k_first}", f"recall@{version.k_final}"]
    found = {}
    for name, result in results.items():
        if name == "":
            continue
        positions = np.fromiter((position.get(q, -1) for q in result.query_ids), dtype=np.int64, count=len(result.query_ids))
        kept = positions >= 0  # all of them, unless the overall ever leaves a query out that a slice keeps
        page = name.startswith("page:")
        values = {metric: result.values[metric][kept] for metric in recalls if page and metric in result.values}
        found[name] = SliceQueries(positions[kept], values)
    return found


def _completeness_rows(
    evaluation: Evaluation,
    run: Run,
    match: engine.RunMatch,
    version: Version,
    query_slices: dict[str, set[str]],
    overall: engine.Evaluation,
) -> list[Completeness]:
    """Judged@k_final and Judged@k_first overall and per query slice, and leave-one-run-out
    on the overall row, for the queries the scores average. A slice with no such query
    has no row, as it has no score.

    Leave-one-run-out pools the run against the runs of the set's other systems, not
    against its own system's other stages: a reranked run reorders its own first stage's
    pages, so each would hide the other's unique pages and both would show no drop, while
    a new system that was never pooled has neither stage in the pool. With no other
    system there is nothing to leave the run out of, and the figures stay null.
    """
    qrels, ranked, threshold = match.qrels, match.run, version.relevance_threshold
    slices = {"": None, **query_slices}
    judged = completeness.judged_at_ks_by_slice(
        qrels,
        ranked,
        (version.k_final, version.k_first),
        slices,
        relevance_threshold=threshold,
        match=match,
    )
    finals, firsts = judged[version.k_final], judged[version.k_first]
    rows = []
    for slice_name in slices:
        final, first = finals[slice_name], firsts[slice_name]
        if not final.query_count:
            continue
        rows.append(
            Completeness(
                evaluation=evaluation,
                slice=slice_name,
                queries=final.query_count,
                judged_at_k_final=_fraction(final.mean),
                judged_at_k_first=_fraction(first.mean),
            )
        )
    if not rows:
        return rows
    depth = evaluation_settings(version.golden_set).completeness_depth
    pooled_elsewhere, other_runs = pooled_labels.get_or_build(
        version,
        qrels,
        exclude_system=run.system,
        depth=depth,
        own_run_id=run.pk,
    )
    if other_runs:
        recall = f"recall@{version.k_first}"
        loro = completeness.leave_one_run_out_of_pool(
            qrels,
            ranked,
            pooled_elsewhere,
            other_run_count=other_runs,
            depth=depth,
            metrics=(recall, "ndcg@10"),
            relevance_threshold=threshold,
            full=overall,
            match=match,
        )
        overall = rows[0]
        overall.loro_depth, overall.loro_other_runs = depth, loro.other_run_count
        overall.loro_recall_k_first = _fraction(loro.reduced[recall])
        overall.loro_ndcg_10 = _fraction(loro.reduced["ndcg@10"])
        overall.loro_recall_change_points = loro.change_points(recall)
        overall.loro_ndcg_change_points = loro.change_points("ndcg@10")
        overall.unique_relevant_count = loro.unique_relevant_count
        overall.loro_emptied_queries = loro.emptied_query_count
    return rows


def _fraction(value: float) -> float:
    """`value` clamped into [0, 1]: float noise must not trip the table's check constraint."""
    return min(max(value, 0.0), 1.0)


# A recall curve holds at most this many points: one per k when k_first is no deeper, else
# one per k up to 100 and evenly spaced ones beyond, so that a deep k_first costs a couple
# of hundred kernel calls per evaluation, not thousands.
RECALL_CURVE_POINTS = 200


def recall_curve_cutoffs(k_first: int) -> list[int]:
    """The k at which the recall curve is drawn: every k from 1 to k_first when there are at
    most RECALL_CURVE_POINTS of them, else 1..100 and then evenly spaced up to k_first."""
    if k_first <= RECALL_CURVE_POINTS:
        return list(range(1, k_first + 1))
    head = list(range(1, 101))
    step = (k_first - 100) / (RECALL_CURVE_POINTS - 100)
    tail = sorted({round(100 + step * i) for i in range(1, RECALL_CURVE_POINTS - 99)} | {k_first})
    return head + [k for k in tail if k > 100]


def _recall_curve(match: engine.RunMatch, version: Version) -> list[list[float]]:
    """[[k, mean recall@k], ...] at recall_curve_cutoffs(k_first), over the queries the
    stored scores average (those with a relevant page; unanswered ones count 0).

    Computed in one pass with numpy rather than one kernel call per k: each relevant page
    the run found at rank r adds 1/|relevant of its query| to every k >= r. That is
    recall@k's definition, so the curve agrees with the stored recall@k scores (a test
    checks it), at a hundredth of the cost of a hundred kernel calls on 10,000 queries.
    The pages found are the run's entries with a label (match.entry_label), in entry order.
    """
    qrels = match.qrels
    n = len(qrels.query_ids)
    relevant = qrels.grades >= version.relevance_threshold
    relevant_counts = np.bincount(qrels.query_index[relevant], minlength=n)
    averaged = int(np.count_nonzero(relevant_counts))
    k_first = version.k_first
    found = np.flatnonzero(match.entry_label >= 0)
    rows = match.entry_label[found]
    found, rows = found[relevant[rows]], rows[relevant[rows]]
    owners = qrels.query_index[rows]
    ranks = found - match.starts[owners] + 1
    weights = 1.0 / relevant_counts[owners]
    within = ranks <= k_first
    per_rank = np.bincount(ranks[within], weights=weights[within], minlength=k_first + 1)[1 : k_first + 1]
    curve = np.cumsum(per_rank) / averaged
    return [[k, min(max(float(curve[k - 1]), 0.0), 1.0)] for k in recall_curve_cutoffs(k_first)]


def evaluation_fail(*, run_id: int, version_id: int, error: str) -> None:
    """Record why an evaluation failed, so the page shows it instead of spinning forever."""
    Evaluation.objects.filter(run_id=run_id, version_id=version_id).update(
        status=Evaluation.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )


def golden_set_evaluate_now(golden_set: GoldenSet, version: Version) -> list[Evaluation]:
    """Evaluate every run of the set against `version` in this process (the `evaluate` command)."""
    results = []
    for evaluation in evaluations_schedule(version=version):
        results.append(evaluation_compute(run=evaluation.run, version=version))
    return results


# --- a run's lifecycle: archived, partial, marked complete -------------------------------
#
# These change only the lifecycle fields of a run (Run.archived_at, completed_at and their
# "by"); its entries, evaluations, scores and alerts are never touched. An archived or
# partial run's alerts are hidden rather than resolved (evaluation.alerts.selectors): each
# was a true statement about the run on its version, "resolved" means the condition went
# away (a canary found again), and unarchiving should bring the run back as it was. The
# run keeps being scored on new versions, so that unarchiving it shows current figures.


def _lifecycle_save(run: Run, *, user: AbstractBaseUser | None, action: str, **fields) -> Run:
    """Save the run's lifecycle `fields` and record `action` (run.archive, ...) by `user`."""
    with transaction.atomic():
        before = {name: getattr(run, name) for name in fields}
        for name, value in fields.items():
            setattr(run, name, value)
        run.save(update_fields=list(fields))
        changed_before, changed_after = changed_fields(before, fields)
        audit_record(
            user=user, action=action, obj=run, golden_set=run.golden_set, before=changed_before, after=changed_after, label=run.name
        )
    return run


def _alerts_catch_up(run: Run) -> None:
    """Check the alerts of every finished evaluation of a run that counts again: the ones it
    crossed while held back were never raised. Idempotent (alerts_check stores a crossing
    once), so an alert hidden meanwhile is neither doubled nor delivered again."""
    for evaluation in Evaluation.objects.filter(run=run, status=Evaluation.Status.DONE).only("pk"):
        alerts_check(evaluation=evaluation)


def run_archive(*, run: Run, user: AbstractBaseUser | None) -> Run:
    """Archive `run`, recording who and when: it keeps its entries and scores but leaves the
    leaderboards, alerts, coverage flags, pools and default lists. ConflictError when it is
    archived already."""
    if run.archived_at is not None:
        raise ConflictError(f"run {run.name!r} is archived already", field="run")
    return _lifecycle_save(run, user=user, action="run.archive", archived_at=timezone.now(), archived_by=user)


def run_unarchive(*, run: Run, user: AbstractBaseUser | None) -> Run:
    """Bring an archived run back everywhere, and raise the alerts it would have raised
    meanwhile (its old ones show again). ConflictError when it is not archived."""
    if run.archived_at is None:
        raise ConflictError(f"run {run.name!r} is not archived", field="run")
    with transaction.atomic():
        _lifecycle_save(run, user=user, action="run.unarchive", archived_at=None, archived_by=None)
        if not run.held_back:
            _alerts_catch_up(run)
    return run


def run_mark_complete(*, run: Run, user: AbstractBaseUser | None) -> Run:
    """Let a partial run count for coverage flags and alerts (a manager knows the queries it
    leaves out are meant to be left out), and raise the alerts it crosses. GoldsetError
    when the run is not partial, ConflictError when it is marked complete already."""
    if not run.partial:
        raise GoldsetError(f"run {run.name!r} is not partial: it counts already", field="run")
    if run.completed_at is not None:
        raise ConflictError(f"run {run.name!r} is marked complete already", field="run")
    with transaction.atomic():
        _lifecycle_save(run, user=user, action="run.mark_complete", completed_at=timezone.now(), completed_by=user)
        if not run.held_back:
            _alerts_catch_up(run)
    return run


def run_mark_partial(*, run: Run, user: AbstractBaseUser | None) -> Run:
    """Undo run_mark_complete: the partial run is left out of coverage flags and alerts
    again (its alerts hidden, not deleted). ConflictError when it is not marked complete."""
    if not run.partial or run.completed_at is None:
        raise ConflictError(f"run {run.name!r} is not a partial run marked complete", field="run")
    return _lifecycle_save(run, user=user, action="run.mark_partial", completed_at=None, completed_by=None)
