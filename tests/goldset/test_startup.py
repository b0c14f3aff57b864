"""Start-up loads no scoring machinery: numba, ranx (and the scipy and pandas it brings) and
aiohttp are imported where a score is computed or an endpoint or a judge is asked, never by
loading the apps, the admin, the template tags or the URL conf, which every management
command, web worker and Celery worker does first (bench/startup.py times it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOADED_LATER = ("numba", "ranx", "scipy", "pandas", "aiohttp")

# A fresh interpreter: the test session itself has long imported all of them.
SCRIPT = """
import sys
import django
from django.core.management import call_command
from django.urls import get_resolver

django.setup()
get_resolver().url_patterns  # the whole URL conf, every view module with it
call_command("check", verbosity=0)
print("loaded:", *(name for name in {names!r} if name in sys.modules))
"""

SCORING = """
import sys
import django
django.setup()
from evaluation.warmup import warm_kernels
warm_kernels()
print("loaded:", *(name for name in ("numba", "ranx") if name in sys.modules))
"""


def _run(script: str, settings: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": settings}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith("loaded:")]
    return line.removeprefix("loaded:").strip()


@pytest.mark.parametrize("settings", ["goldset.settings", "goldset.settings_test"])
def test_loading_the_url_conf_and_running_check_imports_no_scoring_or_http_client(settings):
    assert _run(SCRIPT.format(names=LOADED_LATER), settings) == ""


def test_warming_the_kernels_loads_numba_but_not_ranx():
    # The other side of the lazy import: scoring still finds numba (evaluation.kernels), and
    # its kernels give ranx's values without ranx, so a worker never loads scipy and pandas.
    assert _run(SCORING, "goldset.settings").split() == ["numba"]
