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
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from answers.forms import HumanGradeForm
from answers.human_grades import answer_grade_record, grade_agreement
from answers.selectors import answer_get, answer_judges_of, answers_page, experiment_get, experiments_of, generators_of
from answers.sweep import run_sweep_report
from evaluation.selectors import run_get
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
    return render(request, "answers/sweep.html", ctx)


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


@login_required
@require_GET
def experiments_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ANSWER_ROLES)
    ctx = {"golden_set": golden_set, "experiments": experiments_of(golden_set), "can_manage": _can_manage(request.user, golden_set)}
    return render(request, "answers/experiments.html", ctx)


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
        return render(request, "answers/_experiment_status.html", ctx)
    context = request.GET.get("context", "")
    page, rows = answers_page(experiment, request.user, page=request.GET.get("page"), context=context)
    ctx.update(
        {
            "page": page,
            "rows": rows,
            "context": context,
            "agreement": grade_agreement(experiment),
            "grade_form": HumanGradeForm(),
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
