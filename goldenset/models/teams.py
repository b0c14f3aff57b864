"""Organisations and their teams: who may reach which golden sets.

An organisation holds teams; a team holds corpora and golden sets (and, through its sets,
their runs, endpoints, alerts and tokens' reach). A role is granted per team, and every set
of the team inherits it, or per set as before; an organisation's admin is a manager of
every set of its teams and manages the teams and their members without being a Django
superuser. Installations made before teams existed live in one default organisation with
one default team (migration 0022), so nothing else changed for them.
"""

from django.conf import settings
from django.db import models, transaction

# The organisation and team that installations made before teams, and anything made
# without naming a team (the demo, an import that names none), belong to.
DEFAULT_ORGANISATION_SLUG = "default"
DEFAULT_TEAM_SLUG = "default"


class Role(models.TextChoices):
    """A person's role in a golden set, granted in the set or in its team."""

    ANNOTATOR = "annotator"
    ADJUDICATOR = "adjudicator"
    MANAGER = "manager"


class Organisation(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class OrganisationMembership(models.Model):
    """A person in an organisation: a member may be granted roles in its teams; an admin
    manages its teams and is a manager of every set they hold."""

    class Role(models.TextChoices):
        MEMBER = "member"
        ADMIN = "admin"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="organisation_memberships")
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    # The role was given by single sign-on's groups (goldset.sso): the next sign-in takes an
    # admin role back when the groups stop naming it; a role an admin gave by hand stays.
    from_sso = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organisation"], name="organisation_membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.organisation}"


class Team(models.Model):
    organisation = models.ForeignKey(Organisation, on_delete=models.PROTECT, related_name="teams")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organisation__slug", "slug"]
        constraints = [models.UniqueConstraint(fields=["organisation", "slug"], name="team_slug_unique_in_organisation")]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    """A person's role in a team, which every golden set of the team inherits."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    # Granted by the claims of a single sign-on (goldset.sso) rather than by a person: the
    # next sign-in takes it back when the claims no longer name it.
    from_sso = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team", "role"], name="team_membership_unique_role")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of team {self.team}"


def default_team() -> Team:
    """The default organisation's default team, made the first time it is asked for."""
    with transaction.atomic():
        organisation, _ = Organisation.objects.get_or_create(slug=DEFAULT_ORGANISATION_SLUG, defaults={"name": "Default organisation"})
        team, _ = Team.objects.get_or_create(organisation=organisation, slug=DEFAULT_TEAM_SLUG, defaults={"name": "Default team"})
    return team
