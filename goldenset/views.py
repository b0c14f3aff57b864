"""Pages of golden sets and their versions. Each view: fetch with access check, act, render."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from goldenset.selectors import (
    VersionIntegrityError, access_golden_set, golden_sets_for, version_diff, version_get, version_label_rows,
)
from lib.formats import QREL_CONTENT_TYPES, QREL_EXTENSIONS, QREL_FORMATS, qrels_chunks


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "goldenset/home.html", {"golden_sets": golden_sets_for(request.user)})


@login_required
@require_GET
def golden_set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    versions = golden_set.versions.select_related("author").order_by("-number")
    return render(request, "goldenset/golden_set.html", {"golden_set": golden_set, "versions": versions})


@login_required
@require_GET
def version_detail(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    previous = golden_set.versions.filter(number__lt=number).order_by("-number").first()
    diff = version_diff(previous, version) if previous else None
    ctx = {"golden_set": golden_set, "version": version, "previous": previous, "diff": diff, "formats": QREL_FORMATS}
    return render(request, "goldenset/version.html", ctx)


@login_required
@require_GET
def version_export(request: HttpRequest, slug: str, number: int, fmt: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    if fmt not in QREL_FORMATS:
        return HttpResponse(f"unknown format {fmt!r}; choose one of {', '.join(QREL_FORMATS)}", status=400, content_type="text/plain")
    try:
        rows = version_label_rows(version)
    except VersionIntegrityError as exc:
        return HttpResponse(exc.message, status=exc.http_status, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(qrels_chunks(rows, fmt), content_type=QREL_CONTENT_TYPES[fmt] + "; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{golden_set.slug}-v{version.number}.{QREL_EXTENSIONS[fmt]}"'
    response["ETag"] = f'"{version.content_hash}"'
    return response
