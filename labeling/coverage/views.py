"""The slice coverage page of a golden set, for staff and the set's managers, and its actions.

It lives under /admin/coverage/ because it is the admin's question ("which part of our
golden set can we not trust yet?"), but it is a page of its own: managers who are not
staff use it too. Annotators and adjudicators get a 404 like strangers. Each view: fetch
with the access check, act through a service, render or redirect.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluation.canaries import canary_add
from goldenset.forms import PublishForm
from goldenset.models import GoldenSet, Membership, Page, Query, Version
from goldenset.publishing import version_publish_request
from goldenset.selectors import access_golden_set, version_get
from goldenset.stale_spans import stale_span_labels
from goldenset.tasks import publish_job_task
from labeling.coverage.forms import FlaggedPoolForm
from labeling.coverage.selectors import coverage_report
from labeling.jobs.services import pool_job_submit
from labeling.models import PoolJob
from labeling.stale.services import stale_queue_fill
from labeling.tasks import pool_job_task
from lib.errors import GoldsetError
from lib.formats import QREL_FORMATS
from lib.params import version_param
from traffic.coverage import traffic_coverage

COVERAGE_ROLES = (Membership.Role.MANAGER,)


def _version(request: HttpRequest, golden_set: GoldenSet) -> Version | None:
    """The version named by ?version=N (ParameterError, 400, when N is not a version number;
    Http404 when there is no such version), else the latest; None when the set has none yet."""
    number = version_param(request.GET)
    return golden_set.latest_version() if number is None else version_get(golden_set, number)


def _back(golden_set: GoldenSet, version: Version | None = None) -> str:
    url = reverse("coverage", kwargs={"slug": golden_set.slug})
    return f"{url}?version={version.number}" if version else url


@login_required
@require_GET
def coverage_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=COVERAGE_ROLES)
    version = _version(request, golden_set)
    report = coverage_report(golden_set, version) if version else None
    ctx = {
        "golden_set": golden_set,
        "version": version,
        "report": report,
        "versions": list(golden_set.versions.order_by("-number").values_list("number", flat=True)),
        "formats": QREL_FORMATS,
        "publish_form": PublishForm(),
        "pool_form": FlaggedPoolForm(golden_set=golden_set),
        "stale_span_labels": len(stale_span_labels(golden_set)),
        "traffic": traffic_coverage(golden_set, version) if version else None,
    }
    return render(request, "labeling/coverage/coverage.html", ctx)


@login_required
@require_POST
def coverage_publish(request: HttpRequest, slug: str) -> HttpResponse:
    """Publish the set's current labels as a new version: a job (goldenset.publishing),
    followed on its own page."""
    golden_set = access_golden_set(request.user, slug, roles=COVERAGE_ROLES)
    form = PublishForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not published: {form.errors.as_text()}")
        return redirect(_back(golden_set))
    try:
        job = version_publish_request(
            golden_set=golden_set,
            user=request.user,
            note=form.cleaned_data["note"],
            job_task=publish_job_task,
        )
    except GoldsetError as exc:
        messages.error(request, f"Not published: {exc.message}")
        return redirect(_back(golden_set))
    return redirect("publish_job", slug=golden_set.slug, job_id=job.pk)


@login_required
@require_POST
def coverage_pool(request: HttpRequest, slug: str) -> HttpResponse:
    """Pool each system's latest runs for the slices flagged on the version named in the
    form: a job (labeling.jobs), followed on the completeness page."""
    golden_set = access_golden_set(request.user, slug, roles=COVERAGE_ROLES)
    number = version_param(request.POST)
    version = golden_set.latest_version() if number is None else version_get(golden_set, number)
    if version is None:
        messages.error(request, "Not pooled: publish a version first, so that slices can be measured.")
        return redirect(_back(golden_set))
    form = FlaggedPoolForm(request.POST, golden_set=golden_set)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.error(request, f"Not pooled: {problems}")
        return redirect(_back(golden_set, version))
    arguments = {"version": version.number, **form.cleaned_data}
    try:
        pool_job_submit(
            golden_set=golden_set,
            kind=PoolJob.Kind.FLAGGED,
            arguments=arguments,
            job_task=pool_job_task,
            user=request.user,
        )
    except GoldsetError as exc:
        messages.error(request, f"Not pooled: {exc}")
        return redirect(_back(golden_set, version))
    # The pool is built by a worker; the completeness page follows the job.
    return redirect(reverse("completeness", kwargs={"slug": golden_set.slug}) + "#jobs")


@login_required
@require_POST
def coverage_stale_queue(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue the labels whose evidence no longer holds for judging again (labeling.stale)."""
    golden_set = access_golden_set(request.user, slug, roles=COVERAGE_ROLES)
    result = stale_queue_fill(golden_set=golden_set)
    messages.success(
        request,
        f"{result.stale_labels} stale label(s): {result.queued} queued for judging again, {result.reopened} opened again, "
        f"{result.already_queued} already in the queue. They come before every pool's pairs.",
    )
    return redirect(_back(golden_set))


@login_required
@require_POST
def coverage_canary_add(request: HttpRequest, slug: str) -> HttpResponse:
    """Make a suggested page a canary of its query (evaluation.canaries.canary_add)."""
    golden_set = access_golden_set(request.user, slug, roles=COVERAGE_ROLES)
    query = Query.objects.filter(golden_set=golden_set, query_id=request.POST.get("query_id", "")).first()
    page = Page.objects.filter(corpus_id=golden_set.corpus_id, doc_id=request.POST.get("doc_id", "")).first()
    try:
        canary = canary_add(
            golden_set=golden_set,
            query=query,
            page=page,
            user=request.user,
            note=f"suggested by the coverage page: {request.POST.get('why', 'a new relevant page')}"[:500],
        )
    except GoldsetError as exc:
        messages.error(request, f"Not added: {exc.message}")
    else:
        messages.success(
            request,
            f"Page {canary.page.doc_id} is a canary of query {canary.query.query_id}: every run's top k_first "
            "and every probe of the set's first-stage endpoints look for it from now on.",
        )
    return redirect(_back(golden_set) + "#canaries")
