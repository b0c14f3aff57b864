"""Settings, read from the environment with embedded defaults.

With nothing set, Goldset runs on SQLite in the repository folder and runs Celery tasks
in-process, so a laptop needs no services. DATABASE_URL switches to PostgreSQL,
CELERY_BROKER_URL to a real broker (Redis). goldset.settings_production adds the
checks a deployment needs.
"""

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import dj_database_url
from csp.constants import NONE as CSP_NONE
from csp.constants import SELF as CSP_SELF
from csp.constants import UNSAFE_INLINE as CSP_UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from goldset.env import env_bool, env_int, env_list, env_networks, env_str, numba_cache_dir

BASE_DIR = Path(__file__).resolve().parent.parent

# numba reads this when ranx is first imported, so it is set before any app loads.
os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir()

# Off by default, the embedded default included: a first run shows the site's own 404 and
# 500 pages (a page a role may not open is the site's 404, not Django's list of every URL).
# DEBUG=true is for a developer reading tracebacks in the browser.
DEBUG = env_bool("DEBUG", False)
# Only the embedded default may use this key; settings_production refuses to start with it.
INSECURE_DEV_SECRET_KEY = "goldset-dev-only-not-secret"
SECRET_KEY = env_str("SECRET_KEY", INSECURE_DEV_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "goldenset",
    "evaluation",
    "labeling",
    "monitoring",
    "answers",
    "traffic",
    "api",
    "goldset",
]

MIDDLEWARE = [
    # Log ids and request timing wrap everything else (goldset.logs, goldset.metrics);
    # neither reads the body.
    "goldset.logs.LogContextMiddleware",
    "goldset.metrics.RequestMetricsMiddleware",
    # Then: a body over the limit is refused before anything reads it.
    "goldset.middleware.RequestSizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page (429).
    "axes.middleware.AxesMiddleware",
]

# The largest request body taken in, in MB (uploads of runs and qrels, API imports): a run of
# 10,000 queries at depth 100 is about 40 MB. Over it, 413 before the body is read.
MAX_REQUEST_MB = env_int("MAX_REQUEST_MB", 100)
# What a compressed run (gzip, LZ4, parquet) may expand to once decompressed, in MB, and at
# most RUN_MAX_EXPANSION_RATIO times its compressed size (past the first 8 MB): the request
# cap counts compressed bytes, and a 19 KB LZ4 file can expand to 2 GB. Over either, 413.
RUN_MAX_EXPANDED_MB = env_int("RUN_MAX_EXPANDED_MB", 1024)
RUN_MAX_EXPANSION_RATIO = env_int("RUN_MAX_EXPANSION_RATIO", 100)
# A run upload over this many MB is not read in the request: it is written to
# RUN_UPLOAD_SPOOL and a worker reads and stores it (evaluation.run_uploads), while the page
# or the API answers at once with the job to follow. At or under it, the request reads it.
RUN_INLINE_UPLOAD_MB = env_int("RUN_INLINE_UPLOAD_MB", 8)
# A query log uploaded on its page is read in the request up to this many MB of text (once
# decompressed: a small gzip may hold a large log); a larger log is refused (413), to be
# imported with `manage.py import_query_log`, which streams any size.
QUERY_LOG_UPLOAD_MB = env_int("QUERY_LOG_UPLOAD_MB", 64)
# The folder those uploads wait in until their job ends: shared by the web servers and the
# workers (docker-compose.yml mounts one volume into both). Unset: spool/ in the repository.
RUN_UPLOAD_SPOOL = env_str("RUN_UPLOAD_SPOOL", str(BASE_DIR / "spool"))

