"""Organisations and teams: the one write of each change (made, granted, revoked), each
recorded in the audit trail, and the reads of who manages what.

An organisation's admin manages its teams and their members (goldenset.models.teams);
staff (the installation's superusers) manage every organisation. A person is granted a
team role only once they belong to the team's organisation, so that an organisation's
member list is the whole of who may reach its sets.
"""

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import Http404

from goldenset.audit import audit_record
from goldenset.models import GoldenSet, Membership, Organisation, OrganisationMembership, Team, TeamMembership
from goldenset.selectors import roles_forget
from goldenset.services import membership_grant, organisation_join, role_check, slug_check
from lib.errors import ConflictError, GoldsetError

# --- reads ---------------------------------------------------------------------------


def organisations_for(user: AbstractBaseUser) -> QuerySet[Organisation]:
    """The organisations `user` belongs to (every one for staff)."""
    if user.is_staff:
        return Organisation.objects.all()
    return Organisation.objects.filter(memberships__user=user).distinct()


class OrganisationAccess(NamedTuple):
    organisation: Organisation
    is_admin: bool


def access_organisation(user: AbstractBaseUser, slug: str, *, admin: bool = False) -> OrganisationAccess:
    """The organisation `slug` and whether `user` administers it (staff do), if they belong to
    it (administer it, with `admin`), in one look-up of their membership; Http404 otherwise, so
    that a stranger cannot tell which organisations exist."""
    organisation = Organisation.objects.filter(slug=slug).first()
    if organisation is None or not user.is_authenticated:
        raise Http404("no such organisation")
    if user.is_staff:
        return OrganisationAccess(organisation, True)
    role = OrganisationMembership.objects.filter(user=user, organisation=organisation).values_list("role", flat=True).first()
    is_admin = role == OrganisationMembership.Role.ADMIN
    if role is None or (admin and not is_admin):
        raise Http404("no such organisation")
    return OrganisationAccess(organisation, is_admin)


def teams_for(user: AbstractBaseUser, access: OrganisationAccess) -> QuerySet[Team]:
    """The organisation's teams `user` may see: every one for its admins and staff; else the
    teams they hold a role in, or hold a role in a set of. Nobody sees another team's sets."""
    teams = Team.objects.filter(organisation=access.organisation)
    if access.is_admin:
        return teams
    return teams.filter(
        Q(pk__in=TeamMembership.objects.filter(user=user).values("team_id"))
        | Q(pk__in=GoldenSet.objects.filter(memberships__user=user).values("team_id"))
    )


def team_get(path: str) -> Team:
    """The team named `ORGANISATION/TEAM` (or `TEAM` of the default organisation), for the
    command line and the single sign-on's mapping; GoldsetError naming it otherwise."""
    organisation_slug, _, team_slug = path.rpartition("/")
    team = Team.objects.select_related("organisation").filter(organisation__slug=organisation_slug or "default", slug=team_slug).first()
    if team is None:
        raise GoldsetError(f"no team {path!r} (name it ORGANISATION/TEAM)", field="team")
    return team


# --- writes --------------------------------------------------------------------------


def organisation_create(*, slug: str, name: str, by: AbstractBaseUser | None = None) -> Organisation:
    """A new organisation; `by`, when given, becomes its first admin."""
    slug_check(slug, "organisation")
    if Organisation.objects.filter(slug=slug).exists():
        raise GoldsetError(f"an organisation with slug {slug!r} already exists", field="slug")
    with transaction.atomic():
        organisation = Organisation.objects.create(slug=slug, name=name or slug)
        audit_record(organisation=organisation, user=by, action="organisation.create", obj=organisation, after={"slug": slug, "name": name})
        if by is not None and not by.is_staff:
            OrganisationMembership.objects.create(user=by, organisation=organisation, role=OrganisationMembership.Role.ADMIN)
    return organisation


