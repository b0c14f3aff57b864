"""Pages of runs and results. Each view: fetch with an access check, act, render.

Managers, adjudicators and staff read (goldenset.selectors.READ_ROLES); only managers and
staff upload. Annotators judge blind, so every page here is a 404 to them, as it is to a
stranger. The reads behind each page are in evaluation.reports.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from evaluation.alerts.selectors import alerts_latest
from evaluation.forms import CompareForm, RunUploadForm
from evaluation.models import Run
from evaluation.reports.chunkings import prompt_stage_chunkings
from evaluation.reports.compare import compare_report
from evaluation.reports.results import results_report, scoring_progress
from evaluation.reports.run import query_drilldown, run_detail_report, run_version_numbers, run_versions_report
from evaluation.reports.runs import runs_report
from evaluation.reports.sweep import system_sweeps
from evaluation.run_uploads import run_upload_inline, run_upload_request
from evaluation.selectors import run_get, run_upload_job_get, run_upload_jobs_active, version_numbers
from evaluation.services import run_archive, run_import, run_mark_complete, run_mark_partial, run_unarchive
from evaluation.tasks import run_upload_job_task
from goldenset.models import GoldenSet, Membership, Version
from goldenset.selectors import access_golden_set, user_roles, version_get
from lib.errors import GoldsetError
from lib.params import version_param

UPLOAD_ROLES = (Membership.Role.MANAGER,)
UPLOAD_POLL_SECONDS = 1


def _version(request: HttpRequest, golden_set: GoldenSet, parameter: str = "version", default: int | None = None) -> Version:
    """The version named by a query parameter, `default` or the latest. ParameterError (400)
    when the parameter is not a version number, Http404 when the set has no such version."""
    return version_get(golden_set, version_param(request.GET, parameter, default=default))


def _can_upload(user, golden_set: GoldenSet) -> bool:
    return user.is_staff or bool(user_roles(user, golden_set) & set(UPLOAD_ROLES))


@login_required
@require_GET
def results(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    version = _version(request, golden_set)
    report = results_report(golden_set, version, order=request.GET.get("order", ""), slice_metric=request.GET.get("slice_metric", ""))
    ctx = {
        "golden_set": golden_set,
        "version": version,
        "versions": report.version_numbers,
        "report": report,
        "progress": report.progress,
        "sweeps": system_sweeps(report.results, version, golden_set),
        "compare_form": CompareForm(golden_set=golden_set),
        "alerts": alerts_latest(golden_set),
        "chunkings": prompt_stage_chunkings(
            [(result.run, result.evaluation) for result in report.results if result.scored],
            version_number=version.number,
            k_final=version.k_final,
        ),
    }
    return render(request, "evaluation/results.html", ctx)


@login_required
@require_GET
def results_progress(request: HttpRequest, slug: str) -> HttpResponse:
    """The progress line alone, polled by htmx every 2 s until every run is scored."""
    golden_set = access_golden_set(request.user, slug)
    version = _version(request, golden_set)
    progress = scoring_progress(version)
    response = render(request, "evaluation/_progress.html", {"golden_set": golden_set, "progress": progress})
    if progress.finished and request.htmx:
        # The figures on the page are from before the recompute: reload to show the new ones.
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def runs(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's runs; a manager's POST uploads one (all or nothing) and goes to its page, or,
    for a file over RUN_INLINE_UPLOAD_MB, to the page of the job a worker reads it in."""
    if request.method == "POST":
        golden_set = access_golden_set(request.user, slug, roles=UPLOAD_ROLES)
    else:
        golden_set = access_golden_set(request.user, slug)
    can_upload = _can_upload(request.user, golden_set)
    form = RunUploadForm(request.POST or None, request.FILES or None, golden_set=golden_set)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            upload = data["file"]
            fields = {
                "golden_set": golden_set,
                "fmt": data["format"] or "auto",
                "system": data["system"],
                "stage": data["stage"],
                "name": data["name"],
                "chunking": data["chunking"],
                "user": request.user,
            }
            try:
                if not run_upload_inline(upload.size):
                    job = run_upload_request(upload=upload, job_task=run_upload_job_task, **fields)
                    return redirect("run_upload", slug=golden_set.slug, job_id=job.pk)
                run = run_import(data=upload, source_name=upload.name, **fields)
            except GoldsetError as exc:
                if exc.field in form.fields:
                    form.add_error(exc.field, exc.message)
                else:
                    form.add_error(None, exc.message)
                problems = exc.problems
                status = exc.http_status if exc.http_status == 413 else 400
            else:
                _uploaded_messages(request, run)
                return redirect("run", slug=golden_set.slug, run_id=run.id)
        else:
            status = 400
    report = runs_report(golden_set, show_archived=request.GET.get("archived") == "1")
    ctx = {
        "golden_set": golden_set,
        "report": report,
        "form": form,
        "problems": problems,
        "can_upload": can_upload,
        "inline_upload_mb": settings.RUN_INLINE_UPLOAD_MB,
        "uploads_active": run_upload_jobs_active(golden_set) if can_upload else [],
    }
    return render(request, "evaluation/runs.html", ctx, status=status)


def _uploaded_messages(request: HttpRequest, run: Run) -> None:
    messages.success(request, f"Run {run.name!r} was uploaded: {run.entry_count} entries for {run.query_count} queries.")
    if run.partial:
        messages.warning(request, f"Run {run.name!r} {run.partial_note}.")


