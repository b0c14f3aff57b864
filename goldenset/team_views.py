"""The organisation pages: its teams and members, a team's sets and roles, the organisation's
audit trail. Members of an organisation read them; its admins (and staff) change them."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from goldenset.audit import audit_filters, audit_records
from goldenset.models import GoldenSet, OrganisationMembership, TeamMembership
from goldenset.models.teams import Role
from goldenset.selectors import golden_sets_for
from goldenset.teams import (
    access_organisation,
    organisation_member_remove,
    organisation_member_set,
    organisations_for,
    team_create,
    team_grant,
    team_revoke,
    teams_for,
)
from lib.errors import GoldsetError
from lib.params import ParameterError

AUDIT_PER_PAGE = 50


def _user_named(username: str):
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise GoldsetError(
            f"no user {username.strip()!r}: they sign in once (or are invited on a set's Members page) first", field="username"
        )
    return user


@require_GET
@login_required
def organisations(request: HttpRequest) -> HttpResponse:
    """The organisations the person belongs to; one is enough to go straight to it."""
    found = list(organisations_for(request.user).annotate(team_total=Count("teams", distinct=True)))
    if len(found) == 1 and not request.user.is_staff:
        return redirect("organisation", org_slug=found[0].slug)
    return render(request, "goldenset/organisations/index.html", {"organisations": found})


@login_required
@require_http_methods(["GET", "POST"])
def organisation(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The organisation's teams and members; its admins add teams and set members' roles."""
    access = access_organisation(request.user, org_slug)
    org, admin = access
    if request.method == "POST":
        if not admin:
            return redirect("organisation", org_slug=org.slug)  # members read the page; only admins change it
        action = request.POST.get("action", "")
        try:
            if action == "team":
                team = team_create(
                    organisation=org, slug=request.POST.get("slug", "").strip(), name=request.POST.get("name", "").strip(), by=request.user
                )
                messages.success(request, f"Team {team.slug} made: grant people their roles on its page.")
            elif action == "member":
                user = _user_named(request.POST.get("username", ""))
                role = request.POST.get("role", "")
                organisation_member_set(organisation=org, user=user, role=role, by=request.user)
                messages.success(request, f"{user.username} is now {role} of {org.name}.")
            elif action == "remove":
                user = _user_named(request.POST.get("username", ""))
                if organisation_member_remove(organisation=org, user=user, by=request.user):
                    messages.success(request, f"{user.username} left {org.name} and its teams.")
            else:
                raise GoldsetError(f"unknown action {action[:40]!r}", field="action")
        except GoldsetError as exc:
            messages.error(request, exc.message)
        return redirect("organisation", org_slug=org.slug)
    teams = (
        teams_for(request.user, access)
        .annotate(set_total=Count("golden_sets", distinct=True), member_total=Count("memberships__user", distinct=True))
        .order_by("slug")
    )
    # Who is in the organisation is the admins' to read: a member sees only their own teams.
    members = OrganisationMembership.objects.filter(organisation=org).select_related("user").order_by("user__username") if admin else []
    ctx = {
        "organisation": org,
        "teams": teams,
        "members": members,
        "is_admin": admin,
        "organisation_roles": OrganisationMembership.Role.choices,
    }
    return render(request, "goldenset/organisations/organisation.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def team(request: HttpRequest, org_slug: str, team_slug: str) -> HttpResponse:
    """A team's golden sets (those the person may open are linked) and its people's roles,
    which every set of the team inherits; admins grant and revoke them."""
    access = access_organisation(request.user, org_slug)
    org, admin = access
    the_team = get_object_or_404(teams_for(request.user, access), slug=team_slug)
    if request.method == "POST":
        if not admin:
            return redirect("team", org_slug=org.slug, team_slug=the_team.slug)
        try:
            user = _user_named(request.POST.get("username", ""))
            role = request.POST.get("role", "")
            if request.POST.get("action") == "revoke":
                if team_revoke(team=the_team, user=user, role=role, by=request.user):
                    messages.success(request, f"{user.username} is no longer {role} of team {the_team.slug}.")
            else:
                team_grant(team=the_team, user=user, role=role, by=request.user)
                messages.success(request, f"{user.username} is now {role} of every set of team {the_team.slug}.")
        except GoldsetError as exc:
            messages.error(request, exc.message)
        return redirect("team", org_slug=org.slug, team_slug=the_team.slug)
    # Its sets the person reads (managers, adjudicators) link to their pages; those they only
    # judge are named; a set they hold no role in is not shown (an admin sees every one).
    readable = set(golden_sets_for(request.user).filter(team=the_team).values_list("pk", flat=True))
    reached = set(golden_sets_for(request.user, roles=tuple(Role.values)).filter(team=the_team).values_list("pk", flat=True))
    sets = (
        GoldenSet.objects.filter(team=the_team).annotate(query_total=Count("queries", filter=Q(queries__retired_at=None))).order_by("slug")
    )
    sets = [golden_set for golden_set in sets if admin or golden_set.pk in reached]
    for golden_set in sets:
        golden_set.readable = golden_set.pk in readable
    memberships = TeamMembership.objects.filter(team=the_team).select_related("user").order_by("user__username", "role")
    ctx = {"organisation": org, "team": the_team, "golden_sets": sets, "memberships": memberships, "is_admin": admin, "roles": Role.choices}
    return render(request, "goldenset/organisations/team.html", ctx)


@require_GET
@login_required
def organisation_audit(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The organisation's audit trail: its own actions (teams, members) and those in every set
    of its teams, newest first, filtered as a set's; admins and staff."""
    org, _ = access_organisation(request.user, org_slug, admin=True)
    try:
        filters = audit_filters(request.GET)
    except GoldsetError as exc:
        raise ParameterError(exc.field, exc.message) from None
    page = Paginator(audit_records(None, organisation=org, **filters), AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    query = urlencode({name: request.GET.get(name, "") for name in ("action", "user", "since", "until")})
    ctx = {"organisation": org, "page": page, "filters": request.GET, "filter_query": query}
    return render(request, "goldenset/organisations/audit.html", ctx)
