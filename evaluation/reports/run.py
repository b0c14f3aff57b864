"""One run: its scores on every version and its weakest queries (the run page), how its
scores moved between two versions (the run's versions page), and what it ranked for one
query (the drill-down)."""

from dataclasses import dataclass, field

from django.http import Http404

from evaluation.level_figures import LEVELS_SENTENCE, LevelFigures, evaluation_levels
from evaluation.models import Evaluation, Run, Score
from evaluation.reports.compare import paired_values, stored_scores
from evaluation.reports.completeness import RunCompleteness, completeness_rows, run_completeness
from evaluation.selectors import evaluation_per_query, evaluation_settings, run_ranked
from goldenset.diffs import version_diff
from goldenset.models import GoldenSet, Page, Query, Version, VersionLabel, VersionQuery
from lib.ids import natural_key

WORST_QUERY_COUNT = 25


# --- the run page ---------------------------------------------------------------------


@dataclass
class RunEvaluationRow:
    evaluation: Evaluation
    version: Version
    recall_first: float | None
    recall_final: float | None
    ndcg: float | None
    completeness: RunCompleteness | None = None

    @property
    def warning(self) -> str:
        done = self.evaluation.status == Evaluation.Status.DONE
        return self.completeness.warning if done and self.completeness is not None else ""


@dataclass(frozen=True)
class QueryScore:
    query_id: str
    value: float
    relevant: int
    answered: bool


@dataclass
class RunDetailReport:
    run: Run
    rows: list[RunEvaluationRow]
    worst_version: Version | None = None
    worst_metric: str = ""
    worst: list[QueryScore] = field(default_factory=list)
    worst_completeness: RunCompleteness | None = None  # on worst_version: its page warns when unreliable
    # A run of a chunking: both levels on the newest version it was scored on.
    levels: list[LevelFigures] = field(default_factory=list)
    levels_version: Version | None = None
    levels_sentence: str = LEVELS_SENTENCE

    @property
    def level_metrics(self) -> list[str]:
        """The columns of the levels table: the funnel's recalls, ndcg@10, evidence recall."""
        v = self.levels_version
        if v is None:
            return []
        return [f"recall@{v.k_first}", f"recall@{v.k_final}", "ndcg@10", f"evidence_recall@{v.k_final}", f"evidence_recall@{v.k_first}"]

    @property
    def level_rows(self) -> list[tuple[LevelFigures, list[float | None]]]:
        """Each level with its value of each of level_metrics (None: not at that level)."""
        return [(level, [level.scores.get(metric) for metric in self.level_metrics]) for level in self.levels]

    @property
    def scored_versions(self) -> list[int]:
        """Numbers of the versions the run has figures on, newest first."""
        return [row.version.number for row in self.rows if row.evaluation.status == Evaluation.Status.DONE]

    @property
    def completeness_rows(self) -> list[RunEvaluationRow]:
        """The finished evaluations that have completeness figures, newest version first."""
        return [
            row
            for row in self.rows
            if row.evaluation.status == Evaluation.Status.DONE and row.completeness is not None and row.completeness.row is not None
        ]


def run_version_numbers(run: Run) -> list[int]:
    """Numbers of the versions `run` has figures on, newest first."""
    done = Evaluation.objects.filter(run=run, status=Evaluation.Status.DONE)
    return list(done.order_by("-version__number").values_list("version__number", flat=True))


