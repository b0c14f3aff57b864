"""The annotators' race of judging_data.race on the embedded default: a SQLite file with
WAL and IMMEDIATE transactions (goldset.settings.sqlite_database). Run by
test_queue_sqlite.py in a process of its own, because the suite runs on PostgreSQL whenever
it answers and one process has one default database.

    SQLITE_PATH=/tmp/race.sqlite3 python -m tests.labeling.judging.sqlite_race OVERLAP_SHARE

Migrates the file, builds a pool of 10 queries x 10 pages with windows of two, lets six
annotators judge all of it at once, and prints one JSON line: the database's vendor and
what went wrong ([] when nothing did).
"""

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402  (after django.setup)
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from labeling.pools import services  # noqa: E402
from tests.labeling.judging.judging_data import annotator_of, pooled_set, race  # noqa: E402


def main(overlap_share: float) -> dict:
    call_command("migrate", verbosity=0)
    services.QUEUE_FLOOR = 1  # windows of two: judgments make most of the tasks as they go
    pool = pooled_set("race", queries=10, pages=12, depth=10, overlap_share=overlap_share)
    make_user = lambda username: get_user_model().objects.create_user(username=username)  # noqa: E731
    users = [annotator_of(pool.golden_set, make_user, f"a{n}") for n in range(6)]
    return {"vendor": connection.vendor, "problems": race(pool, users)}


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]))))
