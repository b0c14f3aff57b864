"""A query's sampling weight (issue 28: inclusion probability, stratum, traffic count), on
the query and frozen on its version row; version tags and the append-only history of their
moves (issue 29).

SQLite rebuilds the tables it alters (goldenset_query, goldenset_versionquery) and drops
their triggers: every trigger is made again at the end, as in 0016 and 0019.
"""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import goldenset.models.corpora

ANSWERS = importlib.import_module("goldenset.migrations.0019_reference_answers")
EVIDENCE = ANSWERS.EVIDENCE
NEW_HISTORY = ["goldenset_versiontagmove"]


def make_triggers(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for table in NEW_HISTORY:
                cursor.execute(
                    f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                    "FOR EACH ROW EXECUTE FUNCTION goldset_refuse_change();"
                )
        return
    ANSWERS.make_triggers(apps, schema_editor)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for table in NEW_HISTORY:
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable")
                cursor.execute(
                    f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'goldset: rows of {table} are immutable'); END;"
                )


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in NEW_HISTORY:
            on = f" ON {table}" if connection.vendor == "postgresql" else ""
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable{on}")


class Migration(migrations.Migration):
    dependencies = [
        ("goldenset", "0019_reference_answers"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(EVIDENCE._legacy_alter_table(True), EVIDENCE._legacy_alter_table(False)),
        migrations.AddField(
            model_name="query",
            name="inclusion_probability",
            field=models.FloatField(blank=True, help_text="the chance the sampling design drew it", null=True),
        ),
        migrations.AddField(
            model_name="query",
            name="stratum",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="query",
            name="traffic_count",
            field=models.PositiveBigIntegerField(blank=True, help_text="its events in the query log it was drawn from", null=True),
        ),
        migrations.AddField(
            model_name="versionquery",
            name="inclusion_probability",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="versionquery",
            name="stratum",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="versionquery",
            name="traffic_count",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="VersionTagMove",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=50)),
                ("moved_at", models.DateTimeField()),
                ("note", models.TextField(blank=True)),
                (
                    "from_version",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="goldenset.version"
                    ),
                ),
                ("golden_set", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="goldenset.goldenset")),
                (
                    "moved_by",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
                ("to_version", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="goldenset.version")),
            ],
            options={
                "ordering": ["golden_set", "name", "moved_at", "id"],
            },
        ),
        migrations.CreateModel(
            name="VersionTag",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=50, validators=[goldenset.models.corpora.validate_id])),
                ("moved_at", models.DateTimeField()),
                (
                    "golden_set",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="version_tags", to="goldenset.goldenset"),
                ),
                (
                    "moved_by",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
                ("version", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="tags", to="goldenset.version")),
            ],
            options={
                "ordering": ["golden_set", "name"],
                "constraints": [models.UniqueConstraint(fields=("golden_set", "name"), name="version_tag_unique_name")],
            },
        ),
        migrations.RunPython(make_triggers, drop_triggers),
        migrations.RunPython(EVIDENCE._legacy_alter_table(False), EVIDENCE._legacy_alter_table(True)),
    ]
