"""The coverage page's action: pool each system's latest runs for the slices a version's
coverage report flags, as a new pool or an extension of one. It composes coverage_report and
the pool services, and adds no write of its own."""

from dataclasses import dataclass

from goldenset.models import GoldenSet, Query, Version
from labeling.coverage.selectors import CoverageReport, coverage_report, flagged_queries
from labeling.models import Pool
from labeling.pools.services import PoolBuildResult, pool_build, pool_extend, pool_settings_check
from lib.errors import GoldsetError

# What a pool for flagged slices takes from each run when nobody says otherwise: the top
# 20, the depth at which the seed's first stage finds most of what it will ever find.
DEFAULT_FLAGGED_POOL_DEPTH = 20


@dataclass
class FlaggedPoolResult:
    result: PoolBuildResult
    flagged_slices: list[str]
    flagged_queries: int

    def lines(self) -> list[str]:
        out = [
            f"{len(self.flagged_slices)} flagged slice(s): {', '.join(self.flagged_slices)}; "
            f"the pool covers their {self.flagged_queries} queries only",
        ]
        return out + self.result.lines()


def flagged_slices_pool_build(
    *,
    golden_set: GoldenSet,
    version: Version,
    depth: int = DEFAULT_FLAGGED_POOL_DEPTH,
    strategy: str = "depth",
    budget: int | None = None,
    pool: Pool | None = None,
    user=None,
) -> FlaggedPoolResult:
    """Pool each system's latest runs (latest_runs) at `depth` for the slices of `version`
    that coverage_report flags: a new pool, or `pool` extended with their pairs (it keeps
    its strategy and budget). GoldsetError when nothing is flagged or no run is scored on
    the version; pool_build's and pool_extend's own errors pass through. All or nothing,
    as they are."""
    report, queries = flagged_slices_check(
        golden_set=golden_set,
        version=version,
        depth=depth,
        strategy=strategy,
        budget=budget,
        pool=pool,
    )
    runs = [r.run for r in report.runs]
    if pool is None:
        result = pool_build(
            golden_set=golden_set,
            runs=runs,
            depth=depth,
            strategy=strategy,
            budget=budget,
            queries=queries,
            user=user,
        )
    else:
        result = pool_extend(pool=pool, runs=runs, depth=depth, queries=queries)
    return FlaggedPoolResult(
        result=result,
        flagged_slices=[one.label for one in report.flagged],
        flagged_queries=len(queries),
    )


def flagged_slices_check(
    *,
    golden_set: GoldenSet,
    version: Version,
    depth: object,
    strategy: object,
    budget: object,
    pool: Pool | None = None,
) -> tuple[CoverageReport, list[Query]]:
    """What flagged_slices_pool_build refuses before it reads a run (GoldsetError naming
    the field), so that a page can refuse it at once; returns flagged_slices_queries'."""
    pool_settings_check(depth=depth, strategy=strategy, budget=budget)
    if pool is not None:
        if pool.golden_set_id != golden_set.pk:
            raise GoldsetError(f"pool {pool.pk} is not a pool of {golden_set.slug!r}", field="pool")
        if budget is not None:
            raise GoldsetError(f"a budget is set when a pool is built; pool {pool.pk} keeps its own", field="budget")
    return flagged_slices_queries(golden_set=golden_set, version=version)


def flagged_slices_queries(*, golden_set: GoldenSet, version: Version) -> tuple[CoverageReport, list[Query]]:
    """The coverage report of `version` and the active queries of its flagged slices,
    checked poolable: GoldsetError when nothing is flagged, no run is scored on the
    version, or the flagged slices hold no active query."""
    report = coverage_report(golden_set, version)
    if not report.flagged:
        raise GoldsetError(f"no slice of {golden_set.slug!r} v{version.number} is under its targets: nothing to pool")
    if not report.runs:
        raise GoldsetError(f"no run of {golden_set.slug!r} is scored on v{version.number}: upload runs before pooling", field="runs")
    queries = flagged_queries(golden_set, report)
    if not queries:
        raise GoldsetError(f"the flagged slices of {golden_set.slug!r} v{version.number} hold no active query to pool", field="queries")
    return report, queries
