"""The runs list: every run of a set with its status, its funnel's recalls and its Judged@k
on the set's latest version."""

from dataclasses import dataclass

from django.db.models import F, OuterRef, Subquery

from evaluation.models import Completeness, Evaluation, Run, Score
from evaluation.reports.completeness import RunCompleteness
from evaluation.reports.unreliable import UnreliableSummary, unreliable_summary
from evaluation.selectors import evaluation_settings, run_not_archived
from goldenset.models import GoldenSet, Version


@dataclass
class RunRow:
    run: Run
    evaluation: Evaluation | None
    recall_first: float | None
    recall_final: float | None
    completeness: RunCompleteness | None = None


@dataclass
class RunsReport:
    rows: list[RunRow]
    latest: Version | None
    archived_count: int = 0  # archived runs of the set, shown or not
    show_archived: bool = False

    @property
    def unreliable_summary(self) -> UnreliableSummary:
        """The page's one warning about the live runs under the floor on the latest version,
        per series (archived runs keep their scores but no warning)."""
        return unreliable_summary((row.run, row.completeness) for row in self.rows if not row.run.archived_at)


def runs_report(golden_set: GoldenSet, *, show_archived: bool = False) -> RunsReport:
    """Every run of the set with its status, funnel recalls and Judged@k on the latest
    version: six queries however many runs. Archived runs only `show_archived`, after the
    others; their count either way, for the "show archived (N)" link."""
    latest = golden_set.versions.order_by("-number").first()
    runs = Run.objects.filter(golden_set=golden_set).select_related("uploaded_by", "series", "archived_by")
    archived_count = runs.filter(archived_at__isnull=False).count()
    if not show_archived:
        runs = runs.filter(run_not_archived())
    # Archived runs after the others: the list is read top-down for the live systems.
    runs = list(runs.order_by(F("archived_at").asc(nulls_first=True), "system", "stage", "name"))
    evaluations: dict[int, Evaluation] = {}
    scores: dict[tuple[int, str], float] = {}
    settings = None
    if latest is not None:
        names = [f"recall@{latest.k_first}", f"recall@{latest.k_final}"]
        overall = Completeness.objects.filter(evaluation=OuterRef("pk"), slice="")
        evaluations = {
            e.run_id: e
            for e in Evaluation.objects.filter(version=latest)
            .defer("per_query", "recall_curve")
            .annotate(
                judged_final=Subquery(overall.values("judged_at_k_final")[:1]),
                judged_first=Subquery(overall.values("judged_at_k_first")[:1]),
            )
        }
        found = Score.objects.filter(evaluation__version=latest, slice="", metric__in=names).values_list(
            "evaluation__run_id", "metric", "value"
        )
        scores = {(run_id, metric): value for run_id, metric, value in found}
        settings = evaluation_settings(golden_set)
    rows = []
    for run in runs:
        evaluation = evaluations.get(run.id)
        completeness = None
        if evaluation is not None and evaluation.status == Evaluation.Status.DONE:
            completeness = RunCompleteness(
                judged_final=evaluation.judged_final,
                judged_first=evaluation.judged_first,
                row=None,
                run_id=run.id,
                run_name=run.name,
                slug=golden_set.slug,
                version_number=latest.number,
                k_first=latest.k_first,
                k_final=latest.k_final,
                floor=settings.judged_floor,
                pool_depth=settings.completeness_depth,
            )
        rows.append(
            RunRow(
                run=run,
                evaluation=evaluation,
                recall_first=scores.get((run.id, f"recall@{latest.k_first}")) if latest else None,
                recall_final=scores.get((run.id, f"recall@{latest.k_final}")) if latest else None,
                completeness=completeness,
            )
        )
    return RunsReport(rows=rows, latest=latest, archived_count=archived_count, show_archived=show_archived)
