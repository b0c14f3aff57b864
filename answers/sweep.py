"""The depth-and-cost sweep page's read model: evaluation's recall and cost sweep of a run on
a version (evaluation.reports.sweep, floor 3), with the answer accuracy of the oracle
experiments that ran on that run and version laid over it at their k_final.

Only finished experiments are laid over the curve: a running or stopped one has answered
part of its queries, and a partial mean is never shown as the whole.
"""

from dataclasses import dataclass

from answers.models import GeneratedAnswer, OracleExperiment
from evaluation.models import Run
from evaluation.reports.sweep import DepthSweep, depth_sweep, sweep_chart
from goldenset.models import GoldenSet, Version
from lib import charts


@dataclass(frozen=True)
class AccuracyPoint:
    experiment: OracleExperiment
    k: int  # the experiment's k_final: the retrieved context's pages
    accuracy: float  # exact match of the retrieved context's answers, a fraction
    answers: int  # answers averaged (queries with a reference answer)


@dataclass
class RunSweepReport:
    sweep: DepthSweep
    accuracy: list[AccuracyPoint]
    chart: charts.LineChart


def accuracy_points(run: Run, version: Version) -> list[AccuracyPoint]:
    """Answer accuracy with the retrieved context (exact match, the experiment report's
    default accuracy) of each finished experiment on `run` and `version`, one query."""
    experiments = {e.pk: e for e in OracleExperiment.objects.filter(run=run, version=version, status=OracleExperiment.Status.DONE)}
    if not experiments:
        return []
    rows = (
        GeneratedAnswer.objects.filter(experiment__in=experiments, context=GeneratedAnswer.Context.RETRIEVED, exact_match__isnull=False)
        .values_list("experiment_id", "exact_match")
        .order_by()
    )
    totals: dict[int, list[float]] = {}
    for experiment_id, exact in rows:
        totals.setdefault(experiment_id, []).append(exact)
    points = [
        AccuracyPoint(experiments[pk], experiments[pk].k_final, sum(values) / len(values), len(values)) for pk, values in totals.items()
    ]
    return sorted(points, key=lambda point: (point.k, point.experiment.pk))


def run_sweep_report(golden_set: GoldenSet, run: Run, version: Version) -> RunSweepReport:
    sweep = depth_sweep(run, version, golden_set)
    accuracy = accuracy_points(run, version)
    overlays = []
    if accuracy:
        overlays.append(
            charts.Series(
                label="answer accuracy (exact match, retrieved context)",
                points=[
                    (p.k, p.accuracy, f"experiment {p.experiment.pk}: {p.accuracy:.3f} of {p.answers} answers exact at k_final = {p.k}")
                    for p in accuracy
                ],
                color=charts.color(3),
                dots=True,
            )
        )
    return RunSweepReport(sweep=sweep, accuracy=accuracy, chart=sweep_chart(sweep, overlays))
