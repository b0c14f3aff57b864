"""Pages of a golden set's alerts and evaluation settings. Each view: fetch with access check, act, render."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.alerts.delivery import WebhookOutcome, webhook_test_send
from evaluation.alerts.incidents import incident_act, incident_get, slice_mute
from evaluation.alerts.selectors import (
    alerts_for,
    incident_owner_candidates,
    incidents_for,
    slice_mutes_active,
    webhook_deliveries_latest,
)
from evaluation.forms import EvaluationSettingsForm, PromptCostForm
from evaluation.selectors import evaluation_settings
from evaluation.settings_service import evaluation_settings_update, webhook_secret_rotate
from goldenset.models import Membership
from goldenset.prompt_cost import golden_set_prompt_cost_update
from goldenset.selectors import access_golden_set, user_roles
from lib.errors import GoldsetError

ALERTS_PER_PAGE = 100
INCIDENTS_SHOWN = 50
SETTINGS_ROLES = (Membership.Role.MANAGER,)
# How long the page's mute buttons mute for, in hours, as (hours, label).
MUTE_CHOICES = [(1, "1 hour"), (8, "8 hours"), (24, "1 day"), (168, "1 week")]


@login_required
@require_GET
def alerts_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    page = Paginator(alerts_for(golden_set), ALERTS_PER_PAGE).get_page(request.GET.get("page"))
    is_manager = request.user.is_staff or Membership.Role.MANAGER in user_roles(request.user, golden_set)
    ctx = {
        "golden_set": golden_set,
        "incidents": list(incidents_for(golden_set, with_messages=True)[:INCIDENTS_SHOWN]),
        # Triage is the managers' (the API says the same): others read the states only.
        "can_triage": is_manager,
        "owner_candidates": incident_owner_candidates(golden_set) if is_manager else [],
        "mute_choices": MUTE_CHOICES,
        "slice_mutes": slice_mutes_active(golden_set),
        "page": page,
        "settings": evaluation_settings(golden_set),
        "can_edit_settings": is_manager,
        # Where the webhook goes and how it answers is the managers' business.
        "webhook_deliveries": webhook_deliveries_latest(golden_set) if is_manager else None,
    }
    return render(request, "evaluation/alerts.html", ctx)


def _hours(request: HttpRequest, field: str) -> timedelta | None:
    """The whole number of hours in POST `field` as a duration; None when it is empty."""
    text = request.POST.get(field, "").strip()
    if not text:
        return None
    if not text.isdigit() or not 0 < int(text) <= 24 * 365:
        raise GoldsetError(f"{field} must be a whole number of hours from 1 to 8760, not {text!r}", field=field)
    return timedelta(hours=int(text))


@login_required
@require_POST
def incident_action_page(request: HttpRequest, slug: str, incident_id: int) -> HttpResponse:
    """Acknowledge, mute (mute_hours), assign (owner), resolve or reopen one incident."""
    golden_set = access_golden_set(request.user, slug, roles=SETTINGS_ROLES)
    action = request.POST.get("action", "")
    try:
        incident = incident_get(golden_set=golden_set, incident_id=incident_id)
        hours = _hours(request, "mute_hours") if action == "mute" else None
        if action == "mute" and hours is None:
            raise GoldsetError("mute_hours: say for how many hours to mute the incident", field="mute_hours")
        incident = incident_act(
            incident=incident,
            user=request.user,
            action=action,
            muted_until=timezone.now() + hours if hours else None,
            owner=request.POST.get("owner", "").strip(),
        )
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Incident {incident.pk} is {incident.state}" + (f", owned by {incident.owner}." if incident.owner else ".")
        )
    # The monitoring page acts on incidents too and asks to come back to it (a name, not a URL).
    if request.POST.get("back") == "monitoring":
        return redirect(reverse("monitoring", kwargs={"slug": golden_set.slug}) + "#incidents")
    return redirect("alerts", slug=golden_set.slug)


@login_required
@require_POST
def slice_mute_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Mute a slice's alerts for `mute_hours` hours, or unmute it when mute_hours is empty."""
    golden_set = access_golden_set(request.user, slug, roles=SETTINGS_ROLES)
    slice_name = request.POST.get("slice", "").strip()
    try:
        hours = _hours(request, "mute_hours")
        mute = slice_mute(golden_set=golden_set, user=request.user, slice_name=slice_name, until=timezone.now() + hours if hours else None)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Slice {slice_name} " + (f"muted until {mute.until:%Y-%m-%d %H:%M} UTC." if mute else "pages again."))
    return redirect("alerts", slug=golden_set.slug)


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_settings_page(request: HttpRequest, slug: str) -> HttpResponse:
    # Thresholds decide who is woken up, so only managers (and staff) may change them.
    golden_set = access_golden_set(request.user, slug, roles=SETTINGS_ROLES)
    if request.method == "POST":
        form = EvaluationSettingsForm(request.POST, golden_set=golden_set)
        if form.is_valid():
            had_secret = bool(evaluation_settings(golden_set).webhook_secret)
            try:
                saved = evaluation_settings_update(golden_set=golden_set, user=request.user, **form.cleaned_data)
            except GoldsetError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, [exc.message, *exc.problems])
            else:
                messages.success(request, "Evaluation settings saved. They apply to evaluations computed from now on.")
                if saved.webhook_secret and not had_secret:
                    # Rendered, not redirected: the new secret is in this answer and nowhere else.
                    return _settings_page(request, golden_set, new_secret=saved.webhook_secret)
                return redirect("evaluation_settings", slug=golden_set.slug)
        return _settings_page(request, golden_set, form=form)
    return _settings_page(request, golden_set)


