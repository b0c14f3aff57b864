"""Prometheus metrics at /metrics (prometheus-client).

Two kinds of figure, measured two ways, because Goldset runs as several processes (gunicorn
workers, Celery workers in other containers, beat) and a scrape reaches one of them:

- **Business figures are read from the database at scrape time** (`DatabaseCollector`):
  judgments recorded in the last minute, queue depth (evaluations pending, pool jobs and
  nightly runs queued), recompute and nightly durations over a recent window, and the
  outcomes of those tasks (done or failed) over the same window. The database is the one
  place every process writes to, so any web worker answers the same figures, whichever
  process did the work: a counter incremented in a Celery worker would live in that
  worker, which serves no HTTP, and prometheus-client's multiprocess files cannot be
  shared across containers (their names are process ids, which collide between them).
  The reads use indexed columns, and windows are bounded, so a scrape stays cheap.
- **Request latency is observed in the process** (`RequestMetricsMiddleware`), labelled by
  the resolver's view name, the method and the status, never the raw path (whose ids would
  make a series per golden set and version). Under gunicorn each worker keeps its own
  histogram; set PROMETHEUS_MULTIPROC_DIR to an empty folder, fresh at each start, and
  every worker writes there and /metrics sums them (prometheus-client's documented
  multiprocess mode). Celery task outcomes by task name are counted from Celery's signals
  in the same way: they cover the tasks this process ran (in-process tasks, the embedded
  default); a worker's are in the database figures above.

Who may read it: a request from METRICS_ALLOWED_NETWORKS (loopback on the embedded
default; none in production, where a proxy on the same host makes every request loopback's),
or one carrying `Authorization: Bearer <METRICS_TOKEN>` when a token is set. Anything else is 403. Behind a reverse proxy the
address seen is the proxy's: use the token there.
"""

import hmac
import ipaddress
import time
from datetime import timedelta

from celery.signals import task_failure, task_retry, task_success
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

# Seconds; a page renders in tens of ms, a large import or export takes tens of seconds.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
# Seconds; a recompute takes from under a second to minutes, a night up to hours.
RECOMPUTE_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
NIGHTLY_BUCKETS = (10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400)
RECOMPUTE_WINDOW = timedelta(hours=1)
NIGHTLY_WINDOW = timedelta(hours=24)
# The most finished rows a duration histogram reads per scrape (the newest ones).
DURATION_ROWS = 10_000
KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

REQUEST_LATENCY = Histogram(
    "goldset_request_duration_seconds",
    "Seconds from the request reaching Django to its response being returned (a streamed body's transfer not included)",
    ["view", "method", "status"],
    buckets=REQUEST_BUCKETS,
)
CELERY_TASKS = Counter(
    "goldset_celery_tasks", "Celery tasks this process ran, by task name and outcome (success, failure, retry)", ["task", "outcome"]
)