# Content-Security-Policy (django-csp) on every response: scripts and style sheets come from
# the app's own static files only (no inline script anywhere: the judging and adjudication
# keys are static files, htmx runs without eval and without its injected <style>); style
# attributes are allowed for the charts' computed widths and colours, which the templates
# escape; pages show no image or frame from elsewhere (a page's text is sanitised too).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [CSP_SELF],
        "script-src": [CSP_SELF],
        "style-src": [CSP_SELF],
        "style-src-attr": [CSP_UNSAFE_INLINE],
        "img-src": [CSP_SELF, "data:"],
        "font-src": [CSP_SELF],
        "connect-src": [CSP_SELF],
        "object-src": [CSP_NONE],
        "base-uri": [CSP_NONE],
        "form-action": [CSP_SELF],
        "frame-ancestors": [CSP_NONE],
    },
}

ROOT_URLCONF = "goldset.urls"
WSGI_APPLICATION = "goldset.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database_from_env() -> dict:
    url = env_str("DATABASE_URL")
    if url:
        config = dj_database_url.parse(url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60))
        if config["ENGINE"] == "django.db.backends.sqlite3":
            # A SQLite file named by URL is the embedded database all the same: it needs
            # WAL and IMMEDIATE transactions as much (see sqlite_database).
            return sqlite_database(config["NAME"])
        if config["ENGINE"] == "django.db.backends.postgresql":
            config["CONN_HEALTH_CHECKS"] = True
            return postgresql_options(config)
        return config
    return sqlite_database(env_str("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")))


def postgresql_options(config: dict) -> dict:
    """`config` (a PostgreSQL database setting) with the connection options the app relies
    on; the test suite's database takes them too."""
    options = config.setdefault("OPTIONS", {})
    # Django opens a server-side cursor only for QuerySet.iterator(), and every caller
    # here reads it to the end (qrels exports, publishing, scoring). PostgreSQL plans a
    # cursor for its first 10% of rows by default, which for a version's million labels
    # chose nested loops of index look-ups, five times slower than the hash joins it
    # picks for the whole result (bench/export.py).
    options["options"] = "-c cursor_tuple_fraction=1"
    return config


def sqlite_database(path: str) -> dict:
    """The embedded default. WAL lets readers work beside the writer, and IMMEDIATE
    transactions take the write lock at BEGIN, so two annotators asking for the next task
    at once are serialised instead of both reading the same free task."""
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        },
    }


