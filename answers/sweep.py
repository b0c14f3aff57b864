"""The depth-and-cost sweep page's read model: evaluation's recall and cost sweep of a run on
a version (evaluation.reports.sweep, floor 3), with the answer accuracy of the oracle
experiments that ran on that run and version laid over it at their k_final and, for a sweep
job (OracleExperiment.k_sweep), at each of its k, by the measure each one's report
(answers.report) uses, with its interval.

Only finished experiments with whole figures are laid over the curve: a running or stopped
one has answered part of its queries, and a partial mean is never shown as the whole.
"""

from dataclasses import dataclass

from answers.models import GeneratedAnswer, OracleExperiment
from answers.report import experiment_report, sweep_figures
from evaluation.models import Run
from evaluation.reports.sweep import DepthSweep, depth_sweep, sweep_chart
from goldenset.models import GoldenSet, Version
from lib import charts


@dataclass(frozen=True)
class AccuracyPoint:
    experiment: OracleExperiment
    k: int  # the retrieved context's pages: the experiment's k_final or a k of its sweep
    accuracy: float  # the retrieved context's answer accuracy, a fraction
    by: str  # which accuracy: "judge" (share graded correct) or "exact_match"
    answers: int  # answers averaged (queries with a reference answer, or graded)
    oracle: float | None  # the oracle context's accuracy by the same measure (at k_final)
    low: float = 0.0  # the accuracy's 95% interval
    high: float = 1.0


@dataclass
class RunSweepReport:
    sweep: DepthSweep
    accuracy: list[AccuracyPoint]
    chart: charts.LineChart

    def accuracy_at(self, k: int) -> list[AccuracyPoint]:
        return [point for point in self.accuracy if point.k == k]

    @property
    def cheapest_accurate(self) -> AccuracyPoint | None:
        """The smallest k (the cheapest context) whose answer accuracy meets the target."""
        return next((p for p in sorted(self.accuracy, key=lambda p: p.k) if p.accuracy >= self.sweep.target - 1e-12), None)

    @property
    def rows(self) -> list[tuple]:
        """(sweep point, its accuracy points) for the table: every k of the recall curve."""
        return [(point, self.accuracy_at(point.k)) for point in self.sweep.points]


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
        oracle = pick(figures[GeneratedAnswer.Context.ORACLE])
        for k, at_k in sweep_figures(experiment).items():
            retrieved = pick(at_k)
            if retrieved is None:
                continue
            oracle_value = oracle.value if oracle else None
            points.append(
                AccuracyPoint(experiment, k, retrieved.value, report.accuracy, retrieved.n, oracle_value, retrieved.low, retrieved.high)
            )
    return sorted(points, key=lambda p: (p.k, p.experiment.pk))


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
                        f"experiment {p.experiment.pk}: accuracy {p.accuracy:.3f} [{p.low:.3f}, {p.high:.3f}] ({p.by}) "
                        f"over {p.answers} answers at k = {p.k}",
                    )
                    for p in accuracy
                ],
                color=charts.color(3),
                dots=True,
            )
        )
    return RunSweepReport(sweep=sweep, accuracy=accuracy, chart=sweep_chart(sweep, overlays))


def _estimate(estimate) -> dict | None:
    return None if estimate is None else {"value": estimate.value, "low": estimate.low, "high": estimate.high, "n": estimate.n}


def experiment_sweep(experiment: OracleExperiment) -> list[dict]:
    """A sweep job's figures at each of its k (k_final among them), for the command and the
    API: the retrieved context's exact match, token F1 and judge accuracy with their
    intervals (null until every answer at that k is in), beside recall@k on the version,
    input tokens a query and dollars a month at the set's figures."""
    sweep = depth_sweep(experiment.run, experiment.version, experiment.golden_set)
    rows = []
    for k, figures in sweep_figures(experiment).items():
        point = sweep.at(k)
        rows.append(
            {
                "k": k,
                "recall": point.recall if point else None,
                "tokens": sweep.cost.tokens(k),
                "monthly_dollars": sweep.cost.monthly_dollars(k),
                "answered": figures.answered,
                "queries": figures.queries,
                "exact_match": _estimate(figures.exact_match),
                "token_f1": _estimate(figures.token_f1),
                "judge_accuracy": _estimate(figures.judge_accuracy),
            }
        )
    return rows


def sweep_lines(rows: list[dict], target: float) -> list[str]:
    """The sweep as the command prints it, the cheapest k meeting the target marked."""

    def cell(estimate: dict | None) -> str:
        return "–" if estimate is None else f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"

    def measure(row: dict) -> dict | None:
        return row["judge_accuracy"] or row["exact_match"]

    cheapest = next((row["k"] for row in rows if measure(row) and measure(row)["value"] >= target - 1e-12), None)
    lines = [f"{'k':>4} {'recall@k':>9} {'tokens':>7} {'$ a month':>12} {'exact match':>22} {'judge':>22}"]
    for row in rows:
        recall = "–" if row["recall"] is None else f"{row['recall']:.3f}"
        mark = f"  cheapest ≥ {target:.2f}" if row["k"] == cheapest else ""
        lines.append(
            f"{row['k']:>4} {recall:>9} {row['tokens']:>7} {row['monthly_dollars']:>12,.0f} "
            f"{cell(row['exact_match']):>22} {cell(row['judge_accuracy']):>22}{mark}"
        )
    return lines