class RequestMetricsMiddleware:
    """Observes every request's duration in REQUEST_LATENCY, by route name."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        # view_name is the route's name (or the view's dotted path for an unnamed route); a
        # path that resolves to nothing (404) is one series, whatever was asked for.
        view = match.view_name if match is not None else "<unresolved>"
        method = request.method if request.method in KNOWN_METHODS else "OTHER"
        REQUEST_LATENCY.labels(view, method, str(response.status_code)).observe(time.perf_counter() - started)
        return response


def _count_task(outcome: str):
    def receiver(sender=None, **kwargs) -> None:
        name = getattr(sender, "name", None) or str(sender)
        CELERY_TASKS.labels(name, outcome).inc()

    return receiver


_on_success, _on_failure, _on_retry = _count_task("success"), _count_task("failure"), _count_task("retry")
task_success.connect(_on_success, weak=False)
task_failure.connect(_on_failure, weak=False)
task_retry.connect(_on_retry, weak=False)


def _seconds(pairs) -> list[float]:
    return [(finished - started).total_seconds() for started, finished in pairs if started and finished and finished >= started]


def _histogram(name: str, documentation: str, values: list[float], buckets: tuple) -> HistogramMetricFamily:
    counts = [sum(1 for value in values if value <= bound) for bound in buckets]
    cumulative = [(str(float(bound)), count) for bound, count in zip(buckets, counts)] + [("+Inf", len(values))]
    return HistogramMetricFamily(name, documentation, buckets=cumulative, sum_value=sum(values))


class DatabaseCollector:
    """The business figures, read from the database at each scrape (see the module docstring)."""

    def describe(self):
        return []  # read at scrape time only: registering it must not query the database

    def collect(self):
        up = GaugeMetricFamily("goldset_database_up", "1 when the figures below could be read from the database, 0 otherwise")
        try:
            families = list(self._figures())
        except DatabaseError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _figures(self):
        from evaluation.models import Evaluation
        from goldenset.models import Judgment
        from labeling.models import PoolJob
        from monitoring.models import NightlyRun

        now = timezone.now()
        judgments = GaugeMetricFamily(
            "goldset_judgments_last_minute",
            "Judgments recorded in the last 60 seconds, by source (human, imported, adjudicated)",
            labels=["source"],
        )
        recorded = dict(
            Judgment.objects.filter(created_at__gte=now - timedelta(minutes=1)).values_list("source").annotate(n=Count("id")).order_by()
        )
        for source in Judgment.Source.values:
            judgments.add_metric([source], recorded.get(source, 0))
        yield judgments

        depth = GaugeMetricFamily(
            "goldset_queue_depth",
            "Work waiting for a worker: evaluations pending, pool jobs and nightly runs queued or pending",
            labels=["queue"],
        )
        depth.add_metric(["evaluations"], Evaluation.objects.filter(status=Evaluation.Status.PENDING).count())
        depth.add_metric(["pool_jobs"], PoolJob.objects.filter(status=PoolJob.Status.QUEUED).count())
        depth.add_metric(["nightly_runs"], NightlyRun.objects.filter(status=NightlyRun.Status.PENDING).count())
        yield depth

        recent_evaluations = Evaluation.objects.filter(finished_at__gte=now - RECOMPUTE_WINDOW)
        yield _histogram(
            "goldset_recompute_duration_seconds",
            f"Seconds from start to finish of the evaluations (scorings) finished in the last {RECOMPUTE_WINDOW}",
            _seconds(recent_evaluations.order_by("-finished_at").values_list("started_at", "finished_at")[:DURATION_ROWS]),
            RECOMPUTE_BUCKETS,
        )
        recent_nights = NightlyRun.objects.filter(finished_at__gte=now - NIGHTLY_WINDOW)
        yield _histogram(
            "goldset_nightly_run_duration_seconds",
            f"Seconds from start to finish of the nightly runs finished in the last {NIGHTLY_WINDOW}",
            _seconds(recent_nights.order_by("-finished_at").values_list("started_at", "finished_at")[:DURATION_ROWS]),
            NIGHTLY_BUCKETS,
        )

        outcomes = GaugeMetricFamily(
            "goldset_task_outcomes",
            f"Background work finished, by kind and outcome: evaluations in the last {RECOMPUTE_WINDOW}, "
            f"nightly runs in the last {NIGHTLY_WINDOW}, pool jobs in the last {RECOMPUTE_WINDOW}",
            labels=["task", "outcome"],
        )
        finished = (
            ("evaluation", recent_evaluations),
            ("nightly_run", recent_nights),
            ("pool_job", PoolJob.objects.filter(finished_at__gte=now - RECOMPUTE_WINDOW)),
        )
        for task, rows in finished:
            by_status = dict(rows.values_list("status").annotate(n=Count("id")).order_by())
            for outcome in ("done", "failed"):
                outcomes.add_metric([task, outcome], by_status.get(outcome, 0))
        yield outcomes


def metrics_allowed(request: HttpRequest) -> bool:
    """From METRICS_ALLOWED_NETWORKS, or with the bearer METRICS_TOKEN (when one is set)."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode()):
            return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False) for network in settings.METRICS_ALLOWED_NETWORKS)


_database_registry = CollectorRegistry(auto_describe=False)
_database_registry.register(DatabaseCollector())


def metrics(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return HttpResponse(
            "metrics are readable from METRICS_ALLOWED_NETWORKS or with Authorization: Bearer <METRICS_TOKEN>\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    if settings.PROMETHEUS_MULTIPROC_DIR:
        process_registry = CollectorRegistry()
        MultiProcessCollector(process_registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    else:
        process_registry = REGISTRY
    body = generate_latest(process_registry) + generate_latest(_database_registry)
    response = HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
