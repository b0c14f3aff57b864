"""Slice coverage of a golden set's version: which part of the labels can we not trust yet?

The seed's story is the reason for the page: recall@100 of 0.41 for pages newer than 30
days hid behind an overall 0.91 until someone sliced by age. For every slice value of a
version, query slices ("query:lang=de") and page slices ("page:doc_type=runbook",
"page:age=0-30d"), named and computed exactly as the evaluation names and computes them
(evaluation.scoring_inputs, so the page and the Score rows cannot
disagree), this gathers:

- queries: for a query slice, its queries; for a page slice, the queries with a label on
  one of its pages. `averaged` (queries with a relevant page; the ones a slice's recall
  is averaged over, Score.queries_averaged) is what the minimum is held against;
- judged pairs (labels), relevant pages per query (min and median over `queries`), and
  queries with no relevant page (for a page slice: no relevant page of the slice);
- stale labels: labels whose pair's latest judgment saw other page content than the
  page has now (Judgment.page_hash != Page.content_hash);
- the figures of each system's latest run of each stage that is scored on the version:
  recall@k_first and recall@k_final (Score) and Judged@k_final (Completeness, which has
  rows for all queries and query slices only: a page slice does not change a run's top k);
- flags against the set's targets (EvaluationSettings): fewer averaged queries than
  min_queries_per_slice, a run's recall under alert_slice_floor (recall@k_final for a
  reranked run, recall@k_first for the others, as the alerts judge them), a run's
  Judged@k_final under judged_floor.

Fractions are in [0, 1]; k_first and k_final are the version's. The cost is a fixed
number of SQL queries whatever the size of the set (the labels come as arrays, every
slice is a numpy mask), plus one read of each run's data when the set has canaries.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Exists, F, OuterRef

from evaluation import scoring_inputs
from evaluation.alerts.rules import EPSILON, slice_metric
from evaluation.canaries import CanaryResult, canaries_in_version, canary_checks
from evaluation.models import Canary, Completeness, Evaluation, EvaluationSettings, Run, Score
from evaluation.selectors import evaluation_settings, later_night, run_counted, slice_label
from goldenset.models import GoldenSet, Judgment, PageChange, Query, Version, VersionPage
from goldenset.stale_spans import span_judgments
from labeling.coverage.duplicates import judgments_saved
from lib import charts


@dataclass(frozen=True)
class CoverageRun:
    """A system's latest run of one stage scored on the version, and the recall it is held to."""

    run: Run
    evaluation: Evaluation
    color: str
    metric: str  # recall@k_final for a reranked run, recall@k_first otherwise

    @property
    def label(self) -> str:
        return f"{self.run.system} {self.run.get_stage_display()}"


@dataclass(frozen=True)
class RunFigures:
    """One run's figures in one slice. None where the evaluation stored none (a slice with
    no relevant page has no Score; a page slice has no Completeness row)."""

    recall_first: float | None
    recall_final: float | None
    judged_final: float | None
    held_to: float | None  # the value of the run's own recall metric (CoverageRun.metric)
    recall_under: bool
    judged_under: bool


@dataclass
class SliceCoverage:
    name: str  # as in Score.slice: "" for all queries, "query:FIELD=VALUE", "page:FIELD=VALUE"
    queries: int
    judged_pairs: int
    relevant_min: int | None
    relevant_median: float | None
    no_relevant: int
    stale_labels: int = 0
    runs: list[RunFigures] = field(default_factory=list)
    # Why the slice is under a target: one sentence each, and one short badge per target.
    flags: list[str] = field(default_factory=list)
    badges: list[str] = field(default_factory=list)
    # Positions (in the version's query order) of the slice's queries: what a pool for
    # the slice would cover. Not shown; kept for the pool action.
    query_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    @property
    def kind(self) -> str:
        return self.name.partition(":")[0] if self.name else "all"

    @property
    def field(self) -> str:
        return self.name.partition(":")[2].partition("=")[0]

    @property
    def value(self) -> str:
        return self.name.partition("=")[2]

    @property
    def label(self) -> str:
        if not self.name:
            return "all queries"
        return f"{'queries' if self.kind == 'query' else 'pages'} {self.field} = {self.value}"

    @property
    def averaged(self) -> int:
        """Queries with a relevant page (in the slice): what its recall is averaged over."""
        return self.queries - self.no_relevant

    @property
    def flagged(self) -> bool:
        return bool(self.flags)


@dataclass
class CanaryRow:
    canary: Canary
    results: list[CanaryResult | None]  # one per CoverageReport.canary_runs, None when the run has no data


