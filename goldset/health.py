"""Liveness and readiness, for a load balancer, docker compose and Kubernetes probes.

`/healthz` says the process answers: it touches no database and no broker, so a database
restart does not get every web container killed as "dead". `/readyz` says the process can
serve: the database answers, the broker answers (or tasks run in-process, the embedded
default), and every migration the code knows is applied. Both are JSON naming each check,
answer 503 when one fails, need no login, and are cheap: a `SELECT 1`, a broker connection
with a two-second timeout, and a migration plan read once per process until it is empty
(a process whose code has no new migration does not gain one).
"""

import logging

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger("goldset.health")

BROKER_TIMEOUT_SECONDS = 2
# Set once the plan was found empty: migrations are not unapplied behind a running process.
_migrations_applied = False


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """{"status": "ok"|"failing", "checks": {"database", "broker", "migrations"}}, each
    check "ok", "in-process" (the broker of the embedded default) or the failure's text."""
    checks = {"database": database_check(), "broker": broker_check()}
    checks["migrations"] = migrations_check() if checks["database"] == "ok" else "not checked: the database is not answering"
    ready = all(value in ("ok", "in-process") for value in checks.values())
    if not ready:
        logger.warning("not ready: %s", checks)
    return JsonResponse({"status": "ok" if ready else "failing", "checks": checks}, status=200 if ready else 503)


def database_check() -> str:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        # A connection kept across requests (CONN_MAX_AGE) that the outage broke is
        # dropped, so that the next check opens a new one rather than failing on the old.
        connection.close()
        return f"failing: {type(exc).__name__}: {str(exc).strip() or 'no answer'}"
    return "ok"


def broker_check() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "in-process"
    from goldset.celery import app

    try:
        with app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS) as connection:
            connection.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_SECONDS)
            # Redis answers a connection before it answers a command (while it loads its
            # data set, say): a PING asks it to do something.
            client = getattr(connection.default_channel, "client", None)
            if client is not None:
                client.ping()
    except Exception as exc:  # kombu and the transports raise their own types; all mean "not reachable"
        return f"failing: {type(exc).__name__}: {str(exc).strip() or 'no answer'}"
    return "ok"


def migrations_check() -> str:
    global _migrations_applied
    if _migrations_applied:
        return "ok"
    try:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        return f"failing: {type(exc).__name__}: {exc}"
    if plan:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in plan[:5])
        more = f" and {len(plan) - 5} more" if len(plan) > 5 else ""
        return f"failing: {len(plan)} migration(s) not applied: {names}{more} (run manage.py migrate)"
    _migrations_applied = True
    return "ok"
