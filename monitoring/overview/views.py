"""The monitoring page of a golden set and its actions, "run now", "probe now" and "probe the
index now".

Everyone who reads the set (goldenset.selectors.READ_ROLES: managers, adjudicators, staff)
reads the page; annotators judge blind and get the 404 a stranger gets, as on the results
pages (the canary strip names pages a query must find). Only managers start a night or a
probe: both call a production system. Each view: fetch with the access check, act through
a service, render or redirect.
"""

from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.alerts.selectors import incidents_unresolved
from goldenset.models import GoldenSet, Membership
from goldenset.selectors import access_golden_set, user_roles
from lib.errors import ConflictError, GoldsetError
from monitoring.endpoints.selectors import endpoint_get, nights_in_progress
from monitoring.index_probes.selectors import index_panels, relevance_at_depth
from monitoring.index_probes.services import index_probe_now
from monitoring.models import Endpoint
from monitoring.nightly.services import nightly_run_start
from monitoring.overview.page import monitoring_page
from monitoring.overview.selectors import MonitoringReport, monitoring_report
from monitoring.probes.services import probe_round_now
from monitoring.tasks import index_probe_task, night_send, probe_round_task

MANAGE_ROLES = (Membership.Role.MANAGER,)
# A slice name is at most this long (evaluation.Score.slice); a longer ?slice= names none.
SLICE_MAX_CHARS = 300


def _can_manage(user, golden_set: GoldenSet) -> bool:
    return user.is_staff or Membership.Role.MANAGER in user_roles(user, golden_set)


def _back(golden_set: GoldenSet, anchor: str = "") -> str:
    return reverse("monitoring", kwargs={"slug": golden_set.slug}) + (f"#{anchor}" if anchor else "")


@login_required
@require_GET
def monitoring_view(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    slice_name = request.GET.get("slice", "").strip()[:SLICE_MAX_CHARS]
    report = monitoring_report(golden_set, slice_name=slice_name)
    endpoints = [trend.endpoint for trend in report.series if trend.endpoint is not None]
    ctx = {
        "golden_set": golden_set,
        "report": report,
        "page": monitoring_page(report),
        "index_panels": index_panels(endpoints, now=timezone.now(), relevance=relevance_of(report)),
        "incidents": incidents_unresolved(golden_set),
        "can_manage": _can_manage(request.user, golden_set),
        "slice_unknown": bool(slice_name) and slice_name not in report.slice_choices,
    }
    return render(request, "monitoring/monitoring.html", ctx)


def relevance_of(report: MonitoringReport) -> dict[int, tuple[float, int, int]]:
    """endpoint id -> (recall, k, version number) of its latest scored night at its depth
    (or None): shown beside ANN recall."""
    return {trend.endpoint.pk: relevance_at_depth(trend.endpoint, trend.latest) for trend in report.series if trend.endpoint is not None}


@login_required
@require_GET
def monitoring_progress(request: HttpRequest, slug: str) -> HttpResponse:
    """The running nights alone, polled by htmx while one runs; the page reloads when none is
    left, to show the night's figures."""
    golden_set = access_golden_set(request.user, slug)
    running = nights_in_progress(golden_set)
    response = render(request, "monitoring/_running.html", {"golden_set": golden_set, "running": running})
    if not running and request.htmx:
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_run_now(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Ask first (GET: how many queries go to which host, which may be production), then start
    a night of the endpoint now (POST: `nightly_run_start`), on a worker after the commit;
    refused while one of its nights is pending or running, so production is not asked twice."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    endpoint = endpoint_get(golden_set, name)
    if request.method == "GET":
        version = golden_set.latest_version()
        ctx = {
            "golden_set": golden_set,
            "endpoint": endpoint,
            "host": urlsplit(endpoint.url).netloc or endpoint.url,
            "queries": version.query_count if version else 0,
            "version": version,
            "running": nights_in_progress(golden_set, endpoint),
        }
        return render(request, "monitoring/endpoints/run_now.html", ctx)
    try:
        night = nightly_run_start(endpoint=endpoint)
    except ConflictError as exc:
        messages.error(request, f"Not started: {exc.message}.")
        return redirect(_back(golden_set, "running"))
    night_send(night)
    messages.success(
        request, f"Night of {endpoint.name} started at {night.slot:%Y-%m-%d %H:%M:%S} UTC: it asks every query of the latest version."
    )
    return redirect(_back(golden_set, "running"))


@login_required
@require_POST
def endpoint_probe_now(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Probe every canary on a first-stage endpoint now: a round a worker runs after the
    commit (`probe_round_now`), never in the request, so a slow endpoint holds no web worker."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    endpoint = endpoint_get(golden_set, name)
    anchor = f"canaries-{endpoint.pk}"
    if endpoint.stage != Endpoint.Stage.FIRST_STAGE:
        messages.error(request, f"Not probed: {endpoint.name} is a reranked endpoint; canaries are probed on first stages.")
        return redirect(_back(golden_set, anchor))
    try:
        probe_round = probe_round_now(endpoint=endpoint)
    except GoldsetError as exc:
        messages.error(request, f"Not probed: {exc.message}.")
        return redirect(_back(golden_set, anchor))
    probe_round_task.delay_on_commit(probe_round.pk)
    messages.success(request, f"Probing the canaries on {endpoint.name}: the round's results appear below when a worker has asked them.")
    return redirect(_back(golden_set, anchor))


@login_required
@require_POST
def endpoint_index_probe_now(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Compare the endpoint's approximate and exact answers now: a probe a worker runs after
    the commit (`index_probe_now`), never in the request (an exact request scans the index)."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    endpoint = endpoint_get(golden_set, name)
    anchor = f"index-{endpoint.pk}"
    try:
        probe = index_probe_now(endpoint=endpoint)
    except GoldsetError as exc:
        messages.error(request, f"Not probed: {exc.message}.")
        return redirect(_back(golden_set, anchor))
    index_probe_task.delay_on_commit(probe.pk)
    messages.success(request, f"Probing the index of {endpoint.name}: ANN recall appears below when a worker has asked both ways.")
    return redirect(_back(golden_set, anchor))
