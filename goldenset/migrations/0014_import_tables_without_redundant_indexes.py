"""Pages, queries and judgments lose the index Django makes for one foreign key each, which
a unique constraint or index already leads with: page.corpus (page_doc_id_unique_in_corpus),
query.golden_set (query_id_unique_in_golden_set), judgment.query (judgment_pair_latest).
Each was written for every row of an import, 0.1 s of a 100,000-page one
(bench/import_export.py), and served no read the other did not.

Dropped by name, not by AlterField: SQLite would rebuild the tables and lose their
triggers (see 0004_restore_sqlite_triggers)."""

import django.db.models.deletion
from django.db import migrations, models

# (table, column) of each index dropped.
INDEXES = [("goldenset_page", "corpus_id"), ("goldenset_query", "golden_set_id"), ("goldenset_judgment", "query_id")]


def single_column_index(connection, cursor, table: str, column: str) -> str | None:
    """The name of the plain index on `table`(`column`) alone, if there is one."""
    for name, constraint in connection.introspection.get_constraints(cursor, table).items():
        if constraint["index"] and not constraint["unique"] and not constraint["primary_key"] and constraint["columns"] == [column]:
            return name
    return None


def drop_indexes(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table, column in INDEXES:
            name = single_column_index(connection, cursor, table, column)
            if name:
                cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")


def create_indexes(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table, column in INDEXES:
            if single_column_index(connection, cursor, table, column) is None:
                cursor.execute(f"CREATE INDEX {table}_{column} ON {table} ({column})")


class Migration(migrations.Migration):

    dependencies = [
        ("goldenset", "0013_version_rows_without_version_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="page", name="corpus",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="pages", to="goldenset.corpus"),
                ),
                migrations.AlterField(
                    model_name="query", name="golden_set",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="queries", to="goldenset.goldenset"),
                ),
                migrations.AlterField(
                    model_name="judgment", name="query",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="judgments", to="goldenset.query"),
                ),
            ],
            database_operations=[migrations.RunPython(drop_indexes, create_indexes)],
        ),
    ]
