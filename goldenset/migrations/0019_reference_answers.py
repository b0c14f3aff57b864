"""Reference answers (issue 26): a query's answer, edited by managers, frozen by a version
(VersionAnswer, append-only like the other version rows) and counted on it; and what the
prompt costs, per set (the depth-and-cost sweep's traffic, price and tokens).

SQLite rebuilds the tables it alters (goldenset_goldenset, goldenset_version) and drops
their triggers: every trigger is made again at the end, as in 0016.
"""

import importlib

import django.db.models.deletion
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models

EVIDENCE = importlib.import_module("goldenset.migrations.0016_chunkings_spans_hops_duplicates")
NEW_HISTORY = ["goldenset_versionanswer"]


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
    EVIDENCE.make_triggers(apps, schema_editor)
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
        ("goldenset", "0018_chunking_written_at"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(EVIDENCE._legacy_alter_table(True), EVIDENCE._legacy_alter_table(False)),
        migrations.AddField(
            model_name="goldenset",
            name="context_token_budget",
            field=models.PositiveIntegerField(
                blank=True, help_text="tokens of context a prompt may hold (empty: k_final pages)", null=True
            ),
        ),
        migrations.AddField(
            model_name="goldenset",
            name="monthly_queries",
            field=models.PositiveBigIntegerField(db_default=1000000, default=1000000, help_text="queries a month"),
        ),
        migrations.AddField(
            model_name="goldenset",
            name="price_per_million_input",
            field=models.DecimalField(
                db_default=Decimal("3"), decimal_places=4, default=Decimal("3"), help_text="dollars per million input tokens", max_digits=12
            ),
        ),
        migrations.AddField(
            model_name="goldenset",
            name="tokens_per_page",
            field=models.PositiveIntegerField(db_default=400, default=400, help_text="tokens a page or chunk takes in the prompt"),
        ),
        migrations.AddField(
            model_name="version",
            name="answer_count",
            field=models.PositiveIntegerField(db_default=0, default=0, help_text="queries with a reference answer"),
        ),
        migrations.CreateModel(
            name="ReferenceAnswer",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("answer", models.TextField()),
                ("aliases", models.JSONField(blank=True, default=list)),
                ("key_facts", models.JSONField(blank=True, default=list)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "query",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="reference_answer", to="goldenset.query"
                    ),
                ),
                (
                    "updated_by",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="VersionAnswer",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("answer", models.TextField()),
                ("aliases", models.JSONField(default=list)),
                ("key_facts", models.JSONField(default=list)),
                ("query", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="goldenset.query")),
                (
                    "version",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="answers", to="goldenset.version"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("version", "query"), name="version_answer_unique_query")],
            },
        ),
        migrations.RunPython(make_triggers, drop_triggers),
        migrations.RunPython(EVIDENCE._legacy_alter_table(False), EVIDENCE._legacy_alter_table(True)),
    ]