@dataclass
class CoverageReport:
    golden_set: GoldenSet
    version: Version
    settings: EvaluationSettings
    runs: list[CoverageRun]
    overall: SliceCoverage
    slices: list[SliceCoverage]
    stale_total: int
    recall_chart: charts.BarChart
    judged_chart: charts.BarChart
    canary_runs: list[Run] = field(default_factory=list)
    canary_rows: list[CanaryRow] = field(default_factory=list)
    query_ids: tuple[str, ...] = ()
    canary_suggestions: list["CanarySuggestion"] = field(default_factory=list)
    # Runs scored on the version but left out of the figures and flags (latest_runs):
    # archived, or partial and not marked complete; the page names them, so that a missing
    # run is not a mystery.
    held_back: list[Run] = field(default_factory=list)
    # Pairs a duplicate group's one judgment stands for (labeling.coverage.duplicates).
    judgments_saved: int = 0

    @property
    def flagged(self) -> list[SliceCoverage]:
        return [one for one in self.slices if one.flagged]

    @property
    def query_slices(self) -> list[SliceCoverage]:
        return [one for one in self.slices if one.kind == "query"]

    @property
    def page_slices(self) -> list[SliceCoverage]:
        return [one for one in self.slices if one.kind == "page"]

    @property
    def canary_misses(self) -> list[tuple[Run, int]]:
        """(run, canaries it missed) for every run that missed one, in canary_runs order."""
        out = []
        for i, run in enumerate(self.canary_runs):
            missed = sum(1 for row in self.canary_rows if row.results[i] is not None and not row.results[i].found)
            if missed:
                out.append((run, missed))
        return out

    def flagged_query_ids(self) -> list[str]:
        """The query ids of every flagged slice (see SliceCoverage.queries), in version order."""
        if not self.flagged:
            return []
        index = np.unique(np.concatenate([one.query_index for one in self.flagged]))
        return [self.query_ids[i] for i in index.tolist()]


def latest_runs(version: Version) -> list[CoverageRun]:
    """Each system's latest run (by upload) of each stage with a finished evaluation on
    `version`, ordered by system then stage. One query.

    Archived runs, and partial ones a manager has not marked complete, are left out: a test
    run of 8 queries scores 0 on every other query and would flag every slice, and an
    archived run is retired. The system's previous run of the stage speaks for it instead."""
    return _latest_and_held_back(version)[0]


def _latest_and_held_back(version: Version) -> tuple[list[CoverageRun], list[Run]]:
    """latest_runs, and the runs scored on `version` it leaves out (archived, or partial and
    not marked complete), from the same one query."""
    evaluations = (
        Evaluation.objects.filter(version=version, status=Evaluation.Status.DONE)
        .exclude(later_night("run__"))
        .select_related("run")
        .defer("per_query", "recall_curve", "canary_ranks")  # blobs of 10,000s of queries
        .order_by("run__created_at", "run__id")
    )
    latest: dict[tuple[str, str], Evaluation] = {}
    held_back: list[Run] = []
    for evaluation in evaluations:
        if evaluation.run.held_back:
            held_back.append(evaluation.run)
            continue
        latest[(evaluation.run.system, evaluation.run.stage)] = evaluation  # later uploads replace earlier
    stage_order = {stage: i for i, stage in enumerate(Run.Stage.values)}
    chosen = sorted(latest.values(), key=lambda e: (e.run.system, stage_order.get(e.run.stage, 99), e.run.name))
    runs = [CoverageRun(run=e.run, evaluation=e, color=charts.color(i), metric=slice_metric(e.run, version)) for i, e in enumerate(chosen)]
    return runs, sorted(held_back, key=lambda run: (run.system, run.stage, run.name))


def stale_label_pairs(version: Version) -> list[tuple[str, int]]:
    """(query_id, page key) of the set's judged pairs whose latest judgment recorded another
    content hash than the page has now (coverage_report keeps those that are labels of
    the version). Judgments without a recorded hash are not counted (nothing to compare).

    Two queries, over the judgments of changed pages only (goldenset.models.PageChange, kept
    by a trigger): a judgment records its page's hash when made, so only a page changed
    since can carry a stale label, and comparing every judgment of a set with its page
    grows with the set.
    """
    later = Judgment.objects.filter(query_id=OuterRef("query_id"), page_id=OuterRef("page_id"), id__gt=OuterRef("id"))
    # A judgment whose every evidence span still holds or follows its text is not stale (goldenset.stale_spans).
    _, spans_kept = span_judgments(version.golden_set)
    rows = (
        Judgment.objects.filter(query__golden_set_id=version.golden_set_id, page_id__in=PageChange.objects.values("page_id"))
        .exclude(page_hash="")
        .exclude(page_hash=F("page__content_hash"))
        .exclude(id__in=spans_kept)
        .filter(~Exists(later))
        .values_list("query__query_id", "page_id")
    )
    return list(rows)


