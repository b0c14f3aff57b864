"""Documents and chunkings, evidence spans, hops and duplicate groups (issue 25).

Existing pages are the documents; the implicit chunking "documents" (one chunk a document,
its id the doc_id) needs no rows, so no published version's rows, hash or export change.

The new history tables (a judgment's spans, a version's spans) are append-only like the
others (0002). SQLite rebuilds a table it alters and drops its triggers: every trigger of
0002, 0005 and 0012 is made again there at the end (see 0004_restore_sqlite_triggers).
"""

import importlib

import django.db.models.deletion
import goldenset.models
from django.db import migrations, models


HISTORY = importlib.import_module("goldenset.migrations.0002_immutable_history")
FROZEN = importlib.import_module("goldenset.migrations.0005_freeze_published_ids")
CHANGES = importlib.import_module("goldenset.migrations.0012_page_changes")
NEW_HISTORY = ["goldenset_evidencespan", "goldenset_versionspan", "goldenset_versionduplicate"]


def make_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in NEW_HISTORY:
                cursor.execute(
                    f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                    "FOR EACH ROW EXECUTE FUNCTION goldset_refuse_change();"
                )
            return
        if connection.vendor != "sqlite":
            return
        for table in [*HISTORY.TABLES, *NEW_HISTORY]:
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable")
            cursor.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'goldset: rows of {table} are immutable'); END;"
            )
        for table, *_ in FROZEN.FROZEN:
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_ids_frozen")
        cursor.execute(f"DROP TRIGGER IF EXISTS {CHANGES.TRIGGER}")
    FROZEN.create_triggers(apps, schema_editor)
    CHANGES.create_trigger(apps, schema_editor)


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in NEW_HISTORY:
            on = f" ON {table}" if connection.vendor == "postgresql" else ""
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable{on}")


def _legacy_alter_table(on: bool):
    """SQLite remakes a table it alters (a new table renamed to the old name); since 3.26 the
    rename re-reads every trigger of the schema and fails on one whose body names a table
    that is being remade (labeling's task triggers name goldenset_goldenset and
    goldenset_page): an existing database could not migrate. In legacy mode the rename
    leaves other triggers as they are, and they name the table rightly again once it is
    back under its name."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(f"PRAGMA legacy_alter_table = {'ON' if on else 'OFF'}")

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('goldenset', '0015_worker_start'),
    ]

    operations = [
        migrations.RunPython(_legacy_alter_table(True), _legacy_alter_table(False)),
        migrations.AddField(
            model_name='goldenset',
            name='span_min_overlap_chars',
            field=models.PositiveIntegerField(default=100, help_text='characters of a span a chunk must hold to carry its grade'),
        ),
        migrations.AddField(
            model_name='goldenset',
            name='span_min_overlap_share',
            field=models.FloatField(default=0.5, help_text="or this share (0-1) of the span's length, whichever is less"),
        ),
        migrations.AddField(
            model_name='judgment',
            name='hop',
            field=models.CharField(blank=True, db_default='', default='', max_length=100),
        ),
        migrations.AddField(
            model_name='page',
            name='duplicate_of',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='duplicates', to='goldenset.page'),
        ),
        migrations.AddField(
            model_name='version',
            name='duplicate_count',
            field=models.PositiveIntegerField(db_default=0, default=0, help_text='documents counted as another of their group'),
        ),
        migrations.AddField(
            model_name='version',
            name='hop_count',
            field=models.PositiveIntegerField(db_default=0, default=0, help_text='labels with a hop'),
        ),
        migrations.AddField(
            model_name='version',
            name='span_count',
            field=models.PositiveIntegerField(db_default=0, default=0, help_text='evidence spans'),
        ),
        migrations.AddField(
            model_name='version',
            name='span_min_overlap_chars',
            field=models.PositiveIntegerField(db_default=100, default=100),
        ),
        migrations.AddField(
            model_name='version',
            name='span_min_overlap_share',
            field=models.FloatField(db_default=0.5, default=0.5),
        ),
        migrations.AddField(
            model_name='versionlabel',
            name='hop',
            field=models.CharField(blank=True, db_default='', default='', max_length=100),
        ),
        migrations.CreateModel(
            name='Chunking',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, validators=[goldenset.models.validate_id])),
                ('description', models.TextField(blank=True)),
                ('chunk_count', models.PositiveIntegerField(default=0)),
                ('document_count', models.PositiveIntegerField(default=0, help_text='documents with at least one chunk')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='chunkings', to='goldenset.corpus')),
            ],
            options={
                'ordering': ['corpus', 'name'],
            },
        ),
        migrations.CreateModel(
            name='Chunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('chunk_id', models.CharField(max_length=255, validators=[goldenset.models.validate_id])),
                ('start', models.PositiveIntegerField()),
                ('end', models.PositiveIntegerField()),
                ('page', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='chunks', to='goldenset.page')),
                ('chunking', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='goldenset.chunking')),
            ],
        ),
        migrations.CreateModel(
            name='EvidenceSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start', models.PositiveIntegerField()),
                ('end', models.PositiveIntegerField()),
                ('grade', models.SmallIntegerField()),
                ('text', models.TextField(blank=True)),
                ('judgment', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='spans', to='goldenset.judgment')),
            ],
        ),
        migrations.CreateModel(
            name='VersionDuplicate',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('group_page', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='goldenset.page')),
                ('page', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='goldenset.page')),
                ('version', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='duplicates', to='goldenset.version')),
            ],
        ),
        migrations.CreateModel(
            name='VersionSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start', models.PositiveIntegerField()),
                ('end', models.PositiveIntegerField()),
                ('grade', models.SmallIntegerField()),
                ('page', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='goldenset.page')),
                ('query', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='goldenset.query')),
                ('version', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='spans', to='goldenset.version')),
            ],
        ),
        migrations.AddConstraint(
            model_name='chunking',
            constraint=models.UniqueConstraint(fields=('corpus', 'name'), name='chunking_name_unique_in_corpus'),
        ),
        migrations.AddConstraint(
            model_name='chunking',
            constraint=models.CheckConstraint(condition=models.Q(('name', 'documents'), _negated=True), name='chunking_documents_is_implicit'),
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(fields=['page', 'chunking', 'start'], name='chunk_of_document'),
        ),
        migrations.AddConstraint(
            model_name='chunk',
            constraint=models.UniqueConstraint(fields=('chunking', 'chunk_id'), name='chunk_id_unique_in_chunking'),
        ),
        migrations.AddConstraint(
            model_name='chunk',
            constraint=models.CheckConstraint(condition=models.Q(('end__gt', models.F('start'))), name='chunk_not_empty'),
        ),
        migrations.AddConstraint(
            model_name='evidencespan',
            constraint=models.CheckConstraint(condition=models.Q(('end__gt', models.F('start'))), name='evidence_span_not_empty'),
        ),
        migrations.AddConstraint(
            model_name='versionduplicate',
            constraint=models.UniqueConstraint(fields=('version', 'page'), name='version_duplicate_unique_page'),
        ),
        migrations.AddIndex(
            model_name='versionspan',
            index=models.Index(fields=['version', 'query', 'page', 'start'], name='version_span_of_label'),
        ),
        migrations.AddConstraint(
            model_name='versionspan',
            constraint=models.CheckConstraint(condition=models.Q(('end__gt', models.F('start'))), name='version_span_not_empty'),
        ),
        migrations.RunPython(make_triggers, drop_triggers),
        migrations.RunPython(_legacy_alter_table(False), _legacy_alter_table(True)),
    ]