DATABASES = {"default": _database_from_env()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one username
# from one address, that pair is locked out for LOGIN_LOCKOUT_MINUTES, whatever password
# comes next; a success before the limit clears the count. Keyed on the pair, so a
# stranger guessing from elsewhere cannot lock a colleague out of their own desk. Its backend
# comes first in AUTHENTICATION_BACKENDS (the single sign-on block below).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Behind a reverse proxy, the number of proxies in front of the app (the client address is
# then read from X-Forwarded-For); 0 reads REMOTE_ADDR, which a client cannot forge.
AXES_IPWARE_PROXY_COUNT = env_int("LOGIN_PROXY_COUNT", 0) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if AXES_IPWARE_PROXY_COUNT else ["REMOTE_ADDR"]
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Single sign-on: OpenID Connect (goldset.sso, through mozilla-django-oidc) -------------
#
# Off while OIDC_RP_CLIENT_ID is unset: then nothing below changes how Goldset signs people
# in. On, the login page offers "Sign in with OIDC_PROVIDER_NAME"; people are made on their
# first sign-in and placed in teams by their groups claim (OIDC_GROUP_ROLES). docs/sso.md
# says what each variable is for.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
SSO_ENABLED = bool(OIDC_RP_CLIENT_ID)
# The provider's issuer, exactly as its id tokens say it (`iss`) and as its discovery
# document (ISSUER/.well-known/openid-configuration) names it; the four endpoints below are
# copied from that document, so that a start never depends on the provider answering.
OIDC_OP_ISSUER = env_str("OIDC_OP_ISSUER")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
# Optional: the provider's end_session_endpoint. Signing out of Goldset then signs out of
# the provider too, and comes back to Goldset's login page.
OIDC_OP_LOGOUT_ENDPOINT = env_str("OIDC_OP_LOGOUT_ENDPOINT")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_USERNAME_CLAIM = env_str("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
# Seconds of clock difference with the provider that an id token's exp and iat may show.
OIDC_CLOCK_LEEWAY = env_int("OIDC_CLOCK_LEEWAY", 60)
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
# false: no password form, and no password accepted (the admin's login included), while
# single sign-on is on. With it off, passwords are the only way in and stay on.
GOLDSET_LOCAL_PASSWORDS = env_bool("GOLDSET_LOCAL_PASSWORDS", True)


def oidc_group_roles(raw: str) -> list[tuple[str, str, str]]:
    """OIDC_GROUP_ROLES read into (group, target, role) rows: `GROUP=ORG/TEAM:ROLE` gives
    a team role (annotator, adjudicator, manager), `GROUP=ORG:admin` makes an organisation
    admin; entries are comma separated and a group may be named more than once. A malformed
    entry stops the start, naming it. Whether the teams exist is asked at each sign-in
    (goldset.sso): a team made later starts working without a restart."""
    rows = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        group, equals, grant = entry.partition("=")
        target, colon, role = grant.strip().rpartition(":")
        group, target, role = group.strip(), target.strip(), role.strip()
        organisation, slash, team = target.partition("/")
        if not (equals and colon and group and organisation):
            raise ImproperlyConfigured(f"OIDC_GROUP_ROLES: {entry!r} is not GROUP=ORG/TEAM:ROLE or GROUP=ORG:admin")
        if slash and (not team or "/" in team or role not in ("annotator", "adjudicator", "manager")):
            raise ImproperlyConfigured(f"OIDC_GROUP_ROLES: {entry!r}: a team role is ORG/TEAM:annotator, :adjudicator or :manager")
        if not slash and role != "admin":
            raise ImproperlyConfigured(f"OIDC_GROUP_ROLES: {entry!r}: an organisation takes the role admin only (ORG:admin)")
        rows.append((group, target, role))
    return rows


OIDC_GROUP_ROLES = oidc_group_roles(env_str("OIDC_GROUP_ROLES"))

if SSO_ENABLED:
    _missing = [
        name
        for name in (
            "OIDC_RP_CLIENT_SECRET",
            "OIDC_OP_ISSUER",
            "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT",
            "OIDC_OP_USER_ENDPOINT",
            "OIDC_OP_JWKS_ENDPOINT",
        )
        if not globals()[name]
    ]
    if _missing:
        raise ImproperlyConfigured(f"OIDC_RP_CLIENT_ID is set, so single sign-on needs {', '.join(_missing)} too (docs/sso.md)")
    if OIDC_RP_SIGN_ALGO != "RS256":
        raise ImproperlyConfigured(f"OIDC_RP_SIGN_ALGO={OIDC_RP_SIGN_ALGO!r}: Goldset verifies RS256 id tokens only")
elif not GOLDSET_LOCAL_PASSWORDS:
    raise ImproperlyConfigured("GOLDSET_LOCAL_PASSWORDS=false needs single sign-on (OIDC_RP_CLIENT_ID): nobody could sign in")

# After axes's check: passwords go through goldset.sso.PasswordBackend (Django's, refusing every password while
# GOLDSET_LOCAL_PASSWORDS is false); single sign-on through goldset.sso.SignOnBackend.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "goldset.sso.PasswordBackend",
    *(["goldset.sso.SignOnBackend"] if SSO_ENABLED else []),
]
# A refused sign-on is not a guessed password: axes neither counts it nor locks anyone out
# for it (five refusals from an office's address would otherwise lock everyone there out).
AXES_WHITELIST_CALLABLE = "goldset.sso.axes_passes_sign_on"
# mozilla-django-oidc's own settings, fixed: the code flow with PKCE and a nonce, the views
# of goldset.sso (which 404 while single sign-on is off and name the reason of a failure).
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_CREATE_USER = True
OIDC_TIMEOUT = 10
OIDC_CALLBACK_CLASS = "goldset.sso.SignOnCallbackView"
OIDC_AUTHENTICATE_CLASS = "goldset.sso.SignOnStartView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/sign-on-failed/"
TEMPLATES[0]["OPTIONS"]["context_processors"].append("goldset.sso.sign_on")


def oidc_sign_out(endpoint: str, client_id: str, site_url: str) -> tuple[str, str]:
    """Where logging out sends people when the provider has an end-session endpoint (it
    signs them out there and sends them back to the login page), and that endpoint's origin,
    which the form-action policy must allow: browsers hold the logout form's redirect to it."""
    back = site_url.rstrip("/") + "/accounts/login/"
    url = f"{endpoint}?{urlencode({'client_id': client_id, 'post_logout_redirect_uri': back})}"
    return url, urlsplit(endpoint)._replace(path="", query="", fragment="").geturl()


if SSO_ENABLED and OIDC_OP_LOGOUT_ENDPOINT:
    LOGOUT_REDIRECT_URL, _origin = oidc_sign_out(OIDC_OP_LOGOUT_ENDPOINT, OIDC_RP_CLIENT_ID, env_str("SITE_URL", "http://localhost:8000"))
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(_origin)

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves the static files from where they are found (no collectstatic), so that
# `make run` serves them with DEBUG off; production collects them (settings_production).
WHITENOISE_USE_FINDERS = True

# Celery. Without a broker, tasks run in-process when they are sent (the embedded default).
_BROKER_URL = env_str("CELERY_BROKER_URL")
# "memory://" keeps kombu from reaching for a default AMQP server it would never use.
CELERY_BROKER_URL = _BROKER_URL or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = not _BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# Without a broker, the web server runs tasks on a background thread rather than inside
# the request that sent them (goldset.celery); false runs them in the request.
TASKS_OFF_REQUEST_THREAD = env_bool("TASKS_OFF_REQUEST_THREAD", True)
# Without a broker there is no beat either: the web process runs the beat schedule below
# from a thread of its own (goldset.celery.beat_in_process); false leaves it to nobody.
BEAT_IN_PROCESS = env_bool("BEAT_IN_PROCESS", True)
CELERY_TASK_ACKS_LATE = True  # tasks are idempotent, so a worker lost mid-task is safe to redo
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A new pool process warms ranx's kernels before it reports up (evaluation.tasks): under a
# second from NUMBA_CACHE_DIR, about 80 s when the cache is cold. Celery's default of 4 s
# would kill it mid-compile, again and again, and the worker would never take a task.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = 300
# The worker logs through LOGGING above (its format, its ids) rather than its own handler.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# Redis hands a message that was delivered but never acknowledged (its worker died) to
# another worker once it is this many seconds old. Keep it above the longest evaluation
# plus the longest retry countdown: a task still running past it is started a second time
# (harmless, tasks are idempotent, but the work is done twice).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_BROKER_VISIBILITY_TIMEOUT", 3600)}
# Workers consume this queue and send the tasks they fan out to it; deployments (or test
# sessions) that share one Redis keep apart by naming their own.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Calls to endpoints a manager started by hand ("try it", "probe now") go to a queue of
# their own, served by a worker of its own (docker-compose's worker-outbound): a slow
# endpoint then holds that worker, never the ones publishing and scoring.
CELERY_OUTBOUND_QUEUE = env_str("CELERY_OUTBOUND_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-outbound")
CELERY_TASK_ROUTES = {
    "monitoring.tasks.endpoint_try_task": {"queue": CELERY_OUTBOUND_QUEUE},
    "monitoring.tasks.probe_round_task": {"queue": CELERY_OUTBOUND_QUEUE},
    "monitoring.tasks.index_probe_task": {"queue": CELERY_OUTBOUND_QUEUE},
}
# The sweepers re-enqueue evaluations, pool, publish, judge and run upload jobs, a lost message or a dead worker
# left undone. The evaluation sweeper runs often (a pass is two queries and a ping of the
# workers) because it is what brings back an evaluation whose worker died: within one
# interval, against the hour of CELERY_BROKER_VISIBILITY_TIMEOUT.
# The job sweepers send a job whose message the broker refused (enqueued_at left empty) at
# their next pass: within a minute of a broker's return.
JOB_SWEEP_SECONDS = env_int("JOB_SWEEP_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    "sweep-missing-evaluations": {
        "task": "evaluation.tasks.sweep_missing_evaluations_task",
        "schedule": env_int("EVALUATION_SWEEP_SECONDS", 30),
    },
    "sweep-pool-jobs": {"task": "labeling.tasks.sweep_pool_jobs_task", "schedule": JOB_SWEEP_SECONDS},
    "sweep-publish-jobs": {"task": "goldenset.tasks.sweep_publish_jobs_task", "schedule": JOB_SWEEP_SECONDS},
    "sweep-judge-jobs": {"task": "labeling.tasks.sweep_judge_jobs_task", "schedule": JOB_SWEEP_SECONDS},
    "sweep-run-upload-jobs": {"task": "evaluation.tasks.sweep_run_upload_jobs_task", "schedule": JOB_SWEEP_SECONDS},
    # Incident messages whose evaluations are all in, and failed deliveries whose backoff
    # (1, 2, 4, 8, 16 minutes) has passed: the one retry path, with a broker or without.
    "send-incident-messages": {
        "task": "evaluation.tasks.send_incident_messages_task",
        "schedule": env_int("INCIDENT_SWEEP_SECONDS", 30),
    },
    "sweep-oracle-experiments": {"task": "answers.tasks.sweep_oracle_experiments_task", "schedule": JOB_SWEEP_SECONDS},
    # Monitored endpoints: every tick makes the nightly runs and canary probes that fell
    # due (their cron lines are per endpoint) and sends again what a dead worker left.
    "monitoring-tick": {"task": "monitoring.tasks.monitoring_tick_task", "schedule": env_int("MONITORING_TICK_SECONDS", 60)},
    "series-retention": {"task": "monitoring.tasks.series_retention_task", "schedule": 6 * 3600},
}
# Retrieval endpoints live inside the network, so unlike webhooks their internal addresses
# are allowed, but only within these networks (comma-separated CIDRs; loopback by default,
# where the demo's search service runs). Link-local and cloud metadata addresses never are.
RETRIEVAL_ALLOWED_NETWORKS = env_networks("RETRIEVAL_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
# Every chat model Goldset asks (lib.chat): model judges (labeling.model_labels),
# generators and answer judges (answers). A local vLLM, Ollama or llama.cpp server is the
# common case, so loopback is allowed by default, and other internal addresses only within
# these networks; link-local and cloud metadata addresses never are. (A team's own answer
# endpoint is registered like a retrieval endpoint: RETRIEVAL_ALLOWED_NETWORKS.)
JUDGE_ALLOWED_NETWORKS = env_networks("JUDGE_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
JUDGE_TIMEOUT_SECONDS = env_int("JUDGE_TIMEOUT_SECONDS", 120)
# An endpoint's header may name environment variables with this prefix only
# (`Bearer ${SEARCH_TOKEN}`): otherwise a manager could have the worker send
# ${SECRET_KEY} to a server of their own.
RETRIEVAL_HEADER_ENV_PREFIX = env_str("RETRIEVAL_HEADER_ENV_PREFIX", "SEARCH_")

# The REST API (api/). Eval jobs send `Authorization: Bearer <token>`; the session serves
# the browsable API to people logged in to the site. Every failure has one JSON shape
# (api.errors.api_exception_handler).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # First, so that a request without credentials gets 401 with a Bearer challenge.
        "api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.HasApiAccess"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.LimitOffsetPagination",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # Refuses JSON nested past a sane depth with 400 (Python's json would recurse out).
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.api_exception_handler",
    # Per client: a token's (or session's) user, or the address of an anonymous caller.
    # Over the rate, 429 with Retry-After in the API's error shape.
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle", "rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_ANON_RATE", "60/minute"),
        "user": env_str("API_USER_RATE", "1200/minute"),
    },
}
# Unknown Bearer tokens one address may present before its Bearer requests answer 429 for
# the rest of the window (api.authentication.UnknownTokenLimit).
API_TOKEN_GUESS_RATE = env_str("API_TOKEN_GUESS_RATE", "20/minute")
SPECTACULAR_SETTINGS = {
    "TITLE": "Goldset API",
    "DESCRIPTION": (
        "Golden sets, their versions and qrels, runs and their scores. Authenticate with "
        "`Authorization: Bearer <token>`; managers create tokens on a golden set's API tokens page "
        "or with `manage.py create_api_token`. Every error has the shape "
        '`{"error": {"code", "message", "problems", "field"}}`.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's files come from the drf-spectacular-sidecar package: /api/docs/ needs no network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No call to the online validator either (its badge would fetch validator.swagger.io).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "RunStage": "evaluation.models.Run.Stage",
        "ApiTokenScope": "api.models.ApiToken.Scope",
        # Two job statuses share the name "status": an evaluation's (and a night's) and a publish job's.
        # The API's serializers name their values (no labels), so the overrides do too.
        "EvaluationStatus": ["pending", "running", "done", "failed"],
        "PublishJobStatus": ["queued", "running", "done", "failed"],
        "IncidentKind": ["night", "recompute", "index"],
        "IncidentState": ["open", "acknowledged", "muted", "resolved"],
        "IncidentStateChange": ["acknowledged", "muted", "resolved", "open"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
        "api.schema.forbid_nul_in_strings",
    ],
}

# Alert webhooks go to public addresses only (lib.outbound): loopback, link-local, private
# and metadata addresses are refused at send time unless they fall in one of these
# networks (CIDR, comma separated), for a receiver inside the deployment's own network.
ALERT_WEBHOOK_ALLOWED_NETWORKS = env_networks("ALERT_WEBHOOK_ALLOWED_NETWORKS")
# Where people reach this Goldset, for the absolute links of messages read elsewhere (the
# webhook's `text` links to the alerts page): no request is at hand in a worker.
SITE_URL = env_str("SITE_URL", "http://localhost:8000").rstrip("/")

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "goldset@localhost")

