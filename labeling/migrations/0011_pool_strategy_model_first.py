"""Pools may be judged "model first" (labeling.pools.strategies.ModelFirst): the strategy's
choice and the pool_strategy_known check gain it.

SQLite changes a check by building the pool table again, which its triggers on the tasks
table (0002, naming labeling_pool) refuse mid-way: they are dropped first and made again
after (SQLite only; PostgreSQL alters the check in place)."""

import importlib

from django.db import migrations, models


def _references():
    return importlib.import_module("labeling.migrations.0002_task_references")


def drop_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _references().drop_triggers(apps, schema_editor)


def create_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _references().create_triggers(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0010_judge_job_kind'),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers, create_sqlite_triggers),
        migrations.RemoveConstraint(
            model_name='pool',
            name='pool_strategy_known',
        ),
        migrations.AlterField(
            model_name='pool',
            name='strategy',
            field=models.CharField(choices=[('depth', 'depth (rank order)'), ('mtf', 'move-to-front'), ('bandit', 'bandit over runs'), ('model_first', 'model first (uses model labels)')], max_length=20),
        ),
        migrations.AddConstraint(
            model_name='pool',
            constraint=models.CheckConstraint(condition=models.Q(('strategy__in', ['depth', 'mtf', 'bandit', 'model_first'])), name='pool_strategy_known'),
        ),
        migrations.RunPython(create_sqlite_triggers, drop_sqlite_triggers),
    ]
