"""The model labels page of a golden set: which models labelled its pairs, and, for the one
chosen (model and prompt hash), how far its labels agree with people's, per query slice,
the worst disagreements to look at, and the runs ranked on human labels beside human labels
with the model's filling the gaps (labeling.model_labels.selectors.calibration_report).
Managers also start judge jobs there (a model grading a pool's pairs through an
OpenAI-compatible API, or the packaged local model; labeling.model_labels.jobs) and follow them.

Managers and adjudicators read it (staff too); annotators judge blind and must not see a
model's grades, so the page is a 404 to them, as to a stranger. Only managers start jobs.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from goldenset.models import Membership
from goldenset.selectors import access_golden_set, user_roles
from labeling.model_labels.forms import JudgeForm
from labeling.model_labels.jobs import judge_job_submit
from labeling.model_labels.selectors import calibration_report, recent_judge_jobs, source_find
from labeling.models import JudgeJob, Pool
from labeling.tasks import judge_job_task
from lib import minilm
from lib.errors import GoldsetError

MODEL_LABEL_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)
POLL_SECONDS = 3


def _is_manager(user, golden_set) -> bool:
    return user.is_staff or Membership.Role.MANAGER in user_roles(user, golden_set)


def _page(request: HttpRequest, golden_set, form: JudgeForm | None, status: int = 200) -> HttpResponse:
    sources, source = source_find(golden_set, request.GET.get("model"), request.GET.get("prompt"))
    if source is None and request.GET.get("model"):
        raise Http404("no labels of that model and prompt in this golden set")
    report = calibration_report(golden_set, source) if source is not None else None
    context = {
        "golden_set": golden_set,
        "sources": sources,
        "report": report,
        "judge_form": form,
        "local_problem": minilm.install_problem() if form is not None else None,
        **_jobs(golden_set),
    }
    return render(request, "labeling/model_labels/page.html", context, status=status)


def _jobs(golden_set) -> dict:
    jobs = recent_judge_jobs(golden_set)
    return {"jobs": jobs, "jobs_active": any(job.active for job in jobs), "poll_seconds": POLL_SECONDS}


def _form(golden_set, data=None) -> JudgeForm:
    return JudgeForm(data, pools=Pool.objects.filter(golden_set=golden_set).order_by("-created_at"), scale=golden_set.grade_values())


@login_required
@require_GET
def model_labels_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=MODEL_LABEL_ROLES)
    return _page(request, golden_set, _form(golden_set) if _is_manager(request.user, golden_set) else None)


@login_required
@require_POST
def judge_job_start(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=(Membership.Role.MANAGER,))
    form = _form(golden_set, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            judge_job_submit(
                golden_set=golden_set,
                pool_id=data["pool"],
                pairs=data["pairs"],
                kind=data["kind"],
                base_url=data["base_url"].strip(),
                model=data["model"],
                api_key_env=data["api_key_env"].strip(),
                prompt_text=data["config"] if data["kind"] == JudgeJob.Kind.LOCAL else data["prompt"],
                sample_size=data["sample"],
                max_in_flight=data["max_in_flight"],
                batch_size=data["batch_size"],
                price_in=data["price_in"],
                price_out=data["price_out"],
                user=request.user,
                job_task=judge_job_task,
            )
        except GoldsetError as exc:
            for problem in exc.problems or [exc.message]:
                name, _, why = problem.partition(": ")
                name = {"sample_size": "sample"}.get(name, name)
                form.add_error(name if name in form.fields else None, why if name in form.fields else problem)
        else:
            return redirect(reverse("model_labels", args=[golden_set.slug]) + "#judge-jobs")
    return _page(request, golden_set, form, status=400)


@login_required
@require_GET
def judge_jobs_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """The jobs section alone, for the page's polling while a job is going."""
    golden_set = access_golden_set(request.user, slug, roles=MODEL_LABEL_ROLES)
    return render(request, "labeling/model_labels/_judge_jobs.html", {"golden_set": golden_set, **_jobs(golden_set)})