# Every line says its time, level and logger; LOG_FORMAT=json writes one JSON object a line
# with the request, user, golden set, run and version ids known (goldset.logs).
LOG_FORMAT = env_str("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "goldset.logs.ContextFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "goldset.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # With tasks run in-process, a line per task would drown a command's own output.
    "loggers": {
        "celery.app.trace": {"level": "WARNING" if CELERY_TASK_ALWAYS_EAGER else "INFO"},
        # django-axes logs every login at INFO; its lockouts are WARNINGs.
        "axes": {"level": "WARNING"},
        # Django's own console handler (DEBUG only) would print each request warning a
        # second time beside the root's: its records go to the root alone.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
    },
}

# --- Operations: health, metrics, cache (goldset.health, goldset.metrics) ----------------

# /metrics answers requests from these networks (CIDR, comma separated; loopback by
# default), or carrying `Authorization: Bearer <METRICS_TOKEN>` when a token is set.
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
METRICS_TOKEN = env_str("METRICS_TOKEN")
# prometheus-client's multiprocess mode: a folder, empty at start, where every gunicorn
# worker writes its request figures so that /metrics sums them. Unset: per process.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR")

# What the web servers cache (a version found intact, the judging counts, the API's rate
# limits) must be the same for all of them: in Redis when CACHE_URL is set, else in the
# process's memory (one process, the embedded default). While Redis is away each process
# caches in its own memory (goldset.cache), so an outage never answers 500.
CACHE_URL = env_str("CACHE_URL")
CACHES = {
    "default": (
        {"BACKEND": "goldset.cache.FailoverRedisCache", "LOCATION": CACHE_URL, "KEY_PREFIX": "goldset"}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
}
# Django's own session engines: sessions in the database, read through the shared cache
# when there is one (a per-process memory cache would let one web process read a session
# another has changed or ended).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db" if CACHE_URL else "django.contrib.sessions.backends.db"
