"""The depth-and-cost sweep of a run on a version: recall@k for k = 1..K beside what k pages
cost in the prompt, with the curve's knee and the cheapest k whose recall meets the seed's
final target (SEMANTICS.md, "Depth and cost").

It replaces the results page's cost calculator, and keeps the guarantee that calculator
learnt the hard way (issue 30 item 1): a run that returns only k_final pages a query has no
recall past k_final to buy, so no price per point is worked out for it, never a division by
a zero gain.

Recall comes from the evaluation's stored recall curve (evaluation.services._recall_curve,
computed with the scoring engine on the version's labels when the run was scored), so the
sweep reads one row and scores nothing. Answer accuracy is laid over the curve by the
answers app (floor 4), which hands its points to `sweep_chart`.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from evaluation.models import Evaluation, Run
from evaluation.reports.results import RunResult, system_funnels
from evaluation.reports.targets import FINAL_TARGET
from goldenset.models import GoldenSet, Version
from lib import charts


@dataclass(frozen=True)
class PromptCost:
    """The seed's cost maths at a set's figures: k pages take k x tokens_per_page input
    tokens (no more than the context budget when the set has one), paid at
    price_per_million dollars per million input tokens, monthly_queries times a month."""

    tokens_per_page: int
    price_per_million: float  # dollars per million input tokens
    monthly_queries: int
    context_token_budget: int | None = None

    @classmethod
    def of(cls, golden_set: GoldenSet) -> "PromptCost":
        return cls(
            tokens_per_page=golden_set.tokens_per_page,
            price_per_million=float(Decimal(golden_set.price_per_million_input)),
            monthly_queries=golden_set.monthly_queries,
            context_token_budget=golden_set.context_token_budget,
        )

    def tokens(self, k: int) -> int:
        """Input tokens of context a query with k pages, capped by the budget."""
        tokens = k * self.tokens_per_page
        return min(tokens, self.context_token_budget) if self.context_token_budget else tokens

    def monthly_dollars(self, k: int) -> float:
        """Dollars a month for the context of k pages on every query."""
        return self.tokens(k) * self.price_per_million / 1_000_000 * self.monthly_queries

    @property
    def pages_in_budget(self) -> int | None:
        """How many whole pages the context budget holds; None without a budget."""
        if not self.context_token_budget:
            return None
        return self.context_token_budget // max(self.tokens_per_page, 1)


@dataclass(frozen=True)
class SweepPoint:
    k: int
    recall: float  # mean recall@k, a fraction
    tokens: int  # input tokens of context a query
    monthly_dollars: float
    # Dollars a month for each point of recall gained over k_final; None at or under k_final
    # and wherever nothing is gained.
    dollars_per_point: float | None


@dataclass
class DepthSweep:
    """One run's sweep on one version. `points` run k = 1..depth (at the stored curve's
    cut-offs, every k up to 100), depth being the run's own but at least k_final and at most
    k_first; `note` says why there are none, or that no price per point is given."""

    run: Run
    version_number: int
    k_first: int
    k_final: int
    depth: int
    cost: PromptCost
    points: list[SweepPoint]
    target: float = FINAL_TARGET
    returns_only_k_final: bool = False
    note: str = ""

    def at(self, k: int) -> SweepPoint | None:
        return next((point for point in self.points if point.k == k), None)

    @property
    def knee(self) -> SweepPoint | None:
        """Where the curve bends: the point farthest above the straight line from its first
        point to its last, both axes scaled to [0, 1] (Satopää et al.'s Kneedle, one
        pass). None for a flat curve or fewer than three points."""
        if len(self.points) < 3:
            return None
        first, last = self.points[0], self.points[-1]
        span_k, span_recall = last.k - first.k, last.recall - first.recall
        if span_k <= 0 or span_recall <= 0:
            return None
        best, best_gap = None, 0.0
        for point in self.points:
            gap = (point.recall - first.recall) / span_recall - (point.k - first.k) / span_k
            if gap > best_gap + 1e-12:
                best, best_gap = point, gap
        return best

    @property
    def cheapest_meeting_target(self) -> SweepPoint | None:
        """The smallest k (so the cheapest context) whose recall meets the target."""
        return next((point for point in self.points if point.recall >= self.target - 1e-12), None)

    @property
    def recall_final(self) -> float | None:
        point = self.at(self.k_final)
        return point.recall if point else None


def run_depth(run: Run) -> int:
    """A run's depth: its entries over the queries it answers, rounded up (a run that
    returns k pages a query has depth k)."""
    answered = run.answered_query_count or run.query_count
    return max(math.ceil(run.entry_count / answered), 1) if answered else 0


def depth_sweep(run: Run, version: Version, golden_set: GoldenSet, evaluation: Evaluation | None = None) -> DepthSweep:
    """The sweep of `run` on `version` at `golden_set`'s cost figures, from the stored
    recall curve of its evaluation (`evaluation` when the caller has it loaded)."""
    if evaluation is None:
        evaluation = Evaluation.objects.filter(run=run, version=version).defer("per_query").first()
    cost = PromptCost.of(golden_set)
    # Never short of k_final: a run of fewer pages still has a recall@k_final (what the
    # prompt sees today), and the stored curve holds it.
    depth = min(max(run_depth(run), version.k_final), version.k_first)
    sweep = DepthSweep(
        run=run,
        version_number=version.number,
        k_first=version.k_first,
        k_final=version.k_final,
        depth=depth,
        cost=cost,
        points=[],
        returns_only_k_final=run.entry_count <= run.query_count * version.k_final,
    )
    if evaluation is None or evaluation.status != Evaluation.Status.DONE:
        sweep.note = f"{run.name} is not scored on v{version.number} yet."
        return sweep
    if not evaluation.recall_curve:
        sweep.note = f"{run.name} has no recall curve on v{version.number} (no query with a relevant page)."
        return sweep
    curve = [(int(k), float(value)) for k, value in evaluation.recall_curve if int(k) <= max(depth, 1)]
    recall_final = dict(curve).get(version.k_final)
    final_dollars = cost.monthly_dollars(version.k_final)
    for k, recall in curve:
        per_point = None
        if not sweep.returns_only_k_final and recall_final is not None and k > version.k_final:
            # Rounded to the hundredth of a point shown: recall@16 equal to recall@8 can
            # differ in a float's last bits, and that is no gain to put a price on.
            gain = round((recall - recall_final) * 100, 2)
            added = cost.monthly_dollars(k) - final_dollars
            per_point = added / gain if gain > 0 else None
        sweep.points.append(SweepPoint(k, recall, cost.tokens(k), cost.monthly_dollars(k), per_point))
    if sweep.returns_only_k_final:
        sweep.note = (
            f"{run.name} returns no more than k_final = {version.k_final} pages a query: "
            f"it cannot show what a larger final k would buy, so no price per point is given."
        )
    return sweep


def sweep_chart(sweep: DepthSweep, overlays: Sequence[charts.Series] = ()) -> charts.LineChart:
    """The recall curve against k with the knee, the cheapest k meeting the target and
    k_final marked; `overlays` are further lines of fractions (answer accuracy)."""
    points = [
        (p.k, p.recall, f"recall@{p.k} = {p.recall:.3f} on v{sweep.version_number}; {p.tokens} tokens, ${p.monthly_dollars:,.0f} a month")
        for p in sweep.points
    ]
    series = [charts.Series(label=f"recall@k of {sweep.run.name}", points=points, color=charts.color(0))]
    series += list(overlays)
    x_rules = [(sweep.k_final, f"k_final {sweep.k_final}", "what the prompt sees today", "cutoff")]
    knee, cheapest = sweep.knee, sweep.cheapest_meeting_target
    if knee is not None:
        x_rules.append((knee.k, f"knee {knee.k}", f"the knee: recall@{knee.k} = {knee.recall:.3f}", "boundary"))
    if cheapest is not None and (knee is None or cheapest.k != knee.k):
        x_rules.append((cheapest.k, f"{sweep.target:.2f} at {cheapest.k}", f"the cheapest k with recall ≥ {sweep.target:.2f}", "boundary"))
    k_max = max([sweep.depth, sweep.k_final, 2] + [int(x) for one in overlays for x, _, _ in one.points])
    return charts.line_chart(
        series,
        x_min=1,
        x_max=k_max,
        x_ticks=charts.k_ticks(k_max),
        x_label=f"k (pages in the prompt), 1 to {k_max}",
        y_label="fraction",
        title=f"Recall@k and cost of {sweep.run.name} on v{sweep.version_number}",
        x_rules=x_rules,
        y_rules=[(sweep.target, f"{sweep.target:.2f} target")],
    )


def system_sweeps(results: Sequence[RunResult], version: Version, golden_set: GoldenSet) -> list[tuple[str, DepthSweep]]:
    """(system, sweep of what its prompt sees) for each system of the results page: its
    reranked run, else its first stage (the funnels' choice, evaluation.reports.results)."""
    return [
        (funnel.system, depth_sweep(funnel.final.run, version, golden_set, funnel.final.evaluation))
        for funnel in system_funnels(results, version, loss_limit_points=0.0)
    ]
