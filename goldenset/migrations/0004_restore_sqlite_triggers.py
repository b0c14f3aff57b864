"""SQLite alters a table by building a new one and copying the rows over, which drops the
table's triggers: 0003 rebuilt goldenset_judgment and lost the immutability trigger 0002
made on it. They are made again here, on SQLite only (PostgreSQL alters in place). A
later migration that alters a table with triggers must do the same; the tests of the
database's refusals catch one that does not, when the suite runs on SQLite."""

import importlib

from django.db import migrations

HISTORY = importlib.import_module("goldenset.migrations.0002_immutable_history")


def restore(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for table in HISTORY.TABLES:
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable")
    HISTORY.create_triggers(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ("goldenset", "0003_judgment_adjudicated"),
    ]

    operations = [
        migrations.RunPython(restore, migrations.RunPython.noop),
    ]