def _median(values: np.ndarray) -> float | None:
    return float(np.median(values)) if len(values) else None


def _slice(name: str, in_scope: np.ndarray, judged: int, relevant: np.ndarray) -> SliceCoverage:
    """A slice's label figures from its queries (indexes) and their relevant counts."""
    return SliceCoverage(
        name=name,
        queries=len(in_scope),
        judged_pairs=judged,
        relevant_min=int(relevant.min()) if len(relevant) else None,
        relevant_median=_median(relevant),
        no_relevant=int(np.count_nonzero(relevant == 0)),
        query_index=in_scope,
    )


def coverage_report(golden_set: GoldenSet, version: Version) -> CoverageReport:
    """The coverage of every slice of `version` (see the module docstring)."""
    settings = evaluation_settings(golden_set)
    qrels, slices = scoring_inputs.get_or_build(version)
    n = len(qrels.query_ids)
    threshold = version.relevance_threshold
    owners, keys = qrels.query_index, qrels.doc_keys
    relevant_label = qrels.grades >= threshold
    label_counts = np.bincount(owners, minlength=n)
    relevant_counts = np.bincount(owners[relevant_label], minlength=n)

    position = {query_id: i for i, query_id in enumerate(qrels.query_ids)}
    overall = _slice("", np.arange(n, dtype=np.int64), len(keys), relevant_counts)
    found: list[SliceCoverage] = []
    for name, query_ids in slices.query.items():
        index = np.sort(np.fromiter((position[q] for q in query_ids if q in position), dtype=np.int64))
        found.append(_slice(name, index, int(label_counts[index].sum()), relevant_counts[index]))

    # Page slices: every label's page mapped once to a dense id, so that each slice is a
    # lookup in a small boolean array rather than a search through all labels.
    labelled_pages, label_page = np.unique(keys, return_inverse=True)
    for name, page_keys in slices.page.items():
        in_slice = np.zeros(len(labelled_pages), dtype=bool)
        at = np.searchsorted(labelled_pages, page_keys)
        inside = at < len(labelled_pages)
        at, page_keys = at[inside], page_keys[inside]
        in_slice[at[labelled_pages[at] == page_keys]] = True
        kept = in_slice[label_page]
        per_query = np.bincount(owners[kept], minlength=n)
        index = np.flatnonzero(per_query)
        relevant = np.bincount(owners[kept & relevant_label], minlength=n)[index]
        found.append(_slice(name, index, int(np.count_nonzero(kept)), relevant))

    # Stale labels, counted in the slices their query or page belongs to.
    stale = [(position[q], page) for q, page in stale_label_pairs(version) if q in position]
    label_pairs = set(zip(owners.tolist(), keys.tolist())) if stale else set()
    stale = [pair for pair in stale if pair in label_pairs]
    overall.stale_labels = len(stale)
    if stale:
        stale_queries = np.array([q for q, _ in stale], dtype=np.int64)
        stale_pages = np.array([p for _, p in stale], dtype=np.int64)
        for one in found:
            if one.kind == "query":
                one.stale_labels = int(np.count_nonzero(np.isin(stale_queries, one.query_index)))
            else:
                one.stale_labels = int(np.count_nonzero(np.isin(stale_pages, slices.page[one.name])))

    runs, held_back = _latest_and_held_back(version)
    _add_run_figures([overall, *found], runs, version, settings)
    for one in [overall, *found]:
        if one.averaged < settings.min_queries_per_slice:
            one.flags.insert(
                0,
                (
                    f"{one.averaged} {'query' if one.averaged == 1 else 'queries'} with a relevant page, "
                    f"under the minimum of {settings.min_queries_per_slice}"
                ),
            )
            one.badges.insert(0, f"{one.averaged} queries < {settings.min_queries_per_slice}")

    canary_runs, canary_rows = _canaries(golden_set, version)
    suggestions = canary_suggestions(version, qrels, slices)
    return CoverageReport(
        golden_set=golden_set,
        version=version,
        settings=settings,
        runs=runs,
        overall=overall,
        slices=found,
        stale_total=overall.stale_labels,
        recall_chart=_recall_chart([overall, *found], runs, version, settings),
        judged_chart=_judged_chart([overall, *found], runs, version, settings),
        canary_runs=canary_runs,
        canary_rows=canary_rows,
        query_ids=qrels.query_ids,
        canary_suggestions=suggestions,
        held_back=held_back,
        judgments_saved=judgments_saved(version),
    )