def run_detail_report(run: Run) -> RunDetailReport:
    """The run's evaluations on every version, newest first, and its weakest queries on the
    newest version it was scored on."""
    evaluations = list(
        Evaluation.objects.filter(run=run).select_related("version").defer("per_query", "recall_curve").order_by("-version__number")
    )
    rows = Score.objects.filter(evaluation__run=run, slice="").values_list("evaluation_id", "metric", "value")
    scores: dict[tuple[int, str], float] = {(e, m): v for e, m, v in rows}
    completeness = completeness_rows(evaluations)
    settings = evaluation_settings(run.golden_set)
    report = RunDetailReport(
        run=run,
        rows=[
            RunEvaluationRow(
                evaluation=e,
                version=e.version,
                recall_first=scores.get((e.id, f"recall@{e.version.k_first}")),
                recall_final=scores.get((e.id, f"recall@{e.version.k_final}")),
                ndcg=scores.get((e.id, "ndcg@10")),
                completeness=run_completeness(completeness.get(e.id, {}).get(""), run, e.version, settings, run.golden_set.slug),
            )
            for e in evaluations
        ],
    )
    latest_done = next((e for e in evaluations if e.status == Evaluation.Status.DONE), None)
    if latest_done is not None and run.chunking_id is not None:
        report.levels, report.levels_version = evaluation_levels(latest_done), latest_done.version
    if latest_done is not None:
        per_query = evaluation_per_query(latest_done)
        metric = f"recall@{latest_done.version.k_final}"
        if per_query is not None and metric not in per_query.values and per_query.values:
            metric = next(iter(per_query.values))
        if per_query is not None and metric in per_query.values:
            values = per_query.values[metric]
            order = sorted(range(len(values)), key=lambda i: (values[i], natural_key(per_query.query_ids[i])))
            report.worst_version, report.worst_metric = latest_done.version, metric
            report.worst_completeness = next(row.completeness for row in report.rows if row.evaluation.id == latest_done.id)
            report.worst = [
                QueryScore(
                    query_id=per_query.query_ids[i],
                    value=float(values[i]),
                    relevant=int(per_query.relevant_counts[i]),
                    answered=bool(per_query.answered[i]),
                )
                for i in order[:WORST_QUERY_COUNT]
            ]
    return report


# --- one run across two versions ------------------------------------------------------


@dataclass(frozen=True)
class MetricMove:
    """How one metric of an unchanged run moved between two versions, in points.

    `common_points` is the move over the queries averaged in both versions, so it comes
    from their labels alone; `query_set_points` is the rest: queries that entered or left
    the average (added, retired, or gaining or losing their last relevant page).
    """

    metric: str
    old: float
    new: float
    old_common: float | None
    new_common: float | None

    @property
    def total_points(self) -> float:
        return (self.new - self.old) * 100

    @property
    def common_points(self) -> float | None:
        if self.old_common is None or self.new_common is None:
            return None
        return (self.new_common - self.old_common) * 100

    @property
    def query_set_points(self) -> float | None:
        common = self.common_points
        return None if common is None else self.total_points - common


@dataclass(frozen=True)
class QueryMove:
    query_id: str
    old: float
    new: float

    @property
    def delta_points(self) -> float:
        """new - old, in points."""
        return (self.new - self.old) * 100


@dataclass
class VersionMoveReport:
    run: Run
    old: Version
    new: Version
    evaluation_old: Evaluation | None
    evaluation_new: Evaluation | None
    moves: list[MetricMove] = field(default_factory=list)
    only_old_metrics: list[str] = field(default_factory=list)
    only_new_metrics: list[str] = field(default_factory=list)
    common_queries: int = 0
    only_old_queries: int = 0
    only_new_queries: int = 0
    moved_metric: str = ""
    moved_queries: list[QueryMove] = field(default_factory=list)
    moved_query_count: int = 0
    diff: object = None  # goldenset.diffs.VersionDiff
    completeness_old: RunCompleteness | None = None
    completeness_new: RunCompleteness | None = None

    @property
    def warnings(self) -> list[RunCompleteness]:
        """The completeness on each of the two versions on which the run's scores are unreliable."""
        return [c for c in (self.completeness_old, self.completeness_new) if c is not None and c.unreliable]

    @property
    def ready(self) -> bool:
        done = Evaluation.Status.DONE
        return bool(
            self.evaluation_old and self.evaluation_new and self.evaluation_old.status == done and self.evaluation_new.status == done
        )


