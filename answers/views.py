"""Pages of answers: generators and answer judges, oracle experiments (a list, the start
form, one experiment's progress, report and answers to grade) and a run's depth-and-cost
sweep. Each view: fetch with an access check, act, render.

Managers, adjudicators and staff read (goldenset.selectors.READ_ROLES) and grade answers;
only managers and staff add generators and judges or start experiments. Annotators judge
blind, so every page here is a 404 to them, as it is to a stranger. A generator's or a
judge's key is never shown: only the name of the variable it is read from.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from answers.answer_judging import DEFAULT_RUBRIC, answer_judge_add
from answers.endpoint_depth import endpoint_depth_submit
from answers.experiments import experiment_contexts, oracle_experiment_continue, oracle_experiment_submit
from answers.forms import (
    AnswerJudgeForm,
    ContinueForm,
    EndpointDepthForm,
    EndpointGeneratorForm,
    ExperimentForm,
    GeneratorForm,
    HumanGradeForm,
    problems_to_fields,
)
from answers.generation import DEFAULT_PROMPT
from answers.generators import generator_add
from answers.human_grades import answer_grade_record, grade_agreement
from answers.models import AnswerGrade, EndpointDepthRun, GeneratedAnswer, OracleExperiment
from answers.report import experiment_report
from answers.selectors import (
    answer_get,
    answer_judges_of,
    answers_page,
    experiment_get,
    experiments_of,
    generators_of,
    sample_intervals,
)
from answers.sweep import run_sweep_report
from answers.tasks import endpoint_depth_task, oracle_experiment_task
from evaluation.selectors import run_get, slice_label
from goldenset.models import Membership
from goldenset.selectors import access_golden_set, user_roles, version_get
from lib.errors import GoldsetError
from lib.params import version_param

ANSWER_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)
MANAGE_ROLES = (Membership.Role.MANAGER,)
EXPERIMENT_POLL_SECONDS = 2


def _can_manage(user, golden_set) -> bool:
    return user.is_staff or bool(user_roles(user, golden_set) & set(MANAGE_ROLES))


@login_required
@require_GET
def run_sweep(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    """A run's depth-and-cost sweep on a version (the latest unless `version` says)."""
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    run = run_get(golden_set, run_id)
    version = version_get(golden_set, version_param(request.GET))
    ctx = {
        "golden_set": golden_set,
        "run": run,
        "version": version,
        "report": run_sweep_report(golden_set, run, version),
        "can_manage": _can_manage(request.user, golden_set),
    }
    if ctx["can_manage"]:
        ctx["depth_form"] = EndpointDepthForm(golden_set=golden_set, initial={"depth": version.k_first})
    return render(request, "answers/sweep.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_depth_start(request: HttpRequest, slug: str) -> HttpResponse:
    """A manager asks an endpoint once at a depth K; its page follows the job to the sweep."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    form = EndpointDepthForm(request.POST or None, golden_set=golden_set)
    if request.method == "POST" and form.is_valid():
        try:
            job = endpoint_depth_submit(golden_set=golden_set, user=request.user, send=endpoint_depth_task, **form.cleaned_data)
        except GoldsetError as exc:
            problems_to_fields(form, exc)
        else:
            messages.success(request, f"{job.endpoint.name} is being asked at depth {job.depth}.")
            return redirect("endpoint_depth", slug=golden_set.slug, job_id=job.pk)
    return render(request, "answers/endpoint_depth_start.html", {"golden_set": golden_set, "form": form})


@login_required
@require_GET
def endpoint_depth_page(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """An ask's progress, polling itself while it runs; done, the sweep of its run."""
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    job = EndpointDepthRun.objects.filter(golden_set=golden_set, pk=job_id).select_related("endpoint", "version", "run").first()
    if job is None:
        raise Http404(f"golden set {golden_set.slug!r} has no such ask")
    if job.status == EndpointDepthRun.Status.DONE and job.run_id is not None:
        sweep = reverse("run_sweep", kwargs={"slug": golden_set.slug, "run_id": job.run_id})
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = f"{sweep}?version={job.version.number}"
            return response
        return redirect(f"{sweep}?version={job.version.number}")
    ctx = {"golden_set": golden_set, "job": job, "poll_seconds": EXPERIMENT_POLL_SECONDS}
    return render(request, "answers/endpoint_depth.html", ctx)


@login_required
@require_GET
def generators_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    ctx = {
        "golden_set": golden_set,
        "generators": generators_of(golden_set),
        "judges": answer_judges_of(golden_set),
        "can_manage": _can_manage(request.user, golden_set),
    }
    return render(request, "answers/generators.html", ctx)


def _add_page(request: HttpRequest, slug: str, form_class, add, what: str, initial: dict | None = None) -> HttpResponse:
    """A manager's add form of a generator or an answer judge: `add(golden_set, user, form)`
    calls the service, whose faults are put beside their fields; done, back to the list."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    form = form_class(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            made = add(golden_set, request.user, form)
        except GoldsetError as exc:
            problems_to_fields(form, exc)
        else:
            messages.success(request, f"{what[0].upper()}{what[1:]} {made.name!r} added.")
            return redirect("generators", slug=golden_set.slug)
    ctx = {"golden_set": golden_set, "form": form, "what": f"{'an' if what[0] in 'aeiou' else 'a'} {what}"}
    return render(request, "answers/add.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def generator_add_page(request: HttpRequest, slug: str) -> HttpResponse:
    def add(golden_set, user, form):
        return generator_add(golden_set=golden_set, user=user, kind="openai", **form.cleaned_data)

    return _add_page(request, slug, GeneratorForm, add, "generator", initial={"prompt": DEFAULT_PROMPT})


@login_required
@require_http_methods(["GET", "POST"])
def generator_endpoint_add_page(request: HttpRequest, slug: str) -> HttpResponse:
    def add(golden_set, user, form):
        return generator_add(golden_set=golden_set, user=user, kind="endpoint", **form.service_fields())

    return _add_page(request, slug, EndpointGeneratorForm, add, "answer endpoint")


@login_required
@require_http_methods(["GET", "POST"])
def answer_judge_add_page(request: HttpRequest, slug: str) -> HttpResponse:
    def add(golden_set, user, form):
        return answer_judge_add(golden_set=golden_set, user=user, **form.cleaned_data)

    return _add_page(request, slug, AnswerJudgeForm, add, "answer judge", initial={"rubric": DEFAULT_RUBRIC})


@login_required
@require_GET
def experiments_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    ctx = {"golden_set": golden_set, "experiments": experiments_of(golden_set), "can_manage": _can_manage(request.user, golden_set)}
    return render(request, "answers/experiments.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def experiment_start(request: HttpRequest, slug: str) -> HttpResponse:
    """The start form: on the latest version, a run's top k_final against the oracle
    context; the job runs in a worker and its page follows it."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    version = golden_set.versions.order_by("-number").first()
    form = ExperimentForm(request.POST or None, golden_set=golden_set)
    if request.method == "POST" and form.is_valid():
        try:
            experiment = oracle_experiment_submit(
                golden_set=golden_set, version=version, user=request.user, send=oracle_experiment_task, **form.cleaned_data
            )
        except GoldsetError as exc:
            problems_to_fields(form, exc)
        else:
            messages.success(request, f"Oracle experiment {experiment.pk} is queued.")
            return redirect("oracle_experiment", slug=golden_set.slug, experiment_id=experiment.pk)
    ctx = {
        "golden_set": golden_set,
        "version": version,
        "form": form,
        "intervals": sample_intervals(version.query_count if version else 0),
    }
    return render(request, "answers/start.html", ctx)


@login_required
@require_POST
def experiment_continue(request: HttpRequest, slug: str, experiment_id: int) -> HttpResponse:
    """A stopped (budget spent), failed or done experiment queued again: it answers and
    grades only what is missing."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    experiment = experiment_get(golden_set, experiment_id)
    form = ContinueForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())
        messages.error(request, f"Oracle experiment {experiment.pk} not continued: {problems}")
    else:
        try:
            oracle_experiment_continue(experiment=experiment, user=request.user, send=oracle_experiment_task, **form.cleaned_data)
        except GoldsetError as exc:
            messages.error(request, f"Oracle experiment {experiment.pk} not continued: {exc}")
        else:
            messages.success(request, f"Oracle experiment {experiment.pk} is queued again: it answers only what is missing.")
    return redirect("oracle_experiment", slug=golden_set.slug, experiment_id=experiment.pk)


@login_required
@require_GET
def experiment_page(request: HttpRequest, slug: str, experiment_id: int, fragment: bool = False) -> HttpResponse:
    """One experiment: its progress (the status fragment, at a URL of its own, polls itself
    with htmx while the job is queued or running), then its report and its answers, which
    readers grade."""
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    experiment = experiment_get(golden_set, experiment_id)
    ctx = {"golden_set": golden_set, "experiment": experiment, "poll_seconds": EXPERIMENT_POLL_SECONDS}
    if fragment:
        response = render(request, "answers/_experiment_status.html", ctx)
        if request.htmx and not experiment.active:
            # The report below the progress is from before the job ended: reload to show it.
            response["HX-Refresh"] = "true"
        return response
    context = request.GET.get("context", "")
    page, rows = answers_page(experiment, request.user, page=request.GET.get("page"), context=context)
    report = experiment_report(experiment)
    ctx.update(
        {
            "report": report,
            "slices": [(slice_label(part.name), part) for part in report.slices],
            "experiment_contexts": [(c, GeneratedAnswer.Context(c).label) for c in experiment_contexts(experiment)],
            "grade_choices": AnswerGrade.Grade.choices,
            "can_manage": _can_manage(request.user, golden_set),
            "continue_form": ContinueForm(),
            "resumable": experiment.status in (OracleExperiment.Status.STOPPED, OracleExperiment.Status.FAILED),
            "page": page,
            "rows": rows,
            "context": context,
            "agreement": grade_agreement(experiment),
        }
    )
    return render(request, "answers/experiment.html", ctx)


@login_required
@require_POST
def answer_grade(request: HttpRequest, slug: str, experiment_id: int, answer_id: int) -> HttpResponse:
    """A reader's grade of one answer; back to the page it was given on."""
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    experiment = experiment_get(golden_set, experiment_id)
    answer = answer_get(experiment, answer_id)
    form = HumanGradeForm(request.POST)
    if form.is_valid():
        try:
            answer_grade_record(answer=answer, user=request.user, **form.cleaned_data)
        except GoldsetError as exc:
            messages.error(request, f"Answer {answer.pk} ({answer.query.query_id}) not graded: {exc.message}")
        else:
            messages.success(request, f"Your grade of {answer.query.query_id}'s {answer.get_context_display()} answer is saved.")
    else:
        problems = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())
        messages.error(request, f"Answer {answer.pk} ({answer.query.query_id}) not graded: {problems}")
    back = reverse("oracle_experiment", kwargs={"slug": golden_set.slug, "experiment_id": experiment.pk})
    page = request.POST.get("page", "")
    return redirect(f"{back}?page={page}#answer-{answer.pk}" if page.isdigit() else f"{back}#answer-{answer.pk}")