# Suggestions per page slice: the newest this-many relevant pages that are no canary yet.
SUGGESTIONS_PER_SLICE = 2


@dataclass(frozen=True)
class CanarySuggestion:
    """A page worth watching: among the newest relevant pages of `slice`, with the first
    query (in version order) it is relevant to."""

    slice: str
    query_id: str
    doc_id: str
    title: str
    published_at: object

    @property
    def slice_label(self) -> str:
        return slice_label(self.slice)


def canary_suggestions(version: Version, qrels, slices, *, per_slice: int = SUGGESTIONS_PER_SLICE) -> list[CanarySuggestion]:
    """The newest relevant pages of each page slice of `version` (the age slice's first:
    the seed's stale shards hid exactly those), not already a canary of their set, for the
    coverage page to offer as canaries; newest by publication date, then doc id.

    The dates come with the version's slices (evaluation.selectors.VersionSlices), so the
    pick is numpy over arrays; the database is asked for the canaries already taken and the
    doc id and title of the few pages in the running, never with a list of every relevant
    page (that list alone took seconds at 5,000 queries: bench/growth.py)."""
    relevant = qrels.grades >= version.relevance_threshold
    keys, owners = qrels.doc_keys[relevant], qrels.query_index[relevant]
    dated = np.isin(slices.dated_pages, keys)
    if not dated.any():
        return []
    taken = np.fromiter(
        Canary.objects.filter(golden_set_id=version.golden_set_id).values_list("page_id", flat=True),
        dtype=np.int64,
    )
    dated &= ~np.isin(slices.dated_pages, taken)
    pages, published = slices.dated_pages[dated], slices.published_at[dated]
    names = sorted(slices.page, key=lambda name: (not name.startswith("page:age="), name))
    # Per slice, every page as new as its n-th newest, n = per_slice for each slice there is:
    # the slices before it may take up to per_slice pages each that it would have offered.
    # The doc id breaks the ties among them once the titles are read.
    deep = per_slice * len(names)
    running: dict[str, np.ndarray] = {}
    for name in names:
        inside = np.isin(pages, slices.page[name])
        if not inside.any():
            continue
        dates = published[inside]
        cutoff = np.sort(dates)[::-1][min(deep, len(dates)) - 1]
        running[name] = pages[inside][dates >= cutoff]
    if not running:
        return []
    wanted = np.unique(np.concatenate(list(running.values())))
    shown = {
        page_id: (published_at, doc_id, title)
        for page_id, published_at, doc_id, title in VersionPage.objects.filter(version=version, page_id__in=wanted.tolist()).values_list(
            "page_id", "published_at", "page__doc_id", "page__title"
        )
    }
    order = np.argsort(keys, kind="stable")
    first_owner = {}
    found, chosen = [], set()
    for name, candidates in running.items():
        ranked = sorted(
            (key for key in candidates.tolist() if key not in chosen),
            key=lambda key: (shown[key][0], shown[key][1]),
            reverse=True,
        )
        for key in ranked[:per_slice]:
            chosen.add(key)  # a page suggested for one slice is not suggested again for the next
            if key not in first_owner:
                at = order[np.searchsorted(keys, key, sorter=order) : np.searchsorted(keys, key, side="right", sorter=order)]
                first_owner[key] = int(owners[at].min())
            published_at, doc_id, title = shown[key]
            found.append(CanarySuggestion(name, qrels.query_ids[first_owner[key]], doc_id, title, published_at))
    return found


