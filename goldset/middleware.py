"""Request-wide guards that belong to no app."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class RequestSizeLimitMiddleware:
    """Refuse a request whose declared body is over MAX_REQUEST_MB with 413, unread.

    Django streams uploaded files to disk, but the imports behind them read every line
    into memory: a 500 MB run file grew a worker to 2.9 GB until gunicorn killed it. The
    check reads only Content-Length, so a refused body is never taken in. A body sent
    without a length (chunked) is not read by Django at all.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.MAX_REQUEST_MB * 1024 * 1024
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            message = (
                f"the request body is {length / 1024 / 1024:.0f} MB, over this server's limit of {settings.MAX_REQUEST_MB} MB "
                f"(MAX_REQUEST_MB); split the file, or upload a run of fewer queries at a time"
            )
            if request.path.startswith("/api/"):
                body = {"error": {"code": "request_too_large", "message": message, "problems": [], "field": None}}
                response = JsonResponse(body, status=413)
            else:
                response = HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
            response["Connection"] = "close"  # the rest of the body is not wanted
            return response
        return self.get_response(request)
