"""A judging task goes to one annotator at a time on the embedded SQLite default too
(SEMANTICS.md, "Judging"): six annotators race through a pool in a process of its own on a SQLite file
(tests/labeling/judging/sqlite_race.py), whatever database the suite itself runs on."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.migrated import app_environment, sqlite_template

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("overlap_share", [0.0, 0.3])
def test_the_embedded_default_hands_each_task_to_one_annotator_at_a_time(tmp_path, overlap_share):
    # A copy of the migrated embedded default: the race's own migrate then has nothing to do.
    shutil.copyfile(sqlite_template(), tmp_path / "race.sqlite3")
    env = app_environment(SQLITE_PATH=str(tmp_path / "race.sqlite3"))
    done = subprocess.run(
        [sys.executable, "-m", "tests.labeling.judging.sqlite_race", str(overlap_share)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"vendor": "sqlite", "problems": []}
