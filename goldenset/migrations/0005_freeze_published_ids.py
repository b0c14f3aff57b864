"""Database triggers that freeze the ids a published version's export and hash depend on.

A version stores its labels by reference to queries and pages; the ids in its exports
(query_id, doc_id) are read through those references. Renaming a query or a page that a
version holds would change the version's exports while its content hash and ETag stay
the same, so once a query is in a version its `query_id` and `golden_set` cannot change,
and once a page is in a version its `doc_id` and `corpus` cannot change: on both
databases, whatever the path (admin, shell, raw SQL). Rows in no version stay editable.
"""

from django.db import migrations

# (table, the columns frozen, the snapshot table whose rows pin it, its reference column)
FROZEN = [
    ("goldenset_query", ["query_id", "golden_set_id"], "goldenset_versionquery", "query_id"),
    ("goldenset_page", ["doc_id", "corpus_id"], "goldenset_versionpage", "page_id"),
]

MESSAGE = "goldset: {table}.{columns} of a row in a published version cannot change (its exports and content hash depend on it)"


def _changed(columns: list[str], distinct: str) -> str:
    return " OR ".join(f"NEW.{column} {distinct} OLD.{column}" for column in columns)


def create_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table, columns, snapshot, reference in FROZEN:
            message = MESSAGE.format(table=table, columns="/".join(columns))
            if connection.vendor == "postgresql":
                cursor.execute(f"""
                    CREATE OR REPLACE FUNCTION {table}_refuse_id_change() RETURNS trigger AS $$
                    BEGIN
                        IF ({_changed(columns, 'IS DISTINCT FROM')})
                           AND EXISTS (SELECT 1 FROM {snapshot} WHERE {reference} = OLD.id) THEN
                            RAISE EXCEPTION '{message}' USING ERRCODE = 'restrict_violation';
                        END IF;
                        RETURN NEW;
                    END;
                    $$ LANGUAGE plpgsql;
                """)
                cursor.execute(
                    f"CREATE TRIGGER {table}_ids_frozen BEFORE UPDATE ON {table} "
                    f"FOR EACH ROW EXECUTE FUNCTION {table}_refuse_id_change();"
                )
            elif connection.vendor == "sqlite":
                cursor.execute(
                    f"CREATE TRIGGER {table}_ids_frozen BEFORE UPDATE ON {table} "
                    f"WHEN ({_changed(columns, 'IS NOT')}) AND EXISTS (SELECT 1 FROM {snapshot} WHERE {reference} = OLD.id) "
                    f"BEGIN SELECT RAISE(ABORT, '{message}'); END;"
                )


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table, *_ in FROZEN:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_ids_frozen ON {table};")
                cursor.execute(f"DROP FUNCTION IF EXISTS {table}_refuse_id_change();")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_ids_frozen;")


class Migration(migrations.Migration):
    dependencies = [("goldenset", "0004_restore_sqlite_triggers")]
    operations = [migrations.RunPython(create_triggers, drop_triggers)]
