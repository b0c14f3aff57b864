"""Start-up of a management command: `manage.py check` against Django's own, in the same run.

    .venv/bin/python bench/startup.py [--rounds 7] [--settings goldset.settings]

Every management command, every gunicorn worker and every Celery worker pays the import of
the project before it does anything; `check` is the command that does nothing else (it
loads the apps, the admin, the template tags and the whole URL conf). The script times, in
fresh processes, round after round, one of each back to back:

- goldset: `python manage.py check` of this repository (the embedded default settings,
  unless --settings says otherwise);
- django: the same command of a bare project written to a temporary folder: Django's
  contrib apps (admin, auth, contenttypes, sessions, messages, staticfiles) and the admin's
  URLs, nothing else: what any Django project pays;
- framework: that bare project with the third-party apps Goldset installs (django_htmx,
  axes, csp, rest_framework, drf_spectacular and its sidecar) and a URL conf that serves
  DRF's API root and drf-spectacular's schema view: the floor Goldset's own code stands on.

Python is run as a deployment runs it: the bytecode of every module is compiled once,
before timing (into a PYTHONPYCACHEPREFIX folder of the run, so the repository gets no
__pycache__; the image does the same with compileall). One round run without bytecode
caching (PYTHONDONTWRITEBYTECODE=1 and an empty prefix) is printed for information: every
process then compiles the project's sources again.

It prints the median of --rounds rounds for each, goldset's ratios to both references,
and the target: goldset's `check` under 1.5 s. It also names the heavy packages the check
did or did not import (numba, ranx, scipy, pandas, aiohttp), read from sys.modules of one
more run. The machine is shared: the figures vary from run to run, the ratios less.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TARGET_SECONDS = 1.5
HEAVY = ("numba", "ranx", "scipy", "pandas", "matplotlib", "aiohttp")

BARE_SETTINGS = """SECRET_KEY = "bench-startup-only"
DEBUG = True
ALLOWED_HOSTS = []
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
    "django.contrib.messages", "django.contrib.staticfiles",{extra_apps}
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware", "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware", "django.contrib.messages.middleware.MessageMiddleware",{extra_middleware}
]
ROOT_URLCONF = "{name}_urls"
TEMPLATES = [{{
    "BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [], "APP_DIRS": True,
    "OPTIONS": {{"context_processors": [
        "django.template.context_processors.request", "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]}},
}}]
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": "{database}"}}}}
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
{extra_settings}
"""

FRAMEWORK_APPS = '"django_htmx", "axes", "csp", "rest_framework", "drf_spectacular", "drf_spectacular_sidecar",'
FRAMEWORK_SETTINGS = """AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}
"""

BARE_URLS = """from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
"""

FRAMEWORK_URLS = """from django.contrib import admin
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema")),
] + DefaultRouter().urls
"""

MANAGE = """import sys
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
"""


def write_bare_project(folder: Path) -> None:
    """Two throwaway projects in `folder`: bench_django (contrib apps) and bench_framework
    (plus Goldset's third-party apps), each a settings and a URL module, and a manage.py."""
    (folder / "manage.py").write_text(MANAGE)
    for name, apps, middleware, settings, urls in (
        ("bench_django", "", "", "", BARE_URLS),
        ("bench_framework", FRAMEWORK_APPS, '"axes.middleware.AxesMiddleware",', FRAMEWORK_SETTINGS, FRAMEWORK_URLS),
    ):
        (folder / f"{name}.py").write_text(
            BARE_SETTINGS.format(
                extra_apps=apps,
                extra_settings=settings,
                extra_middleware=middleware,
                name=name,
                database=str(folder / f"{name}.sqlite3"),
            )
        )
        (folder / f"{name}_urls.py").write_text(urls)


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or "no issues" not in done.stdout:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return seconds


def heavy_modules(env: dict[str, str], settings: str) -> list[str]:
    """Which of HEAVY `manage.py check` left in sys.modules."""
    probe = (
        "import sys; from django.core.management import call_command; import django; django.setup(); "
        f"call_command('check', verbosity=0); print('loaded:', *(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**env, "DJANGO_SETTINGS_MODULE": settings}, cwd=REPO, capture_output=True, text=True, check=True
    )
    [line] = [line for line in done.stdout.splitlines() if line.startswith("loaded:")]
    return line.removeprefix("loaded:").split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds to take the median of (default 7)")
    parser.add_argument("--settings", default="goldset.settings", help="Goldset's settings module (default the embedded one)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    with tempfile.TemporaryDirectory(prefix="goldset-bench-startup-") as temp:
        folder = Path(temp)
        write_bare_project(folder)
        cache = folder / "pycache"
        base = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "DATABASE_URL")}
        cached = {**base, "PYTHONPYCACHEPREFIX": str(cache)}
        goldset_env = {**cached, "DJANGO_SETTINGS_MODULE": args.settings}
        commands = {
            "goldset": ([sys.executable, "manage.py", "check"], goldset_env, REPO),
            "django": ([sys.executable, "manage.py", "check"], {**cached, "DJANGO_SETTINGS_MODULE": "bench_django"}, folder),
            "framework": ([sys.executable, "manage.py", "check"], {**cached, "DJANGO_SETTINGS_MODULE": "bench_framework"}, folder),
        }
        # No bytecode cache at all: what each process paid before the image compiled it.
        uncached_env = {**goldset_env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(folder / "empty")}
        uncached = timed([sys.executable, "manage.py", "check"], uncached_env, REPO)
        for command, env, cwd in commands.values():  # compiles every module once, into the prefix
            timed(command, env, cwd)
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        for number in range(1, args.rounds + 1):
            for name, (command, env, cwd) in commands.items():
                seconds[name].append(timed(command, env, cwd))
            print(f"  round {number}: " + ", ".join(f"{name} {values[-1]:.2f}s" for name, values in seconds.items()), file=sys.stderr)
        heavy = heavy_modules(cached, args.settings)

    median = {name: statistics.median(values) for name, values in seconds.items()}
    goldset = median["goldset"]
    print()
    print(f"Start-up: `manage.py check` ({args.settings}), fresh processes, median of {args.rounds} round(s)")
    print(f"machine: {os.cpu_count()} cores (shared), load average {os.getloadavg()[0]:.2f} at the end, Python {platform.python_version()}")
    print()
    header = f"{'command':<64}{'median':>9}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    print(f"{'goldset: manage.py check':<64}{goldset:>8.2f}s")
    print(f"{'django: bare project, contrib apps and the admin':<64}{median['django']:>8.2f}s{goldset / median['django']:>7.2f}x")
    print(
        f"{'framework: bare project + Goldset third-party apps, DRF, schema':<64}"
        f"{median['framework']:>8.2f}s{goldset / median['framework']:>7.2f}x"
    )
    print(f"{'goldset without any bytecode cache (one run, information)':<64}{uncached:>8.2f}s")
    print()
    print(f"target: goldset's check under {TARGET_SECONDS:.1f} s: {goldset:.2f} s  {'PASS' if goldset < TARGET_SECONDS else 'MISS'}")
    print(f"goldset's own share (goldset - framework): {goldset - median['framework']:.2f} s")
    print(f"heavy packages the check imported: {', '.join(heavy) if heavy else 'none'} (of {', '.join(HEAVY)})")
    rounds = "; ".join(", ".join(f"{values[i]:.2f}" for values in seconds.values()) for i in range(args.rounds))
    print(f"seconds per round (goldset, django, framework): {rounds}")


if __name__ == "__main__":
    main()
