"""Database triggers that make published versions and raw judgments unchangeable.

The app's querysets and models already refuse to update or delete these rows; the
triggers make the rule hold for every other path too (raw SQL, a shell, a future bug).

UPDATE is refused on both databases. DELETE is refused on PostgreSQL only: SQLite's
test flush empties tables with DELETE (PostgreSQL's uses TRUNCATE, which these
triggers do not see), and on SQLite deletes stay refused by the app code.
"""

from django.db import migrations

TABLES = [
    "goldenset_version",
    "goldenset_versionlabel",
    "goldenset_versionquery",
    "goldenset_versionpage",
    "goldenset_judgment",
]

POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION goldset_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'goldset: rows of % are immutable (published versions and judgments are never changed)', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
"""


def create_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRES_FUNCTION)
            for table in TABLES:
                cursor.execute(
                    f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                    f"FOR EACH ROW EXECUTE FUNCTION goldset_refuse_change();"
                )
        elif connection.vendor == "sqlite":
            for table in TABLES:
                cursor.execute(
                    f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'goldset: rows of {table} are immutable'); END;"
                )


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in TABLES:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable;")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS goldset_refuse_change();")


class Migration(migrations.Migration):
    dependencies = [("goldenset", "0001_initial")]
    operations = [migrations.RunPython(create_triggers, drop_triggers)]
