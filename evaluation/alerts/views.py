"""Pages of a golden set's alerts and evaluation settings. Each view: fetch with access check, act, render."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evaluation.alerts.selectors import alerts_for
from evaluation.forms import EvaluationSettingsForm
from evaluation.selectors import evaluation_settings
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import Membership
from goldenset.selectors import access_golden_set, user_roles
from lib.errors import GoldsetError

ALERTS_PER_PAGE = 100
SETTINGS_ROLES = (Membership.Role.MANAGER,)


@login_required
@require_GET
def alerts_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    page = Paginator(alerts_for(golden_set), ALERTS_PER_PAGE).get_page(request.GET.get("page"))
    ctx = {
        "golden_set": golden_set,
        "page": page,
        "settings": evaluation_settings(golden_set),
        "can_edit_settings": request.user.is_staff or Membership.Role.MANAGER in user_roles(request.user, golden_set),
    }
    return render(request, "evaluation/alerts.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_settings_page(request: HttpRequest, slug: str) -> HttpResponse:
    # Thresholds decide who is woken up, so only managers (and staff) may change them.
    golden_set = access_golden_set(request.user, slug, roles=SETTINGS_ROLES)
    if request.method == "POST":
        form = EvaluationSettingsForm(request.POST, golden_set=golden_set)
        if form.is_valid():
            try:
                evaluation_settings_update(golden_set=golden_set, user=request.user, **form.cleaned_data)
            except GoldsetError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, [exc.message, *exc.problems])
            else:
                messages.success(request, "Evaluation settings saved. They apply to evaluations computed from now on.")
                return redirect("evaluation_settings", slug=golden_set.slug)
    else:
        form = EvaluationSettingsForm(initial=EvaluationSettingsForm.initial_from(evaluation_settings(golden_set)), golden_set=golden_set)
    return render(request, "evaluation/settings.html", {"golden_set": golden_set, "form": form})