def organisation_member_set(
    *, organisation: Organisation, user: AbstractBaseUser, role: str, by: AbstractBaseUser | None = None, from_sso: bool = False
) -> OrganisationMembership:
    """Make `user` a member or an admin of the organisation (`from_sso`: as single sign-on's
    groups say, which a later sign-in may take back). A person's change keeps the organisation
    an admin; single sign-on's does not wait for one (the groups decide, and staff remain)."""
    if role not in OrganisationMembership.Role.values:
        raise GoldsetError(
            f"unknown organisation role {role!r}; choose one of {', '.join(OrganisationMembership.Role.values)}", field="role"
        )
    with transaction.atomic():
        membership = OrganisationMembership.objects.select_for_update().filter(user=user, organisation=organisation).first()
        before = membership.role if membership else None
        if not from_sso and before == OrganisationMembership.Role.ADMIN and role != before:
            _keep_an_admin(organisation, user)
        if membership is None:
            membership = OrganisationMembership.objects.create(user=user, organisation=organisation, role=role, from_sso=from_sso)
        elif membership.role != role:
            membership.role, membership.from_sso = role, from_sso
            membership.save(update_fields=["role", "from_sso"])
        if before != role:
            audit_record(
                organisation=organisation,
                user=by,
                action="organisation.member",
                obj=user,
                before={"role": before} if before else {},
                after={"role": role, **({"from": "single sign-on"} if from_sso else {})},
            )
    roles_forget(user)
    return membership


def organisation_member_remove(*, organisation: Organisation, user: AbstractBaseUser, by: AbstractBaseUser | None = None) -> bool:
    """Take `user` out of the organisation and every team of it; False if not a member.
    The organisation keeps at least one admin."""
    with transaction.atomic():
        membership = OrganisationMembership.objects.select_for_update().filter(user=user, organisation=organisation).first()
        if membership is None:
            return False
        if membership.role == OrganisationMembership.Role.ADMIN:
            _keep_an_admin(organisation, user)
        teams = list(TeamMembership.objects.filter(user=user, team__organisation=organisation).values_list("team__slug", "role"))
        TeamMembership.objects.filter(user=user, team__organisation=organisation).delete()
        membership.delete()
        audit_record(
            organisation=organisation,
            user=by,
            action="organisation.member_remove",
            obj=user,
            before={"role": membership.role, "team_roles": [f"{team}:{role}" for team, role in teams]},
        )
    roles_forget(user)
    return True


def _keep_an_admin(organisation: Organisation, admin: AbstractBaseUser) -> None:
    """Refuse a person's change that would leave the organisation without an admin (`admin`
    is one and stops being one): nobody but staff could name another."""
    if OrganisationMembership.objects.filter(organisation=organisation, role=OrganisationMembership.Role.ADMIN).count() == 1:
        raise GoldsetError(
            f"{admin.get_username()} is the last admin of {organisation.slug!r}: make someone else admin first", field="role"
        )


def team_create(*, organisation: Organisation, slug: str, name: str, by: AbstractBaseUser | None = None) -> Team:
    slug_check(slug, "team")
    if Team.objects.filter(organisation=organisation, slug=slug).exists():
        raise GoldsetError(f"{organisation.slug!r} already has a team {slug!r}", field="slug")
    with transaction.atomic():
        team = Team.objects.create(organisation=organisation, slug=slug, name=name or slug)
        audit_record(organisation=organisation, user=by, action="team.create", obj=team, after={"slug": slug, "name": team.name})
    return team


def team_grant(
    *, team: Team, user: AbstractBaseUser, role: str, by: AbstractBaseUser | None = None, from_sso: bool = False
) -> TeamMembership:
    """Give `user` `role` in every set of the team; they join its organisation as a member
    if they were not in it."""
    role_check(role)
    with transaction.atomic():
        organisation_join(user, team.organisation_id)
        membership, made = TeamMembership.objects.get_or_create(user=user, team=team, role=role, defaults={"from_sso": from_sso})
        if made:
            audit_record(
                organisation=team.organisation,
                user=by,
                action="team.grant",
                obj=team,
                after={"user": user.get_username(), "role": role, **({"from": "single sign-on"} if from_sso else {})},
            )
    roles_forget(user)
    return membership


