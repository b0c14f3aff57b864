"""Pages whose content changed, kept by a database trigger (goldenset.models.PageChange).

An UPDATE of goldenset_page that changes content_hash records the page in
goldenset_pagechange, on both databases and whatever the path (a corpus sync in SQL, a
shell, the admin). The table starts with the pages that some judgment already recorded
another hash for: the changes made before the trigger existed.

SQLite drops a table's triggers when a migration rebuilds the table: a later migration that
alters goldenset_page must make this trigger again (see 0004_restore_sqlite_triggers).
"""

import django.db.models.deletion
from django.db import migrations, models

TRIGGER = "goldenset_page_content_changed"


def create_trigger(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"""
                CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger AS $$
                BEGIN
                    INSERT INTO goldenset_pagechange (page_id) VALUES (NEW.id) ON CONFLICT (page_id) DO NOTHING;
                    RETURN NEW;
                END;
                $$ LANGUAGE plpgsql;
            """)
            cursor.execute(
                f"CREATE TRIGGER {TRIGGER} AFTER UPDATE OF content_hash ON goldenset_page FOR EACH ROW "
                f"WHEN (NEW.content_hash IS DISTINCT FROM OLD.content_hash) EXECUTE FUNCTION {TRIGGER}();"
            )
        elif connection.vendor == "sqlite":
            cursor.execute(
                f"CREATE TRIGGER {TRIGGER} AFTER UPDATE OF content_hash ON goldenset_page FOR EACH ROW "
                "WHEN NEW.content_hash IS NOT OLD.content_hash BEGIN "
                "INSERT OR IGNORE INTO goldenset_pagechange (page_id) VALUES (NEW.id); "
                "END;"
            )
        else:
            return
        cursor.execute(
            "INSERT INTO goldenset_pagechange (page_id) SELECT DISTINCT p.id FROM goldenset_page p "
            "JOIN goldenset_judgment j ON j.page_id = p.id WHERE j.page_hash <> '' AND j.page_hash <> p.content_hash"
        )


def drop_trigger(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON goldenset_page;")
            cursor.execute(f"DROP FUNCTION IF EXISTS {TRIGGER}();")
        elif connection.vendor == "sqlite":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER};")


class Migration(migrations.Migration):

    dependencies = [
        ("goldenset", "0011_version_model_fill"),
    ]

    operations = [
        migrations.CreateModel(
            name="PageChange",
            fields=[
                ("page", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name="+", serialize=False, to="goldenset.page")),
            ],
        ),
        migrations.RunPython(create_trigger, drop_trigger),
    ]
