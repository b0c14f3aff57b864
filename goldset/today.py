"""The golden set's home, with "what needs you today": open incidents, underpowered slices,
stale labels and pools waiting for judges.

It composes four apps (goldenset's page, evaluation's incidents and scores, labeling's
coverage and pools), so it lives on the top floor with the project's urls; each figure comes
from the selector its app keeps, nothing is counted twice.
"""

from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.alerts.selectors import incidents_for
from evaluation.alerts.slice_power import SlicePower, slice_power
from evaluation.models import Evaluation, EvaluationSettings, Incident
from evaluation.selectors import evaluation_settings, run_counted
from goldenset.models import GoldenSet
from goldenset.views import golden_set_context
from labeling.coverage.selectors import stale_label_pairs
from labeling.pools.selectors import pool_queue, pools_of

INCIDENTS_SHOWN = 5
POOLS_LOOKED_AT = 20


@dataclass
class Today:
    """What needs a person on the set's home page."""

    incidents: list[Incident] = field(default_factory=list)
    incidents_open: int = 0
    underpowered: list[SlicePower] = field(default_factory=list)
    drop_points: float = 0.0
    stale_labels: int = 0
    pools_waiting: list[tuple[object, int]] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return bool(self.incidents_open or self.underpowered or self.stale_labels or self.pools_waiting)


def underpowered_slices(golden_set: GoldenSet, settings: EvaluationSettings | None = None) -> list[SlicePower]:
    """The slices too small for their drop test to detect the set's threshold, by slice, as
    the latest scored run on the latest version shows them (evaluation.alerts.slice_power:
    the monitoring and results pages' one rule)."""
    latest = (
        Evaluation.objects.filter(run_counted("run__"), version__golden_set=golden_set, status=Evaluation.Status.DONE)
        .select_related("run", "version__golden_set")
        .order_by("-version__number", "-run__created_at", "-run_id")
        .first()
    )
    if latest is None:
        return []
    powers = slice_power(latest, settings=settings)
    return [powers[name] for name in sorted(powers) if name and powers[name].underpowered]


def needs_today(golden_set: GoldenSet) -> Today:
    settings = evaluation_settings(golden_set)
    open_incidents = incidents_for(golden_set, state=Incident.State.OPEN)
    version = golden_set.versions.order_by("-number").first()
    waiting = []
    for pool in pools_of(golden_set)[:POOLS_LOOKED_AT]:
        queued = pool_queue(pool).count()
        if queued:
            waiting.append((pool, queued))
    return Today(
        incidents=list(open_incidents[:INCIDENTS_SHOWN]),
        incidents_open=open_incidents.count(),
        underpowered=underpowered_slices(golden_set, settings),
        drop_points=settings.alert_drop_points,
        stale_labels=len(stale_label_pairs(version)) if version is not None else 0,
        pools_waiting=waiting,
    )


@login_required
@require_GET
def golden_set_home(request: HttpRequest, slug: str) -> HttpResponse:
    """The golden set's page (goldenset.views.golden_set_context) with what needs you today."""
    ctx = golden_set_context(request, slug)
    ctx["today"] = needs_today(ctx["golden_set"])
    return render(request, "goldenset/golden_set.html", ctx)
