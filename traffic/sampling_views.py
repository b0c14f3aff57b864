"""The draw page of a golden set, for its managers: draw queries from a query log with known
weights, or top up a stratum, through traffic.sampling (the service sample_queries calls);
the set's draws listed. Annotators, adjudicators and strangers get a 404."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from goldenset.models import Membership
from goldenset.selectors import access_golden_set
from lib.errors import GoldsetError
from traffic.sampling import draw_queries, draw_top_up
from traffic.sampling_forms import DrawForm, TopUpForm
from traffic.sampling_selectors import draws_of_set

DRAW_ROLES = (Membership.Role.MANAGER,)


def _problems(form) -> str:
    return "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())


@login_required
@require_GET
def draws_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=DRAW_ROLES)
    ctx = {
        "golden_set": golden_set,
        "draws": draws_of_set(golden_set),
        "draw_form": DrawForm(golden_set=golden_set),
        "top_up_form": TopUpForm(golden_set=golden_set),
    }
    return render(request, "traffic/sampling/draws.html", ctx)


@login_required
@require_POST
def draw_create(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=DRAW_ROLES)
    form = DrawForm(request.POST, golden_set=golden_set)
    if not form.is_valid():
        messages.error(request, f"Not drawn: {_problems(form)}")
        return redirect("query_draws", slug=golden_set.slug)
    data = form.cleaned_data
    try:
        draw = draw_queries(
            golden_set=golden_set,
            log_name=data["log"],
            size=data["size"],
            design=data["design"],
            seed=data["seed"],
            strata_field=data["strata"] if data["design"] == "stratified" else "",
            allocation=data["allocation"],
            user=request.user,
        )
    except GoldsetError as exc:
        messages.error(request, f"Not drawn: {exc.message}")
        return redirect("query_draws", slug=golden_set.slug)
    messages.success(request, f"Drew {draw.size} queries from {draw.log.name}: {draw.added_count} added, {draw.marked_count} marked drawn.")
    return redirect("query_draws", slug=golden_set.slug)


@login_required
@require_POST
def draw_top_up_create(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=DRAW_ROLES)
    form = TopUpForm(request.POST, golden_set=golden_set)
    if not form.is_valid():
        messages.error(request, f"Not topped up: {_problems(form)}")
        return redirect("query_draws", slug=golden_set.slug)
    data = form.cleaned_data
    try:
        draw = draw_top_up(
            golden_set=golden_set,
            log_name=data["log"],
            stratum=data["stratum"],
            seed=data["seed"],
            to=data["to"],
            to_detect=data["to_detect"],
            user=request.user,
        )
    except GoldsetError as exc:
        messages.error(request, f"Not topped up: {exc.message}")
        return redirect("query_draws", slug=golden_set.slug)
    stratum = draw.target["stratum"] or "all"
    messages.success(request, f"Drew {draw.size} more queries of stratum {stratum}: it holds {draw.target['queries']} now.")
    return redirect("query_draws", slug=golden_set.slug)
