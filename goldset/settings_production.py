"""Deployment settings: the defaults of goldset.settings, plus what production needs.

Refuses to start without a real SECRET_KEY and a DATABASE_URL; passes
`manage.py check --deploy` (a test runs it).
"""

import os

from django.core.exceptions import ImproperlyConfigured

from goldset.env import env_bool, env_int, env_str
from goldset.settings import *  # noqa: F403
from goldset.settings import INSECURE_DEV_SECRET_KEY, SECRET_KEY

if not SECRET_KEY or SECRET_KEY == INSECURE_DEV_SECRET_KEY or len(SECRET_KEY) < 50:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 50 characters in production "
        "(python -c 'import secrets; print(secrets.token_urlsafe(64))')"
    )
if not env_str("DATABASE_URL"):
    raise ImproperlyConfigured("DATABASE_URL must be set in production (PostgreSQL)")

DEBUG = False
WHITENOISE_USE_FINDERS = False  # served from STATIC_ROOT, collected when the image is built
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Probes and Prometheus reach the container itself over plain HTTP, not through the proxy.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
# /metrics needs METRICS_TOKEN unless networks are named: behind a reverse proxy on the
# same host every request comes from loopback, so the embedded default's loopback would
# make the metrics public.
if "METRICS_ALLOWED_NETWORKS" not in os.environ:
    METRICS_ALLOWED_NETWORKS = []
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
