"""One JSON shape for every failure of the API.

    {"error": {"code": "invalid", "message": "...", "problems": ["run.txt:12: ..."], "field": "file"}}

`code` is machine-readable (invalid, conflict, version_damaged, parse_error, not_authenticated, authentication_failed,
permission_denied, not_found, method_not_allowed, not_acceptable, unsupported_media_type,
throttled); `message` is a sentence for a person; `problems` lists every fault found, each
naming its line, item or field; `field` names the request field at fault, or is null.
400 is a request that does not fit the schema (DRF's validation, before any service runs).
GoldsetError, the application's one error type, is content refused although it fits (422:
a bad line of a file, an unknown id), or a clash with what is stored (409, conflict: a
name taken, nothing new to publish; version_damaged: a version no longer matching its hash).
"""

from collections.abc import Iterator

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from lib.errors import GoldsetError


def error_body(code: str, message: str, *, problems: list[str] | None = None, field: str | None = None) -> dict:
    return {"error": {"code": code, "message": message, "problems": problems or [], "field": field}}


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's exception handler for every API view (settings.REST_FRAMEWORK).

    Returns None, so that DRF re-raises, only for exceptions that are not bad input:
    those are bugs, and a 500 with a traceback in the log is the honest answer.
    """
    if isinstance(exc, GoldsetError):
        set_rollback()
        return Response(error_body(exc.code, exc.message, problems=exc.problems, field=exc.field), status=exc.http_status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if not isinstance(exc, exceptions.APIException):
        return None

    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    if isinstance(exc, exceptions.ValidationError):
        faults = list(_flatten(exc.detail))
        problems = [f"{name}: {message}" if name else message for name, message in faults]
        field = (faults[0][0] or None) if faults else None
        message = problems[0] if len(problems) == 1 else f"the request has {len(problems)} problems"
        body = error_body("invalid", message, problems=problems, field=field)
    else:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        body = error_body(code, str(exc.detail))
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)


def _flatten(detail, path: str = "") -> Iterator[tuple[str, str]]:
    """(field, message) for each message of a DRF validation error, nested fields named
    like labels[3].grade, so that a client sees which item of a list is at fault."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                name = path
            elif isinstance(key, int):  # ListField reports its items' errors by index
                name = f"{path}[{key}]"
            else:
                name = f"{path}.{key}" if path else str(key)
            yield from _flatten(value, name)
    elif isinstance(detail, list):
        nested = any(isinstance(item, (dict, list)) for item in detail)
        for index, item in enumerate(detail):
            if not nested:
                yield path, str(item)
            elif item:  # an item of a list field without fault is an empty dict
                yield from _flatten(item, f"{path}[{index}]")
    else:
        yield path, str(detail)