def run_versions_report(run: Run, old: Version, new: Version) -> VersionMoveReport:
    """How `run`'s scores moved from version `old` to version `new`. The run did not change,
    so every move is the labels' (and the query set's) doing; it is split into the part on
    queries averaged in both versions and the part from queries entering or leaving."""
    evaluations = {e.version_id: e for e in Evaluation.objects.filter(run=run, version__in=[old, new]).defer("per_query")}
    report = VersionMoveReport(run=run, old=old, new=new, evaluation_old=evaluations.get(old.id), evaluation_new=evaluations.get(new.id))
    report.diff = version_diff(old, new) if old.number < new.number else version_diff(new, old)
    if not report.ready:
        return report
    completeness = completeness_rows([report.evaluation_old, report.evaluation_new])
    settings = evaluation_settings(run.golden_set)
    slug = run.golden_set.slug
    report.completeness_old = run_completeness(completeness.get(report.evaluation_old.id, {}).get(""), run, old, settings, slug)
    report.completeness_new = run_completeness(completeness.get(report.evaluation_new.id, {}).get(""), run, new, settings, slug)
    stored = stored_scores([report.evaluation_old, report.evaluation_new])
    per_old, per_new = evaluation_per_query(report.evaluation_old), evaluation_per_query(report.evaluation_new)
    old_metrics, new_metrics = report.evaluation_old.metrics, report.evaluation_new.metrics
    report.only_old_metrics = [m for m in old_metrics if m not in new_metrics]
    report.only_new_metrics = [m for m in new_metrics if m not in old_metrics]
    common = set(per_old.query_ids) & set(per_new.query_ids)
    report.common_queries = len(common)
    report.only_old_queries = len(per_old.query_ids) - len(common)
    report.only_new_queries = len(per_new.query_ids) - len(common)
    for metric in old_metrics:
        if metric not in new_metrics:
            continue
        old_value = stored.get((report.evaluation_old.id, "", metric))
        new_value = stored.get((report.evaluation_new.id, "", metric))
        if old_value is None or new_value is None:
            continue
        a, b = paired_values(per_old, per_new, metric)
        report.moves.append(
            MetricMove(
                metric=metric,
                old=old_value[0],
                new=new_value[0],
                old_common=float(a.mean()) if len(a) else None,
                new_common=float(b.mean()) if len(b) else None,
            )
        )

    common_metrics = [m.metric for m in report.moves]
    preferred = f"recall@{new.k_final}"
    report.moved_metric = preferred if preferred in common_metrics else (common_metrics[0] if common_metrics else "")
    if report.moved_metric:
        old_values = per_old.values[report.moved_metric]
        new_values = per_new.values[report.moved_metric]
        position = {q: i for i, q in enumerate(per_new.query_ids)}
        moved = [
            QueryMove(query_id=q, old=float(old_values[i]), new=float(new_values[position[q]]))
            for i, q in enumerate(per_old.query_ids)
            if q in position and old_values[i] != new_values[position[q]]
        ]
        moved.sort(key=lambda m: (-abs(m.new - m.old), natural_key(m.query_id)))
        report.moved_query_count = len(moved)
        report.moved_queries = moved[:WORST_QUERY_COUNT]
    return report


# --- one query of one run -------------------------------------------------------------


@dataclass(frozen=True)
class RankedPage:
    rank: int
    doc_id: str
    title: str
    url: str
    grade: int | None  # None: unjudged
    grade_label: str
    relevant: bool
    in_corpus: bool
    reaches_prompt: bool  # within k_final


@dataclass(frozen=True)
class MissedPage:
    doc_id: str
    title: str
    url: str
    grade: int
    grade_label: str
    rank: int | None  # where the run has it, deeper than k_first; None when it never retrieved it


@dataclass
class Drilldown:
    run: Run
    version: Version
    query: Query
    metadata: dict
    top: list[RankedPage]
    missed: list[MissedPage]
    relevant_count: int
    found_count: int
    found_in_final: int
    run_entries: int  # entries the run has for the query (up to its depth cap)
    values: list[tuple[str, float]]  # (metric, fraction) from the stored per-query values, if scored
    completeness: RunCompleteness | None = None  # the run's, over all queries of the version

    @property
    def recall_first(self) -> float | None:
        """The query's recall@k_first (a fraction); None when it has no relevant page."""
        return self.found_count / self.relevant_count if self.relevant_count else None

    @property
    def recall_final(self) -> float | None:
        """The query's recall@k_final (a fraction); None when it has no relevant page."""
        return self.found_in_final / self.relevant_count if self.relevant_count else None


