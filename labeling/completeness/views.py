"""The completeness page of a golden set: pools and their progress, Judged@k per run and
slice, leave-one-run-out, completeness samples and their estimate; and, for managers,
the forms that build or extend a pool and draw a sample.

Managers, adjudicators and staff read (goldenset.selectors.READ_ROLES); only managers and
staff post. Annotators judge blind, so the page is a 404 to them, as to a stranger. The
reads are labeling.completeness.selectors.completeness_report; the writes are jobs
(labeling.jobs): a form's POST refuses at once what the service would refuse before
reading a run, else records the job and comes back to the page, whose jobs section
follows it until a worker has built the pool or drawn the sample (all or nothing), then
reloads the page.
"""

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from goldenset.models import GoldenSet, Membership
from goldenset.selectors import access_golden_set, user_roles
from labeling.completeness.forms import PoolForm, SampleForm
from labeling.completeness.selectors import POOL_SUMMARY_MAX_AGE, completeness_report
from labeling.jobs.selectors import recent_pool_jobs
from labeling.jobs.services import pool_job_submit
from labeling.models import PoolJob
from labeling.tasks import pool_job_task, pool_summary_task
from lib.errors import GoldsetError
from lib.params import ids_param

MANAGE_ROLES = (Membership.Role.MANAGER,)
# How often the jobs section asks whether the jobs it follows are done.
JOBS_POLL_SECONDS = 2


def _can_manage(user, golden_set: GoldenSet) -> bool:
    return user.is_staff or bool(user_roles(user, golden_set) & set(MANAGE_ROLES))


def _refused(form: forms.Form, exc: GoldsetError) -> list[str]:
    """Show a service's refusal on the form, beside its field where the form has it."""
    form.add_error(exc.field if exc.field in form.fields else None, exc.message)
    return exc.problems


def _pool_post(request: HttpRequest, form: PoolForm, golden_set: GoldenSet) -> tuple[PoolJob | None, list[str]]:
    """(the job recorded, or None when refused; the refusal's problems)."""
    if not form.is_valid():
        return None, []
    data = form.cleaned_data
    if data["pool"] is None:
        kind = PoolJob.Kind.BUILD
        arguments = {"runs": data["runs"], "depth": data["depth"], "strategy": data["strategy"], "budget": data["budget"]}
        model, prompt_hash = form.model_source()
        if model is not None:
            arguments.update(model=model, prompt_hash=prompt_hash)
    else:
        kind, arguments = PoolJob.Kind.EXTEND, {"pool": data["pool"], "runs": data["runs"], "depth": data["depth"]}
    try:
        job = pool_job_submit(golden_set=golden_set, kind=kind, arguments=arguments, job_task=pool_job_task, user=request.user)
        return job, []
    except GoldsetError as exc:
        return None, _refused(form, exc)


def _sample_post(request: HttpRequest, form: SampleForm, golden_set: GoldenSet) -> tuple[PoolJob | None, list[str]]:
    if not form.is_valid():
        return None, []
    data = form.cleaned_data
    arguments = {name: data[name] for name in ("pool", "size", "depth_to", "seed")}
    try:
        job = pool_job_submit(
            golden_set=golden_set,
            kind=PoolJob.Kind.SAMPLE,
            arguments=arguments,
            job_task=pool_job_task,
            user=request.user,
        )
        return job, []
    except GoldsetError as exc:
        return None, _refused(form, exc)


def _summary_refresh(pool_id: int) -> None:
    """Hand the refresh of a large pool's judging summary to a worker, at most once a
    POOL_SUMMARY_MAX_AGE per pool however many views ask (a cache key claimed first)."""
    if cache.add(f"pool-summary-refresh:{pool_id}", 1, timeout=int(POOL_SUMMARY_MAX_AGE.total_seconds())):
        transaction.on_commit(lambda: pool_summary_task.delay(pool_id))


def _jobs_context(golden_set: GoldenSet) -> dict:
    jobs = recent_pool_jobs(golden_set)
    return {
        "golden_set": golden_set,
        "jobs": jobs,
        "poll_seconds": JOBS_POLL_SECONDS,
        "following": ",".join(str(job.pk) for job in jobs if job.active),
    }


@login_required
@require_http_methods(["GET", "POST"])
def completeness(request: HttpRequest, slug: str) -> HttpResponse:
    """The page; a manager's POST builds or extends a pool ("form" = "pool") or draws a
    sample ("form" = "sample") as a job, then comes back here, where the jobs section
    follows it; or shows the refusal on the form with nothing recorded."""
    if request.method == "POST":
        golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
        can_manage = True
    else:
        golden_set = access_golden_set(request.user, slug)
        can_manage = _can_manage(request.user, golden_set)
    report = completeness_report(golden_set, now=timezone.now(), refresh=_summary_refresh)
    which = request.POST.get("form") if request.method == "POST" else None
    pool_form = PoolForm(request.POST if which == "pool" else None, report=report, initial=_pool_prefill(request))
    sample_form = SampleForm(request.POST if which == "sample" else None, report=report)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if which == "pool":
            job, problems = _pool_post(request, pool_form, golden_set)
        elif which == "sample":
            job, problems = _sample_post(request, sample_form, golden_set)
        else:
            return HttpResponse("unknown form; post form=pool or form=sample", status=400, content_type="text/plain")
        if job is not None:
            return redirect(reverse("completeness", kwargs={"slug": golden_set.slug}) + "#jobs")
        status = 400
    checked = {str(value) for value in pool_form["runs"].value() or ()}
    ctx = {
        "golden_set": golden_set,
        "report": report,
        "can_manage": can_manage,
        "pool_form": pool_form,
        "sample_form": sample_form,
        "which": which,
        "problems": problems,
        "checked_runs": checked,
        **_jobs_context(golden_set),
    }
    return render(request, "labeling/completeness/page.html", ctx, status=status)


def _pool_prefill(request: HttpRequest) -> dict:
    """The pool form filled in from a "pool this run" link: ?run=ID (again for more runs) and
    ?depth=K. Anything that is not a number is left out: the form is only a starting point."""
    if request.method != "GET":
        return {}
    runs = [int(value) for value in request.GET.getlist("run") if value.isdecimal()]
    depth = request.GET.get("depth", "")
    return {key: value for key, value in (("runs", runs), ("depth", int(depth) if depth.isdecimal() else None)) if value}


@login_required
@require_GET
def completeness_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    """The jobs section alone, for the page's polling. `?following=ID,...` names the jobs
    the page showed going: once one of them has finished, the page reloads whole (HX-Refresh),
    so its pools and samples show what the job wrote."""
    golden_set = access_golden_set(request.user, slug)
    context = _jobs_context(golden_set)
    response = render(request, "labeling/completeness/_jobs.html", context)
    following = ids_param(request.GET, "following")
    if following - {job.pk for job in context["jobs"] if job.active}:
        response["HX-Refresh"] = "true"
    return response
