"""The audit trail (issue 29): AuditRecord, and triggers refusing UPDATE and DELETE of its
rows on both databases, so no path (raw SQL, a shell, a future bug) edits the trail.

Unlike the version tables (0002), DELETE is refused on SQLite too. SQLite's test flush
empties tables with DELETE, so the test suite's flush drops this one trigger first and
makes it again after (tests/conftest.py, SQLITE_UNDELETABLE); nothing else does.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "goldenset_auditrecord"
SQLITE_UNCHANGEABLE = (
    f"CREATE TRIGGER {TABLE}_unchangeable BEFORE UPDATE ON {TABLE} "
    f"BEGIN SELECT RAISE(ABORT, 'goldset: rows of {TABLE} are immutable'); END;"
)
SQLITE_UNDELETABLE = (
    f"CREATE TRIGGER {TABLE}_undeletable BEFORE DELETE ON {TABLE} BEGIN SELECT RAISE(ABORT, 'goldset: rows of {TABLE} are immutable'); END;"
)


def make_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # goldset_refuse_change() is 0002's.
            cursor.execute(
                f"CREATE TRIGGER {TABLE}_immutable BEFORE UPDATE OR DELETE ON {TABLE} "
                "FOR EACH ROW EXECUTE FUNCTION goldset_refuse_change();"
            )
        elif connection.vendor == "sqlite":
            cursor.execute(SQLITE_UNCHANGEABLE)
            cursor.execute(SQLITE_UNDELETABLE)


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_immutable ON {TABLE}")
        elif connection.vendor == "sqlite":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_unchangeable")
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_undeletable")


class Migration(migrations.Migration):
    dependencies = [
        ("goldenset", "0020_traffic_weights_and_version_tags"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditRecord",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("at", models.DateTimeField(auto_now_add=True)),
                ("username", models.CharField(blank=True, max_length=150)),
                ("action", models.CharField(help_text="a short verb name: version.publish, token.revoke, ...", max_length=60)),
                ("object_type", models.CharField(blank=True, max_length=60)),
                ("object_id", models.CharField(blank=True, max_length=60)),
                ("object_label", models.CharField(blank=True, max_length=300)),
                ("golden_set_slug", models.CharField(blank=True, max_length=100)),
                ("before", models.JSONField(blank=True, default=dict)),
                ("after", models.JSONField(blank=True, default=dict)),
                ("ip", models.GenericIPAddressField(blank=True, null=True)),
                (
                    "golden_set",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="goldenset.goldenset",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-at", "-id"],
                "indexes": [models.Index(fields=["golden_set", "-at", "-id"], name="audit_set_newest")],
            },
        ),
        migrations.RunPython(make_triggers, drop_triggers),
    ]
