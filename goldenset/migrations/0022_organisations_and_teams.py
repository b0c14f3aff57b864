"""Organisations and teams (issue 29): an organisation holds teams, a team holds corpora and
golden sets, and roles are granted per team as well as per set; audit records name the
organisation an action happened in. Every corpus and set made
before lands in one default organisation's default team, so that nothing else changes for
an installation that has one team.

The team columns are added empty, filled, then made required, with the default team made
from the historical models. A new corpus or set names its team (goldenset.services makes
one without a team in the default team).
SQLite rebuilds the two tables it alters: every trigger is made again at the end, as in 0020.
"""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


TAGS = importlib.import_module("goldenset.migrations.0020_traffic_weights_and_version_tags")
AUDIT = importlib.import_module("goldenset.migrations.0021_audit_records")
EVIDENCE = TAGS.EVIDENCE


def into_default_team(apps, schema_editor):
    Organisation = apps.get_model("goldenset", "Organisation")
    Team = apps.get_model("goldenset", "Team")
    organisation, _ = Organisation.objects.get_or_create(slug="default", defaults={"name": "Default organisation"})
    team, _ = Team.objects.get_or_create(organisation=organisation, slug="default", defaults={"name": "Default team"})
    apps.get_model("goldenset", "Corpus").objects.filter(team=None).update(team=team)
    apps.get_model("goldenset", "GoldenSet").objects.filter(team=None).update(team=team)


def members_into_default_organisation(apps, schema_editor):
    """Whoever holds a role in a set is a member of the organisation its team belongs to."""
    organisation = apps.get_model("goldenset", "Organisation").objects.get(slug="default")
    OrganisationMembership = apps.get_model("goldenset", "OrganisationMembership")
    people = apps.get_model("goldenset", "Membership").objects.values_list("user_id", flat=True).distinct()
    OrganisationMembership.objects.bulk_create(
        [OrganisationMembership(user_id=pk, organisation=organisation, role="member") for pk in people], ignore_conflicts=True
    )


def remake_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        TAGS.make_triggers(apps, schema_editor)
        AUDIT.drop_triggers(apps, schema_editor)
        AUDIT.make_triggers(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("goldenset", "0021_audit_records"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(EVIDENCE._legacy_alter_table(True), EVIDENCE._legacy_alter_table(False)),
        migrations.CreateModel(
            name="Organisation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("slug", models.SlugField(max_length=100, unique=True)),
                ("name", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["slug"],
            },
        ),
        migrations.CreateModel(
            name="Team",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("slug", models.SlugField(max_length=100)),
                ("name", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "organisation",
                    models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="teams", to="goldenset.organisation"),
                ),
            ],
            options={
                "ordering": ["organisation__slug", "slug"],
            },
        ),
        migrations.AddField(
            model_name="corpus",
            name="team",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="corpora", to="goldenset.team"),
        ),
        migrations.AddField(
            model_name="goldenset",
            name="team",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="golden_sets", to="goldenset.team"
            ),
        ),
        migrations.RunPython(into_default_team, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="corpus",
            name="team",
            field=models.ForeignKey(
                
                on_delete=django.db.models.deletion.PROTECT,
                related_name="corpora",
                to="goldenset.team",
            ),
        ),
        migrations.AlterField(
            model_name="goldenset",
            name="team",
            field=models.ForeignKey(
                
                on_delete=django.db.models.deletion.PROTECT,
                related_name="golden_sets",
                to="goldenset.team",
            ),
        ),
        migrations.CreateModel(
            name="TeamMembership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "role",
                    models.CharField(
                        choices=[("annotator", "Annotator"), ("adjudicator", "Adjudicator"), ("manager", "Manager")], max_length=20
                    ),
                ),
                ("from_sso", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("team", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="goldenset.team")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="team_memberships", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="OrganisationMembership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", models.CharField(choices=[("member", "Member"), ("admin", "Admin")], default="member", max_length=20)),
                ("from_sso", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "organisation",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="goldenset.organisation"),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="organisation_memberships", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("user", "organisation"), name="organisation_membership_unique")],
            },
        ),
        migrations.AddConstraint(
            model_name="team",
            constraint=models.UniqueConstraint(fields=("organisation", "slug"), name="team_slug_unique_in_organisation"),
        ),
        migrations.AddConstraint(
            model_name="teammembership",
            constraint=models.UniqueConstraint(fields=("user", "team", "role"), name="team_membership_unique_role"),
        ),
        migrations.AddField(
            model_name="auditrecord",
            name="organisation",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="goldenset.organisation",
            ),
        ),
        migrations.AddIndex(
            model_name="auditrecord",
            index=models.Index(fields=["organisation", "-at", "-id"], name="audit_organisation_newest"),
        ),
        migrations.RunPython(members_into_default_organisation, migrations.RunPython.noop),
        migrations.RunPython(remake_sqlite_triggers, migrations.RunPython.noop),
        migrations.RunPython(EVIDENCE._legacy_alter_table(False), EVIDENCE._legacy_alter_table(True)),
    ]
