"""Which of the runs a page shows have unreliable scores, said once: one line for the page
and one per series (a monitored endpoint's nights, an eval job's uploads), with the runs
behind a fold, where each run used to carry the whole warning. Thirty-three nights under
the floor read as thirty-three identical red boxes; a team stops reading them.

The rule itself, Judged@k_final under the set's floor, is RunCompleteness.unreliable: this
module only counts and groups what that rule says. Rows and chart legends carry a mark
(UNRELIABLE_MARK) that the page's legend line explains once."""

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

from evaluation.models import Evaluation, Run
from evaluation.reports.completeness import RunCompleteness, completeness_rows, run_completeness
from evaluation.selectors import evaluation_settings, run_not_archived
from goldenset.models import GoldenSet
from lib.ids import natural_key

# The mark beside a run whose scores are unreliable, in rows, chart labels and tooltips.
UNRELIABLE_MARK = "†"


def floor_text(floor: float) -> str:
    """0.9 -> "0.90", 0.502 -> "0.502": two decimals, more only where the floor has them."""
    text = f"{floor:.6f}".rstrip("0")
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals.ljust(2, '0')}"


def _have(count: int) -> str:
    return "has" if count == 1 else "have"


@dataclass(frozen=True)
class UnreliableGroup:
    """The runs of one series shown on a page (`series` "" for the runs outside any), and
    those of them whose scores are unreliable, in the page's order."""

    series: str
    shown: int
    under: tuple[RunCompleteness, ...]
    k_final: int
    floor: float
    alone: bool  # the only group on the page: its runs need no "outside a series"

    @property
    def noun(self) -> str:
        if self.series:
            return f"night{'s' if self.shown != 1 else ''} of {self.series}"
        return "runs" if self.alone else "runs outside a series"

    @property
    def line(self) -> str:
        """ "14 of 33 nights of prod-hybrid have Judged@10 under 0.90"."""
        count = len(self.under)
        return f"{count} of {self.shown} {self.noun} {_have(count)} Judged@{self.k_final} under {floor_text(self.floor)}"

    @property
    def pool_query(self) -> str:
        """The completeness page's pool form filled in with these runs, at the depth
        leave-one-run-out assumes: "run=4&run=7&depth=100" (the page takes ?run= again for
        more runs)."""
        return urlencode([*(("run", c.run_id) for c in self.under), ("depth", self.under[0].pool_depth)])


@dataclass(frozen=True)
class UnreliableSummary:
    """What a page says once about the unreliable scores of the runs it shows: `line` for
    the page, `groups` (only those with a run under the floor) for each series. False when
    no run shown is under the floor, so a page writes `{% if summary %}`. Judged@k figures
    are fractions, on version `version_number`."""

    shown: int
    groups: tuple[UnreliableGroup, ...]
    version_number: int | None
    k_final: int | None
    floor: float | None
    best: float | None  # the highest Judged@k_final of the runs shown

    @property
    def under(self) -> int:
        return sum(len(group.under) for group in self.groups)

    def __bool__(self) -> bool:
        return self.under > 0

    @property
    def every_run(self) -> bool:
        """No run shown passes the floor: the set's labels, not one system, are short (the
        demo's own labels never reach it), and the page says so once."""
        return bool(self) and self.under == self.shown

    @property
    def one_group(self) -> bool:
        """Every run shown is of the one group with runs under the floor: the page's line
        is that group's, and a second line would repeat it."""
        return len(self.groups) == 1 and self.groups[0].shown == self.shown

    @property
    def line(self) -> str:
        if not self:
            return ""
        floor = floor_text(self.floor)
        if self.every_run and self.shown > 1:
            return (
                f"None of the {self.shown} runs reaches Judged@{self.k_final} of {floor} on v{self.version_number} "
                f"(the best has {self.best:.2f}): every score is unreliable until more of what the runs retrieve is judged"
            )
        if self.one_group:
            return f"{self.groups[0].line} on v{self.version_number}: {'its' if self.under == 1 else 'their'} scores are unreliable"
        return (
            f"{self.under} of {self.shown} runs {_have(self.under)} Judged@{self.k_final} under {floor} "
            f"on v{self.version_number}: {'its' if self.under == 1 else 'their'} scores are unreliable"
        )

    @property
    def legend(self) -> str:
        """The one line that explains the mark on rows and chart legends."""
        if not self:
            return ""
        return f"{UNRELIABLE_MARK} Judged@{self.k_final} under {floor_text(self.floor)} on v{self.version_number}: scores unreliable"


def unreliable_summary(shown: Iterable[tuple[Run, RunCompleteness | None]]) -> UnreliableSummary:
    """The summary of the runs a page shows, each with its completeness on the page's
    version (None: not scored there, so neither counted nor flagged). Series runs are
    grouped by their series (`run.series`, to be fetched with the run); the runs outside a
    series come first, then the series by name. No query."""
    by_series: dict[str, list[RunCompleteness]] = {}
    for run, completeness in shown:
        if completeness is None or completeness.judged_final is None:
            continue
        by_series.setdefault(run.series.name if run.series_id else "", []).append(completeness)
    everything = [c for group in by_series.values() for c in group]
    if not everything:
        return UnreliableSummary(shown=0, groups=(), version_number=None, k_final=None, floor=None, best=None)
    first = everything[0]
    groups = tuple(
        UnreliableGroup(
            series=series,
            shown=len(by_series[series]),
            under=tuple(c for c in by_series[series] if c.unreliable),
            k_final=first.k_final,
            floor=first.floor,
            alone=len(by_series) == 1,
        )
        for series in sorted(by_series, key=lambda name: (name != "", natural_key(name)))
    )
    return UnreliableSummary(
        shown=len(everything),
        groups=tuple(group for group in groups if group.under),
        version_number=first.version_number,
        k_final=first.k_final,
        floor=first.floor,
        best=max(c.judged_final for c in everything),
    )


def golden_set_unreliable_summary(golden_set: GoldenSet, *, run_ids: Iterable[int] | None = None) -> UnreliableSummary:
    """The summary over every live run of the set scored on its latest version (or those of
    `run_ids` only: the nights a monitoring page shows), as the completeness page lists
    them: what a page that does not load the runs' completeness itself, or load_demo's
    report, says once. Four queries however many runs."""
    latest = golden_set.versions.order_by("-number").first()
    if latest is None:
        return unreliable_summary(())
    settings = evaluation_settings(golden_set)
    chosen = Evaluation.objects.filter(run_not_archived("run__"), run__golden_set=golden_set, version=latest)
    if run_ids is not None:
        chosen = chosen.filter(run_id__in=list(run_ids))
    evaluations = list(
        chosen.filter(status=Evaluation.Status.DONE)
        .select_related("run__series")
        .defer("per_query", "recall_curve", "hop_figures")
        .order_by("run_id")
    )
    rows = completeness_rows(evaluations)
    return unreliable_summary(
        (e.run, run_completeness(rows.get(e.id, {}).get(""), e.run, latest, settings, golden_set.slug)) for e in evaluations
    )