def _add_run_figures(rows: Sequence[SliceCoverage], runs: Sequence[CoverageRun], version: Version, settings: EvaluationSettings) -> None:
    """Each run's recall and Judged@k_final in each slice, and the flags they raise. Two queries."""
    first, final = f"recall@{version.k_first}", f"recall@{version.k_final}"
    evaluation_ids = [r.evaluation.pk for r in runs]
    scores = {
        (evaluation_id, name, metric): value
        for evaluation_id, name, metric, value in Score.objects.filter(
            evaluation_id__in=evaluation_ids, metric__in=[first, final]
        ).values_list("evaluation_id", "slice", "metric", "value")
    }
    judged = (
        dict(
            ((evaluation_id, name), value)
            for evaluation_id, name, value in Completeness.objects.filter(evaluation_id__in=evaluation_ids).values_list(
                "evaluation_id", "slice", "judged_at_k_final"
            )
        )
        if evaluation_ids
        else {}
    )
    floor, judged_floor = settings.alert_slice_floor, settings.judged_floor
    for row in rows:
        for run in runs:
            key = run.evaluation.pk
            held_to = scores.get((key, row.name, run.metric))
            judged_final = judged.get((key, row.name))
            figures = RunFigures(
                recall_first=scores.get((key, row.name, first)),
                recall_final=scores.get((key, row.name, final)),
                judged_final=judged_final,
                held_to=held_to,
                recall_under=held_to is not None and held_to < floor - EPSILON,
                judged_under=judged_final is not None and judged_final < judged_floor - EPSILON,
            )
            row.runs.append(figures)
            if figures.recall_under:
                row.flags.append(f"{run.metric} of {run.run.name} is {held_to:.3f}, under the recall floor of {floor:.2f}")
            if figures.judged_under:
                row.flags.append(f"Judged@{version.k_final} of {run.run.name} is {judged_final:.3f}, under the floor of {judged_floor:.2f}")
        recall_under = sum(figures.recall_under for figures in row.runs)
        judged_under = sum(figures.judged_under for figures in row.runs)
        if recall_under:
            row.badges.append(f"recall < {floor:.2f} ({recall_under} of {len(runs)} runs)")
        if judged_under:
            row.badges.append(f"Judged@{version.k_final} < {judged_floor:.2f} ({judged_under} of {len(runs)} runs)")


def _canaries(golden_set: GoldenSet, version: Version) -> tuple[list[Run], list[CanaryRow]]:
    """Every run of the set against the version's canaries; nothing is read without canaries."""
    canaries = canaries_in_version(version)
    if not canaries:
        return [], []
    runs = list(
        Run.objects.filter(run_counted(), golden_set=golden_set).exclude(later_night()).order_by("system", "stage", "created_at", "id")
    )
    results = canary_checks(version=version, runs=runs, canaries=canaries)
    rows = [
        CanaryRow(canary=canary, results=[results[run.pk][i] if run.pk in results else None for run in runs])
        for i, canary in enumerate(canaries)
    ]
    return runs, rows


def _row_label(row: SliceCoverage) -> str:
    return f"{row.label} ({row.averaged} q)"


def _slice_chart(
    rows: Sequence[SliceCoverage],
    runs: Sequence[CoverageRun],
    *,
    figure: str,
    text: Callable[[CoverageRun, SliceCoverage, float], str],
    floor: float,
    title: str,
    x_label: str,
) -> charts.BarChart:
    """A group of bars per slice of `rows`, a bar per run: the run's `figure` there (a
    RunFigures field), with `text` as its tooltip where it has one, against `floor`."""
    groups = []
    for row in rows:
        bars = []
        for run, figures in zip(runs, row.runs):
            value = getattr(figures, figure)
            bars.append((value, run.color, text(run, row, value) if value is not None else ""))
        groups.append(charts.BarGroup(label=_row_label(row), bars=bars))
    return charts.bar_chart(
        groups if runs else [],
        target=floor,
        target_label=f"{floor:.2f} floor",
        title=title,
        x_label=x_label,
        label_width=230,
    )


def _recall_chart(
    rows: Sequence[SliceCoverage], runs: Sequence[CoverageRun], version: Version, settings: EvaluationSettings
) -> charts.BarChart:
    return _slice_chart(
        rows,
        runs,
        figure="held_to",
        text=lambda run, row, value: (
            f"{run.run.name}, {row.label}: {run.metric} = {value:.3f} on v{version.number} ({row.averaged} queries with a relevant page)"
        ),
        floor=settings.alert_slice_floor,
        title=f"Recall per slice on v{version.number} (each run at the cut-off its stage is held to)",
        x_label=f"recall@{version.k_first} (first stage) or recall@{version.k_final} (reranked) on v{version.number}",
    )


def _judged_chart(
    rows: Sequence[SliceCoverage], runs: Sequence[CoverageRun], version: Version, settings: EvaluationSettings
) -> charts.BarChart:
    return _slice_chart(
        [row for row in rows if row.kind != "page"],  # no Judged@k for page slices (see the module docstring)
        runs,
        figure="judged_final",
        text=lambda run, row, value: f"{run.run.name}, {row.label}: Judged@{version.k_final} = {value:.3f} on v{version.number}",
        floor=settings.judged_floor,
        title=f"Judged@{version.k_final} per query slice on v{version.number}",
        x_label=f"Judged@{version.k_final}: share of each run's top {version.k_final} with a label, on v{version.number}",
    )


def flagged_queries(golden_set: GoldenSet, report: CoverageReport) -> list[Query]:
    """The Query rows of the flagged slices' queries (for a pool restricted to them)."""
    ids = report.flagged_query_ids()
    return list(Query.objects.filter(golden_set=golden_set, query_id__in=ids)) if ids else []
