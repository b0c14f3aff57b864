"""The answers of last resort: a database that is away is 503 with Retry-After, not a 500.

Django calls `server_error` for every exception nothing else handled, inside the except
block, so the exception is at hand. A lost or refused database connection is an outage
that passes (a restart, a failover): the page says so and when to try again, the API
answers in its error shape, and htmx requests get a header the page's script reads.
The answer is rendered without the request's context processors, which would reach for
the database again.
"""

import logging
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from lib.params import ParameterError

# Seconds a client should wait before trying again while the database is away.
RETRY_AFTER_SECONDS = 30
OUTAGE_MESSAGE = "The database is not answering for the moment; nothing you sent was lost. Try again in a few seconds."
ERROR_MESSAGE = "Something went wrong on our side; the error is logged. Try again, or tell an admin if it keeps happening."

logger = logging.getLogger("goldset.errors")


def _is_outage(exc: BaseException | None) -> bool:
    return isinstance(exc, (OperationalError, InterfaceError))


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: 503 with Retry-After for a database outage, 500 otherwise."""
    exc = sys.exc_info()[1]
    outage = _is_outage(exc)
    status, message = (503, OUTAGE_MESSAGE) if outage else (500, ERROR_MESSAGE)
    if outage:
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exc)
    if request.path.startswith("/api/"):
        code = "service_unavailable" if outage else "server_error"
        response = JsonResponse({"error": {"code": code, "message": message, "problems": [], "field": None}}, status=status)
    else:
        html = render_to_string("errors/server_error.html", {"status": status, "message": message, "outage": outage})
        response = HttpResponse(html, status=status)
    if outage:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: a request parameter at fault (lib.params.ParameterError) is named in the
    answer; any other 400 (a suspicious operation, whose text may say too much) gets a
    generic one."""
    if isinstance(exception, ParameterError):
        message = exception.message
    else:
        message = "The request was not understood: check its address and parameters."
    if request.path.startswith("/api/"):
        field = getattr(exception, "parameter", None)
        return JsonResponse({"error": {"code": "invalid", "message": message, "problems": [], "field": field}}, status=400)
    return HttpResponse(render_to_string("errors/bad_request.html", {"message": message}), status=400)
