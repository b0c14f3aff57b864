"""Pages of a set's query logs. Each view: fetch with an access check, act, render.

Managers, adjudicators and staff read (goldenset.selectors.READ_ROLES), as they read runs;
only managers and staff upload a log. Annotators judge blind (a log's head queries say
which queries matter most), so every page here is a 404 to them, as it is to a stranger.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from goldenset.models import Membership
from goldenset.selectors import access_golden_set, user_roles
from lib.errors import GoldsetError
from traffic.forms import QueryLogUploadForm
from traffic.logs import query_log_import
from traffic.sampling_selectors import draws_of_log
from traffic.selectors import query_log_field_shares, query_log_get, query_log_head, query_logs_of

UPLOAD_ROLES = (Membership.Role.MANAGER,)


@login_required
@require_http_methods(["GET", "POST"])
def query_logs(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's query logs; a manager's POST imports one (all or nothing) and goes to its page.

    The upload is read in the request, up to QUERY_LOG_UPLOAD_MB of text once decompressed
    (a few seconds' reading); a larger log is refused with 413 and pointed to the command,
    which streams any size. Logs are imported a few times a quarter, by someone who has the
    file on a machine with the app: a spooled background job, as large runs have, was not
    worth its model and worker here yet."""
    if request.method == "POST":
        golden_set = access_golden_set(request.user, slug, roles=UPLOAD_ROLES)
    else:
        golden_set = access_golden_set(request.user, slug)
    can_upload = request.user.is_staff or bool(user_roles(request.user, golden_set) & set(UPLOAD_ROLES))
    form = QueryLogUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            upload = data["file"]
            try:
                summary = query_log_import(
                    golden_set=golden_set,
                    data=upload,
                    name=data["name"],
                    source_name=upload.name or "log",
                    fmt=data["format"] or "auto",
                    replace=data["replace"],
                    user=request.user,
                    max_text_bytes=settings.QUERY_LOG_UPLOAD_MB << 20,
                )
            except GoldsetError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
                problems = exc.problems
                status = exc.http_status if exc.http_status in (409, 413) else 400
            else:
                messages.success(request, summary.lines()[0])
                return redirect("query_log", slug=golden_set.slug, log_id=summary.log.pk)
        else:
            status = 400
    ctx = {
        "golden_set": golden_set,
        "logs": query_logs_of(golden_set),
        "form": form,
        "problems": problems,
        "can_upload": can_upload,
        "upload_mb": settings.QUERY_LOG_UPLOAD_MB,
    }
    return render(request, "traffic/logs/list.html", ctx, status=status)


@login_required
@require_GET
def query_log_detail(request: HttpRequest, slug: str, log_id: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    log = query_log_get(golden_set, log_id)
    ctx = {
        "golden_set": golden_set,
        "log": log,
        "head": query_log_head(log),
        "field_shares": query_log_field_shares(log),
        # The draws made from this log (traffic.sampling's); listed here so the log's page says what it fed.
        "draws": draws_of_log(log),
    }
    return render(request, "traffic/logs/log.html", ctx)
