"""The depth-and-cost sweep page's read model: evaluation's recall and cost sweep of a run on
a version (evaluation.reports.sweep, floor 3), with the answer accuracy of the oracle
experiments that ran on that run and version laid over it at their k_final, as each one's
report (answers.report) gives it.

Only finished experiments with whole figures are laid over the curve: a running or stopped
one has answered part of its queries, and a partial mean is never shown as the whole.
"""

from dataclasses import dataclass

from answers.models import GeneratedAnswer, OracleExperiment
from answers.report import experiment_report
from evaluation.models import Run
from evaluation.reports.sweep import DepthSweep, depth_sweep, sweep_chart
from goldenset.models import GoldenSet, Version
from lib import charts


@dataclass(frozen=True)
class AccuracyPoint:
    experiment: OracleExperiment
    k: int  # the experiment's k_final: the retrieved context's pages
    accuracy: float  # the retrieved context's answer accuracy, a fraction
    by: str  # which accuracy: "judge" (share graded correct) or "exact_match"
    answers: int  # answers averaged (queries with a reference answer, or graded)
    oracle: float | None  # the oracle context's accuracy by the same measure


@dataclass
class RunSweepReport:
    sweep: DepthSweep
    accuracy: list[AccuracyPoint]
    chart: charts.LineChart


def accuracy_points(run: Run, version: Version) -> list[AccuracyPoint]:
    """The answer accuracy with the retrieved context of each finished experiment on `run`
    and `version`, as its report gives it (the judge's when every answer is graded, else
    exact match); an experiment whose figures are not whole is left out."""
    experiments = OracleExperiment.objects.filter(run=run, version=version, status=OracleExperiment.Status.DONE).select_related(
        "version", "run", "judge"
    )
    points = []
    for experiment in experiments.order_by("k_final", "pk"):
        report = experiment_report(experiment)
        figures = report.overall.contexts
        pick = (lambda f: f.judge_accuracy) if report.accuracy == "judge" else (lambda f: f.exact_match)
        retrieved = pick(figures[GeneratedAnswer.Context.RETRIEVED])
        if retrieved is None:
            continue
        oracle = pick(figures[GeneratedAnswer.Context.ORACLE])
        points.append(
            AccuracyPoint(experiment, experiment.k_final, retrieved.value, report.accuracy, retrieved.n, oracle.value if oracle else None)
        )
    return points


def run_sweep_report(golden_set: GoldenSet, run: Run, version: Version) -> RunSweepReport:
    sweep = depth_sweep(run, version, golden_set)
    accuracy = accuracy_points(run, version)
    overlays = []
    if accuracy:
        overlays.append(
            charts.Series(
                label="answer accuracy, retrieved context",
                points=[
                    (
                        p.k,
                        p.accuracy,
                        f"experiment {p.experiment.pk}: accuracy {p.accuracy:.3f} ({p.by}) over {p.answers} answers at k_final = {p.k}",
                    )
                    for p in accuracy
                ],
                color=charts.color(3),
                dots=True,
            )
        )
    return RunSweepReport(sweep=sweep, accuracy=accuracy, chart=sweep_chart(sweep, overlays))