@login_required
@require_GET
def run_upload(request: HttpRequest, slug: str, job_id: int, fragment: bool = False) -> HttpResponse:
    """A large upload a worker reads (evaluation.run_uploads). The upload form lands here;
    its status fragment (at a URL of its own, so that the back button never shows the
    fragment alone) polls itself with htmx while the job is queued or running, and ends with
    a link to the run, or with why there is none and every problem, each naming its line.
    Those who read the set's runs read it (managers, adjudicators, staff)."""
    golden_set = access_golden_set(request.user, slug)
    job = run_upload_job_get(golden_set, job_id)
    ctx = {"golden_set": golden_set, "job": job, "poll_seconds": UPLOAD_POLL_SECONDS}
    if fragment:
        return render(request, "evaluation/uploads/_job.html", ctx)
    return render(request, "evaluation/uploads/job.html", ctx)


@login_required
@require_GET
def run_detail(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    run = run_get(golden_set, run_id)
    ctx = {
        "golden_set": golden_set,
        "run": run,
        "report": run_detail_report(run),
        "run_failures": list(run.failures.all()[:20]) if run.failed_query_count else [],
        "can_manage": _can_upload(request.user, golden_set),
    }
    return render(request, "evaluation/run.html", ctx)


# action -> (service, what the message says was done). POST only, managers only.
RUN_LIFECYCLE_ACTIONS = {
    "archive": (run_archive, "archived: it is left out of leaderboards, alerts, coverage flags and pools"),
    "unarchive": (run_unarchive, "unarchived: it is shown everywhere again"),
    "mark-complete": (run_mark_complete, "marked complete: it counts for coverage flags and alerts"),
    "mark-partial": (run_mark_partial, "marked partial again: it is left out of coverage flags and alerts"),
}


@login_required
@require_http_methods(["GET", "POST"])
def run_lifecycle(request: HttpRequest, slug: str, run_id: int, action: str) -> HttpResponse:
    """A manager archives, unarchives, marks complete or marks partial a run, then goes back
    to the page the button was on (`back=runs` for the runs list, else the run page).
    Archiving asks first (GET: what leaves which page); the others undo each other at once."""
    golden_set = access_golden_set(request.user, slug, roles=UPLOAD_ROLES)
    run = run_get(golden_set, run_id)
    if request.method == "GET":
        if action != "archive" or run.archived_at:
            return redirect("run", slug=golden_set.slug, run_id=run.id)
        ctx = {"golden_set": golden_set, "run": run, "back": request.GET.get("back", ""), "archived": request.GET.get("archived", "")}
        return render(request, "evaluation/run_archive.html", ctx)
    service, done = RUN_LIFECYCLE_ACTIONS[action]
    try:
        service(run=run, user=request.user)
    except GoldsetError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Run {run.name!r} was {done}.")
    if request.POST.get("back") == "runs":
        url = reverse("runs", kwargs={"slug": golden_set.slug})
        # Back to the list as it was shown: with the archived runs if they were.
        return redirect(url + ("?archived=1" if request.POST.get("archived") == "1" else ""))
    return redirect("run", slug=golden_set.slug, run_id=run.id)


@login_required
@require_GET
def run_versions(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    """One run across two versions: what moved because the labels changed."""
    golden_set = access_golden_set(request.user, slug)
    run = run_get(golden_set, run_id)
    scored = run_version_numbers(run)
    new = _version(request, golden_set, "to", default=scored[0] if scored else None)
    older = [n for n in scored if n < new.number]
    old = _version(request, golden_set, "from", default=older[0] if older else new.number)
    report = run_versions_report(run, old, new) if old.number != new.number else None
    ctx = {
        "golden_set": golden_set,
        "run": run,
        "old": old,
        "new": new,
        "report": report,
        "versions": version_numbers(golden_set),
        "scored_versions": scored,
    }
    return render(request, "evaluation/run_versions.html", ctx)


@login_required
@require_GET
def run_query(request: HttpRequest, slug: str, run_id: int, query_id: str) -> HttpResponse:
    """One query of one run on one version: what it ranked, and the relevant pages it missed."""
    golden_set = access_golden_set(request.user, slug)
    run = run_get(golden_set, run_id)
    version = _version(request, golden_set)
    drilldown = query_drilldown(golden_set, run, version, query_id)
    return render(request, "evaluation/query.html", {"golden_set": golden_set, "run": run, "version": version, "d": drilldown})


@login_required
@require_GET
def run_query_jump(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    """The drill-down form's target: a typed query id becomes the drill-down's own URL."""
    golden_set = access_golden_set(request.user, slug)
    run = run_get(golden_set, run_id)
    query_id = request.GET.get("query", "").strip()
    if not query_id:
        return redirect("run", slug=golden_set.slug, run_id=run.id)
    url = reverse("run_query", kwargs={"slug": golden_set.slug, "run_id": run.id, "query_id": query_id})
    version = version_param(request.GET)
    return redirect(f"{url}?{urlencode({'version': version})}" if version else url)


@login_required
@require_GET
def compare(request: HttpRequest, slug: str) -> HttpResponse:
    """Two runs on one version: per-metric differences and their significance."""
    golden_set = access_golden_set(request.user, slug)
    version = _version(request, golden_set)
    form = CompareForm(request.GET if "a" in request.GET or "b" in request.GET else None, golden_set=golden_set)
    report = None
    if form.is_bound and form.is_valid():
        report = compare_report(version, form.cleaned_data["a"], form.cleaned_data["b"], duel_metric=request.GET.get("duel", ""))
    ctx = {"golden_set": golden_set, "version": version, "versions": version_numbers(golden_set), "form": form, "report": report}
    if report is not None and report.ready:
        ctx["duel_sides"] = [("a", report.a_wins, report.run_a, report.run_b), ("b", report.b_wins, report.run_b, report.run_a)]
    return render(request, "evaluation/compare.html", ctx)
