"""The cost calculator of the results page: what raising the final k costs in input tokens
(the seed's maths), and what each system's final run would gain by it."""

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.models import Evaluation
from evaluation.reports.results import RunResult, system_funnels
from goldenset.models import Version

# The cost calculator's defaults: the seed's example (400 tokens a chunk, $3 per million
# input tokens, a million queries a month).
DEFAULT_TOKENS_PER_CHUNK = 400
DEFAULT_PRICE_PER_MILLION = 3.0
DEFAULT_MONTHLY_QUERIES = 1_000_000


@dataclass(frozen=True)
class RerankCost:
    """The seed's cost maths: what raising the final k costs in input tokens.

    cost a month = (to_k - from_k) x tokens_per_chunk x price_per_million / 1e6 x monthly_queries
    """

    from_k: int
    to_k: int
    tokens_per_chunk: int
    price_per_million: float  # dollars per million input tokens
    monthly_queries: int

    @property
    def added_chunks(self) -> int:
        return self.to_k - self.from_k

    @property
    def added_tokens_per_query(self) -> int:
        return self.added_chunks * self.tokens_per_chunk

    @property
    def cost_per_query(self) -> float:
        """Dollars per query."""
        return self.added_tokens_per_query * self.price_per_million / 1_000_000

    @property
    def monthly_cost(self) -> float:
        """Dollars per month."""
        return self.cost_per_query * self.monthly_queries


@dataclass(frozen=True)
class RecallGain:
    """What a larger final k buys one system, read off its final run's recall curve."""

    system: str
    run_name: str
    version_number: int
    from_k: int
    to_k: int
    recall_from: float | None
    recall_to: float | None
    monthly_cost: float
    returns_at_most_from_k: bool = False  # the run's rankings are no longer than from_k pages

    @property
    def gain_points(self) -> float | None:
        """Points of recall gained, rounded to the hundredth of a point shown (recall@16
        equal to recall@8 can differ in the last bits of a float: that is no gain)."""
        if self.recall_from is None or self.recall_to is None:
            return None
        return round((self.recall_to - self.recall_from) * 100, 2)

    @property
    def cost_per_point(self) -> float | None:
        """Dollars a month for each point of recall gained; None when nothing is gained."""
        gain = self.gain_points
        return self.monthly_cost / gain if gain and gain > 0 else None

    @property
    def no_gain_reason(self) -> str:
        """Why nothing is gained, when nothing is: what the page shows instead of a price."""
        if self.cost_per_point is not None or self.gain_points is None:
            return ""
        if self.returns_at_most_from_k:
            return f"the run returns only {self.from_k} pages a query"
        return "no recall gained"


@dataclass
class CalculatorReport:
    cost: RerankCost
    gains: list[RecallGain]
    version_number: int
    k_first: int


def calculator_report(version: Version, cost: RerankCost, results: Sequence[RunResult] | None = None) -> CalculatorReport:
    """The cost of raising the final k, and what each system's final run would gain by it
    (`results` are the version's run results when the caller has them already)."""
    if results is None:
        evaluations = Evaluation.objects.filter(version=version, status=Evaluation.Status.DONE).select_related("run").defer("per_query")
        results = [RunResult(run=e.run, evaluation=e, color="") for e in evaluations]
    gains = []
    for funnel in system_funnels(results, version, loss_limit_points=0.0):
        gains.append(
            RecallGain(
                system=funnel.system,
                run_name=funnel.final.run.name,
                version_number=version.number,
                from_k=cost.from_k,
                to_k=cost.to_k,
                recall_from=funnel.final.recall_at(cost.from_k),
                recall_to=funnel.final.recall_at(cost.to_k),
                monthly_cost=cost.monthly_cost,
                returns_at_most_from_k=funnel.final.run.entry_count <= funnel.final.run.query_count * cost.from_k,
            )
        )
    return CalculatorReport(cost=cost, gains=gains, version_number=version.number, k_first=version.k_first)
