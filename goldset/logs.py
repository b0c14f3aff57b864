"""What every log line says about where it came from.

Each line carries its time, level and logger. With LOG_FORMAT=json each is one JSON object
(time, level, logger, message, and exception when there is one) with the ids known at the
time: `request_id` (the client's X-Request-ID when it sent a sane one, else a fresh one,
echoed in the answer's X-Request-ID), `user` (the user's id, once the request's user was
looked up: logging never makes a query), `golden_set` (the slug in the URL), `version`
(the version number in the URL), `run` (a run id in the URL or a task's `run_id`),
`version_id`, `night`, `job`, `alert` and `task` from a Celery task's arguments.

The ids live in a context variable, set by `LogContextMiddleware` for a request (until its
response is closed) and by
Celery's task_prerun signal for a task (and put back at task_postrun, so a task run
in-process inside a request leaves the request's ids as they were); `ContextFilter`, on
the console handler, copies them onto every record, whichever logger wrote it.
"""

import contextvars
import inspect
import json
import logging
import re
import uuid
from datetime import UTC, datetime

from celery.signals import task_postrun, task_prerun
from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject, empty

from lib.request_address import request_ip

CONTEXT_FIELDS = ("request_id", "user", "golden_set", "version", "run", "version_id", "night", "job", "alert", "task")
# URL keyword -> log field, for the routes' own names (goldset/urls.py and the apps' urls).
URL_FIELDS = {"slug": "golden_set", "number": "version", "run_id": "run", "night_id": "night"}
# Task argument -> log field (tasks take ids, never model objects).
TASK_FIELDS = {"run_id": "run", "version_id": "version_id", "night_id": "night", "job_id": "job", "alert_id": "alert"}
# A client's request id is kept only when it cannot forge a line or bloat one.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# The default is never mutated: every change sets a new dict (see the .set calls below).
_context: contextvars.ContextVar[dict] = contextvars.ContextVar("goldset_log_context", default={})  # noqa: B039
_task_tokens: dict[str, contextvars.Token] = {}


def log_context() -> dict:
    """The ids known now (a copy), with the request's user when it was already looked up."""
    context = dict(_context.get())
    request = context.pop("request", None)
    if request is not None and "user" not in context:
        user = request.__dict__.get("user")
        if isinstance(user, SimpleLazyObject):
            user = None if user._wrapped is empty else user._wrapped  # not looked up yet: no query for a log line
        if user is not None and getattr(user, "is_authenticated", False):
            context["user"] = user.pk
    return context


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in log_context().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line; the context fields present on the record are added."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class LogContextMiddleware:
    """Sets the request's ids for the log lines written while it is served."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        sent = request.headers.get("X-Request-ID", "")
        request_id = sent if SANE_REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex
        # Left set until the response is closed (request_finished, below): Django logs a
        # 4xx or 5xx answer after the middleware returned, and a streamed export's lines
        # are written while it streams.
        _context.set({"request_id": request_id, "request": request})
        # REMOTE_ADDR, which a client cannot forge (the proxy's address behind one).
        request_ip.set(request.META.get("REMOTE_ADDR") or None)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response

    def process_view(self, request, view_func, view_args, view_kwargs) -> None:
        found = {URL_FIELDS[name]: value for name, value in view_kwargs.items() if name in URL_FIELDS}
        if found:
            _context.set({**_context.get(), **found})


def _task_started(task_id=None, task=None, args=None, kwargs=None, **extra) -> None:
    fields = {"task": getattr(task, "name", None)}
    for name, value in (kwargs or {}).items():
        if name in TASK_FIELDS:
            fields[TASK_FIELDS[name]] = value
    # Tasks are sent with positional ids too (`evaluate_run_task.delay(run.pk, version.pk)`).
    if args and task is not None:
        try:
            parameters = list(inspect.signature(task.run).parameters)  # a bound task's `self` is not among them
        except (TypeError, ValueError):
            parameters = []
        for name, value in zip(parameters, args):
            if name in TASK_FIELDS:
                fields[TASK_FIELDS[name]] = value
    _task_tokens[task_id] = _context.set({**_context.get(), **fields})


def _task_finished(task_id=None, **extra) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        try:
            _context.reset(token)
        except ValueError:  # set in another context (a thread that ended): nothing to put back here
            pass


def _request_finished(**extra) -> None:
    _context.set({})
    request_ip.set(None)


request_finished.connect(_request_finished, weak=False)
task_prerun.connect(_task_started, weak=False)
task_postrun.connect(_task_finished, weak=False)
