"""Pool.task_count counted the pool's pairs, judging tasks or not (0004): named for them now."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("labeling", "0005_pool_job"),
    ]

    operations = [
        migrations.RenameField(model_name="pool", old_name="task_count", new_name="pair_count"),
    ]