def team_revoke(*, team: Team, user: AbstractBaseUser, role: str, by: AbstractBaseUser | None = None) -> bool:
    """Take `role` in the team from `user`; False if they did not hold it."""
    with transaction.atomic():
        deleted, _ = TeamMembership.objects.filter(user=user, team=team, role=role).delete()
        if deleted:
            audit_record(
                organisation=team.organisation, user=by, action="team.revoke", obj=team, before={"user": user.get_username(), "role": role}
            )
    roles_forget(user)
    return bool(deleted)


def golden_set_move(*, golden_set: GoldenSet, team: Team, by: AbstractBaseUser | None = None) -> list[GoldenSet]:
    """Move the set, its corpus and every other set on that corpus into `team` (a corpus and
    its sets are one team's), keeping their set-level roles; the sets moved. An installation
    that began with one team moves its sets out of the default team this way."""
    with transaction.atomic():
        moved = list(GoldenSet.objects.select_for_update().filter(corpus_id=golden_set.corpus_id).order_by("slug"))
        for one in moved:
            if one.team_id == team.pk:
                continue
            before = str(one.team)
            one.team = team
            one.save(update_fields=["team"])
            audit_record(user=by, action="golden_set.move", obj=one, before={"team": before}, after={"team": str(team)})
        golden_set.corpus.team = team
        golden_set.corpus.save(update_fields=["team"])
        # Whoever held a role in the moved sets joins the new organisation.
        people = Membership.objects.filter(golden_set__in=moved).values_list("user_id", flat=True).distinct()
        OrganisationMembership.objects.bulk_create(
            [OrganisationMembership(user_id=pk, organisation_id=team.organisation_id) for pk in people], ignore_conflicts=True
        )
    return moved


@dataclass(frozen=True)
class TeamRoleChanges:
    granted: list[tuple[str, str]]
    revoked: list[tuple[str, str]]


def team_roles_sync(*, user: AbstractBaseUser, grants: Iterable[tuple[Team, str]]) -> TeamRoleChanges:
    """Make the team roles a sign-on's claims name exactly those `user` holds from single
    sign-on: grant the new ones, take back those it granted before and the claims no longer
    name. Roles a person granted by hand are left alone."""
    wanted = {(team.pk, role): team for team, role in grants}
    for _, role in wanted:
        role_check(role)
    granted, revoked = [], []
    with transaction.atomic():
        held = {(m.team_id, m.role): m for m in TeamMembership.objects.select_related("team__organisation").filter(user=user)}
        for key, team in wanted.items():
            if key not in held:
                team_grant(team=team, user=user, role=key[1], from_sso=True)
                granted.append((f"{team.organisation.slug}/{team.slug}", key[1]))
        for key, membership in held.items():
            if membership.from_sso and key not in wanted:
                team_revoke(team=membership.team, user=user, role=membership.role)
                revoked.append((f"{membership.team.organisation.slug}/{membership.team.slug}", membership.role))
    return TeamRoleChanges(granted=granted, revoked=revoked)


# --- accounts --------------------------------------------------------------------------


def member_invite(
    *, username: str, email: str, golden_set: GoldenSet, role: str, by: AbstractBaseUser | None = None
) -> tuple[AbstractBaseUser, str]:
    """Make an account for someone who has none yet and grant them `role` in `golden_set`,
    in one transaction; the user and a first password, shown once to the manager who passes
    it on (the account's owner changes it at /accounts/password/). GoldsetError naming the
    field for a name taken or malformed, a bad e-mail or an unknown role."""
    User = get_user_model()
    username = (username or "").strip()
    role_check(role)
    try:
        User.username_validator(username)
    except ValidationError:
        raise GoldsetError(f"{username!r} is not a username: letters, digits and @ . + - _ only", field="username") from None
    if not username or User.objects.filter(username=username).exists():
        raise ConflictError(f"user {username!r} exists already; grant them the role instead", field="username")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise GoldsetError(f"{email!r} is not an e-mail address", field="email") from None
    password = secrets.token_urlsafe(12)
    validate_password(password)
    with transaction.atomic():
        user = User.objects.create_user(username=username, email=email or "", password=password)
        audit_record(
            user=by, action="user.create", obj=user, golden_set=golden_set, after={"username": username, "email": email}, label=username
        )
        membership_grant(user=user, golden_set=golden_set, role=role, by=by)
    return user, password
