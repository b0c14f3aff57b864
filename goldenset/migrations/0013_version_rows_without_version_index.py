"""The version rows (labels, queries, pages) lose the index Django makes for their
`version` foreign key: each table's unique constraint starts with version_id and serves
every lookup by version, and the third index cost a publish of 60,000 labels about a
tenth of its time (bench/publish.py).

Only the index is dropped, by name as the database reports it: AlterField alone would
drop and re-add each foreign key on PostgreSQL (checking every stored row again) and, on
SQLite, rebuild the three tables, losing their immutability triggers (see 0004)."""

import django.db.models.deletion
from django.db import migrations, models

TABLES = ["goldenset_versionlabel", "goldenset_versionpage", "goldenset_versionquery"]


def _version_index(connection, cursor, table: str) -> str | None:
    constraints = connection.introspection.get_constraints(cursor, table)
    for name, info in constraints.items():
        if info["columns"] == ["version_id"] and info["index"] and not info["unique"] and not info["primary_key"]:
            return name
    return None


def drop_indexes(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in TABLES:
            name = _version_index(connection, cursor, table)
            if name:
                cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")


def create_indexes(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in TABLES:
            if _version_index(connection, cursor, table) is None:
                cursor.execute(f"CREATE INDEX {table}_version_id ON {table} (version_id)")


def _version_field(related_name: str) -> models.ForeignKey:
    return models.ForeignKey(
        db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name=related_name, to="goldenset.version",
    )


class Migration(migrations.Migration):

    dependencies = [
        ("goldenset", "0012_page_changes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="versionlabel", name="version", field=_version_field("labels")),
                migrations.AlterField(model_name="versionpage", name="version", field=_version_field("version_pages")),
                migrations.AlterField(model_name="versionquery", name="version", field=_version_field("version_queries")),
            ],
            database_operations=[migrations.RunPython(drop_indexes, create_indexes)],
        ),
    ]