def _linkable(url: str) -> str:
    """The page's URL if it is a web address, else "": an imported javascript: URL must not become a link."""
    return url if url.lower().startswith(("https://", "http://")) else ""


def query_drilldown(golden_set: GoldenSet, run: Run, version: Version, query_id: str) -> Drilldown:
    """The run's top k_first for one query with the version's grades, and the relevant pages
    it left out of them. Http404 when the query is not in the version; so too for an id
    holding NUL (`%00` in the URL), which no id can hold and PostgreSQL refuses to compare."""
    query = None if "\x00" in query_id else Query.objects.filter(golden_set_id=run.golden_set_id, query_id=query_id).first()
    snapshot = VersionQuery.objects.filter(version=version, query=query).values_list("metadata", flat=True).first() if query else None
    if query is None or snapshot is None:
        raise Http404(f"query {query_id!r} is not in version {version.number}")

    labels = {
        page_id: grade for page_id, grade in VersionLabel.objects.filter(version=version, query=query).values_list("page_id", "grade")
    }
    threshold = version.relevance_threshold
    ranked = run_ranked(run)
    rows = ranked.rows(query_id)
    keys = ranked.doc_keys[rows].tolist()
    top_keys = keys[: version.k_first]
    relevant_keys = {key for key, grade in labels.items() if grade >= threshold}
    wanted = {key for key in top_keys if key > 0} | relevant_keys
    pages = {
        pk: (doc_id, title, _linkable(url))
        for pk, doc_id, title, url in Page.objects.filter(id__in=wanted).values_list("id", "doc_id", "title", "url")
    }

    top = []
    for rank, key in enumerate(top_keys, start=1):
        in_corpus = key > 0
        doc_id, title, url = pages[key] if in_corpus else (ranked.external_doc_ids[-key - 1], "", "")
        grade = labels.get(key)
        top.append(
            RankedPage(
                rank=rank,
                doc_id=doc_id,
                title=title,
                url=url,
                grade=grade,
                grade_label=golden_set.grade_label(grade) if grade is not None else "unjudged",
                relevant=grade is not None and grade >= threshold,
                in_corpus=in_corpus,
                reaches_prompt=rank <= version.k_final,
            )
        )
    rank_of = {key: rank for rank, key in enumerate(keys, start=1)}
    in_top = set(top_keys)
    missed = [
        MissedPage(
            doc_id=pages[key][0],
            title=pages[key][1],
            url=pages[key][2],
            grade=labels[key],
            grade_label=golden_set.grade_label(labels[key]),
            rank=rank_of.get(key),
        )
        for key in relevant_keys
        if key not in in_top
    ]
    missed.sort(key=lambda m: (-m.grade, m.rank is None, m.rank or 0, natural_key(m.doc_id)))

    values: list[tuple[str, float]] = []
    evaluation = Evaluation.objects.filter(run=run, version=version, status=Evaluation.Status.DONE).only("id").first()
    per_query = evaluation_per_query(evaluation) if evaluation else None
    completeness = None
    if evaluation is not None:
        row = completeness_rows([evaluation]).get(evaluation.id, {}).get("")
        completeness = run_completeness(row, run, version, evaluation_settings(golden_set), golden_set.slug)
    if per_query is not None and query_id in per_query.query_ids:
        i = per_query.query_ids.index(query_id)
        values = [(metric, float(array[i])) for metric, array in per_query.values.items()]
    found = sum(1 for page in top if page.relevant)
    return Drilldown(
        run=run,
        version=version,
        query=query,
        metadata=snapshot,
        top=top,
        missed=missed,
        relevant_count=len(relevant_keys),
        found_count=found,
        found_in_final=sum(1 for page in top if page.relevant and page.reaches_prompt),
        run_entries=len(keys),
        values=values,
        completeness=completeness,
    )
