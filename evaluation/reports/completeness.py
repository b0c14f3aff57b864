"""How far a run's scores on one version can be trusted, as the pages show it: Judged@k,
leave-one-run-out and the warning they raise. The figures are computed by
evaluation.completeness and stored as Completeness rows; this reads them."""

import shlex
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.models import Completeness, Evaluation, EvaluationSettings, Run
from goldenset.models import Version

# How the warning tells a manager to pool a run (labeling's build_pool command), to the
# depth leave-one-run-out assumes the pool has.
POOL_COMMAND = "build_pool {slug} --runs {run} --depth {depth}"
# Float noise: a mean of exactly 0.9 may come out as 0.8999999999999999, which is not under 0.9.
_EPSILON = 1e-9


def _two_figures(value: float, floor: float) -> tuple[str, str]:
    """`value` and `floor` printed with the fewest decimals (2 or more) that tell them apart,
    so that 0.895 under a floor of 0.90 never reads "0.90 < 0.90"."""
    for digits in range(2, 7):
        a, b = f"{value:.{digits}f}", f"{floor:.{digits}f}"
        if a != b:
            return a, b
    return f"{value:.6f}", f"{floor:.6f}"


@dataclass(frozen=True)
class RunCompleteness:
    """One run's completeness figures on one version and whether its scores there are to
    be trusted. `judged_final` and `judged_first` are None when the evaluation was computed
    before they were stored; `row`, the stored row with the leave-one-run-out figures, may
    be absent where a page needs Judged@k alone.

    Judged@k values and the leave-one-run-out scores are fractions; the changes are points.
    The scores are unreliable when Judged@k_final is under the set's `floor`.
    """

    judged_final: float | None
    judged_first: float | None
    row: Completeness | None
    run_id: int
    run_name: str
    slug: str
    version_number: int
    k_first: int
    k_final: int
    floor: float
    pool_depth: int

    @property
    def unreliable(self) -> bool:
        return self.judged_final is not None and self.judged_final < self.floor - _EPSILON

    @property
    def pool_command(self) -> str:
        return POOL_COMMAND.format(slug=self.slug, run=shlex.quote(self.run_name), depth=self.pool_depth)

    @property
    def finding(self) -> str:
        """ "Judged@8 = 0.62 < 0.90 on v3: scores are unreliable", or "" when the scores are
        reliable (or have no completeness figures). Pages put a link to the pool form beside it."""
        if not self.unreliable:
            return ""
        judged, floor = _two_figures(self.judged_final, self.floor)
        return f"Judged@{self.k_final} = {judged} < {floor} on v{self.version_number}: scores are unreliable"

    @property
    def warning(self) -> str:
        """The finding with what to do about it on the command line, for commands and titles:
        "...: scores are unreliable; pool this run (build_pool ...)"."""
        return f"{self.finding}; pool this run ({self.pool_command})" if self.unreliable else ""

    @property
    def has_loro(self) -> bool:
        return self.row is not None and self.row.loro_other_runs is not None


def completeness_rows(evaluations: Iterable[Evaluation], *, overall_only: bool = True) -> dict[int, dict[str, Completeness]]:
    """evaluation id -> slice name -> its Completeness row, in one query however many evaluations."""
    rows = Completeness.objects.filter(evaluation__in=[e.id for e in evaluations])
    if overall_only:
        rows = rows.filter(slice="")
    found: dict[int, dict[str, Completeness]] = defaultdict(dict)
    for row in rows:
        found[row.evaluation_id][row.slice] = row
    return found


def run_completeness(
    row: Completeness | None,
    run: Run,
    version: Version,
    settings: EvaluationSettings,
    slug: str,
) -> RunCompleteness:
    """The figures of `row` (None: not stored) for `run` on `version`, held to the set's
    Judged@k floor (`settings`; `slug` is the set's, for the pooling command)."""
    return RunCompleteness(
        judged_final=row.judged_at_k_final if row else None,
        judged_first=row.judged_at_k_first if row else None,
        row=row,
        run_id=run.id,
        run_name=run.name,
        slug=slug,
        version_number=version.number,
        k_first=version.k_first,
        k_final=version.k_final,
        floor=settings.judged_floor,
        pool_depth=settings.completeness_depth,
    )