@login_required
@require_POST
def prompt_cost_settings_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's prompt-cost figures, saved from their own form on the settings page."""
    golden_set = access_golden_set(request.user, slug, roles=SETTINGS_ROLES)
    form = PromptCostForm(request.POST)
    if form.is_valid():
        try:
            golden_set_prompt_cost_update(golden_set=golden_set, **form.cleaned_data)
        except GoldsetError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, [exc.message, *exc.problems])
        else:
            messages.success(request, "Prompt-cost figures saved. The depth-and-cost sweep prices with them from now on.")
            return redirect("evaluation_settings", slug=golden_set.slug)
    return _settings_page(request, golden_set, cost_form=form)


def _settings_page(
    request: HttpRequest,
    golden_set,
    *,
    form: EvaluationSettingsForm | None = None,
    cost_form: PromptCostForm | None = None,
    new_secret: str = "",
) -> HttpResponse:
    settings = evaluation_settings(golden_set)
    form = form or EvaluationSettingsForm(initial=EvaluationSettingsForm.initial_from(settings), golden_set=golden_set)
    cost_form = cost_form or PromptCostForm(initial=PromptCostForm.initial_from(golden_set))
    ctx = {"golden_set": golden_set, "form": form, "cost_form": cost_form, "settings": settings, "new_secret": new_secret}
    response = render(request, "evaluation/settings.html", ctx)
    if new_secret:
        patch_cache_control(response, no_store=True, private=True)  # no copy of the secret in any cache or history
    return response


@login_required
@require_POST
def webhook_secret_rotate_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=(Membership.Role.MANAGER,))
    secret = webhook_secret_rotate(golden_set=golden_set, user=request.user)
    messages.success(request, "A new signing secret replaces the old one from the next delivery on.")
    return _settings_page(request, golden_set, new_secret=secret)


@login_required
@require_POST
def webhook_test_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=(Membership.Role.MANAGER,))
    settings = evaluation_settings(golden_set)
    if not settings.webhook_url:
        messages.error(request, "No webhook URL is set: add one in the evaluation settings first.")
    else:
        outcome, error = webhook_test_send(golden_set=golden_set, settings=settings)
        if outcome == WebhookOutcome.DELIVERED:
            messages.success(request, "Test event delivered.")
        else:
            messages.error(request, f"Test event not delivered: {error}")
    return redirect("alerts", slug=golden_set.slug)
