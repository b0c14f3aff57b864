"""Pages where a golden set's managers make and revoke the API tokens for that set.

Each view: fetch with the access check (managers and staff; 404 for everyone else, as
for a set that does not exist), act through api.services, render.
"""

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from api.models import ApiToken
from api.selectors import tokens_of_golden_set
from api.services import api_token_create, api_token_revoke
from goldenset.models import Membership
from goldenset.selectors import access_golden_set
from lib.errors import GoldsetError

MANAGE_ROLES = (Membership.Role.MANAGER,)


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="what it is for, e.g. 'nightly eval job'")
    scope = forms.ChoiceField(choices=ApiToken.Scope.choices, initial=ApiToken.Scope.READ)
    expires_in_days = forms.IntegerField(
        label="Expires after (days)",
        required=False,
        min_value=1,
        max_value=3650,
        initial=90,
        help_text="empty: never expires (revoke it when it is no longer needed)",
    )


@login_required
@require_http_methods(["GET", "POST"])
def golden_set_tokens(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's tokens; a POST makes one for the manager and shows its secret, once."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    form = TokenCreateForm(request.POST or None)
    created, secret = None, None
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            created, secret = api_token_create(
                owner=request.user,
                scope=form.cleaned_data["scope"],
                golden_set=golden_set,
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                name=form.cleaned_data["name"],
                created_by=request.user,
            )
        except GoldsetError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            form = TokenCreateForm()
    ctx = {
        "golden_set": golden_set,
        "tokens": tokens_of_golden_set(golden_set),
        "form": form,
        "created": created,
        "secret": secret,
        "now": timezone.now(),
    }
    status = 400 if request.method == "POST" and created is None else 200
    response = render(request, "api/tokens.html", ctx, status=status)
    # The page may hold a secret: no cache, proxy or back button should keep a copy.
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def golden_set_token_revoke(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    """Revoke one of the set's tokens; htmx gets the token's row back, a form post the page."""
    golden_set = access_golden_set(request.user, slug, roles=MANAGE_ROLES)
    token = tokens_of_golden_set(golden_set).filter(pk=token_id).first()
    if token is None:
        raise Http404("no such token")
    api_token_revoke(token=token, user=request.user)
    if request.htmx:
        return render(request, "api/_token_row.html", {"golden_set": golden_set, "token": token, "now": timezone.now()})
    messages.success(request, f"Token {token.prefix}… was revoked.")
    return redirect("api_tokens", slug=golden_set.slug)
