"""Pages of golden sets, their versions, their queries' reference answers and their
members. Each view: fetch with access check, act, render. The members page and an
answer's edit need the manager role."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from goldenset.answers import query_reference_answer, reference_answer_clear, reference_answer_set, version_answer_rows
from goldenset.audit import audit_filters, audit_records
from goldenset.chunkings import chunkings_of
from goldenset.diffs import KIND_LABELS, KINDS, publish_preview_summary, version_changes
from goldenset.evidence_export import version_answers_chunks, version_export_chunks
from goldenset.forms import PublishForm, ReferenceAnswerForm
from goldenset.model_fill import model_fill_get, model_fill_rows, model_fills_of, version_model_fill_create
from goldenset.model_labels import model_sources
from goldenset.models import Membership, PublishJob, Query, TeamMembership
from goldenset.publishing import publish_job_progress, publish_unchanged, version_publish_request
from goldenset.selectors import (
    VersionIntegrityError,
    access_golden_set,
    golden_sets_for,
    publish_jobs_recent,
    user_roles,
    version_get,
)
from goldenset.services import membership_grant, membership_revoke
from goldenset.stale_spans import stale_span_labels
from goldenset.tags import TAG_RULE, tag_history, tag_may_move, tag_move, tags_of
from goldenset.tasks import publish_job_task
from goldenset.teams import member_invite
from lib.errors import ConflictError, ForbiddenError, GoldsetError
from lib.formats import QREL_CONTENT_TYPES, QREL_EXTENSIONS, QREL_FORMATS, qrels_chunks
from lib.params import ParameterError, number_param, version_param

MEMBER_ROLES = (Membership.Role.MANAGER,)
# The audit trail names people and what they changed: the set's managers read it (and staff).
AUDIT_ROLES = (Membership.Role.MANAGER,)
PUBLISH_ROLES = (Membership.Role.MANAGER,)
ANSWER_EDIT_ROLES = (Membership.Role.MANAGER,)
CHANGES_ON_VERSION_PAGE = 50  # the rest on the changes page
CHANGES_PER_PAGE = 100
TAG_MOVES_SHOWN = 50  # the newest moves of every tag on the set's page (the API has each tag's whole history)
PUBLISH_POLL_SECONDS = 1


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    golden_sets = list(golden_sets_for(request.user))
    judges = golden_sets_for(request.user, roles=(Membership.Role.ANNOTATOR,)).exists()
    if not golden_sets and judges:
        return redirect("judging_home")  # an annotator's home is their queue
    return render(request, "goldenset/home.html", {"golden_sets": golden_sets, "judges": judges})


def golden_set_context(request: HttpRequest, slug: str) -> dict:
    """The set's page context, access checked (Http404). The page itself is served by
    goldset.today.golden_set_home, which adds what needs you today from the apps above."""
    golden_set = access_golden_set(request.user, slug)
    versions = list(golden_set.versions.select_related("author").order_by("-number"))
    tags = tags_of(golden_set)
    for version in versions:
        version.tag_names = [tag.name for tag in tags if tag.version_id == version.pk]
    return {
        "golden_set": golden_set,
        "versions": versions,
        "can_publish": _can_publish(request.user, golden_set),
        "chunkings": chunkings_of(golden_set.corpus),
        "tags": tags,
        "tag_moves": tag_history(golden_set)[:TAG_MOVES_SHOWN],
        "can_move_tags": tag_may_move(request.user, golden_set),
        "tag_rule": TAG_RULE,
    }


@login_required
@require_POST
def version_tag_move(request: HttpRequest, slug: str) -> HttpResponse:
    """A manager points a tag at a version (tag_move checks the role and the name)."""
    golden_set = access_golden_set(request.user, slug)
    try:
        number = number_param(request.POST, "version", default=0)
        version = golden_set.versions.filter(number=number).first()
        if version is None:
            raise GoldsetError(f"version: golden set {golden_set.slug!r} has no version {number}", field="version")
        tag = tag_move(
            golden_set=golden_set,
            name=request.POST.get("name", "").strip(),
            version=version,
            user=request.user,
            note=request.POST.get("note", ""),
        )
        messages.success(request, f"Tag {tag.name} now names version {version.number} ({version.short_hash}).")
    except ForbiddenError as exc:
        raise PermissionDenied(exc.message) from None  # a reader of the set who is not its manager: 403
    except GoldsetError as exc:
        messages.error(request, exc.message)
    except ParameterError as exc:
        messages.error(request, f"version: {exc}")
    return redirect(reverse("golden_set", args=[golden_set.slug]) + "#tags")


def _can_publish(user, golden_set) -> bool:
    return user.is_staff or bool(user_roles(user, golden_set) & set(PUBLISH_ROLES))


@login_required
@require_GET
def version_detail(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    previous = golden_set.versions.filter(number__lt=number).order_by("-number").first()
    changes = version_changes(previous, version) if previous else None
    ctx = {
        "golden_set": golden_set,
        "version": version,
        "previous": previous,
        "changes": changes,
        "formats": QREL_FORMATS,
        "shown": changes.changes[:CHANGES_ON_VERSION_PAGE] if changes else [],
        "can_publish": _can_publish(request.user, golden_set),
        "is_latest": not golden_set.versions.filter(number__gt=version.number).exists(),
        "model_fills": list(model_fills_of(version)),
    }
    if ctx["can_publish"]:
        ctx["model_sources"] = model_sources(golden_set)
    return render(request, "goldenset/version.html", ctx)


@login_required
@require_POST
def version_model_fill_start(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """A manager adds the variant "with model labels" of a version (the model and prompt
    chosen as "PROMPT_HASH MODEL", as the form's choices give them)."""
    golden_set = access_golden_set(request.user, slug, roles=PUBLISH_ROLES)
    version = version_get(golden_set, number)
    chosen = request.POST.get("source", "")
    try:
        fill = version_model_fill_create(version=version, model=chosen[65:], prompt_hash=chosen[:64], user=request.user)
    except GoldsetError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"variant {fill.short_hash} with model labels of {fill.model} made: {fill.model_label_count} model labels"
        )
    return redirect(reverse("version", args=[golden_set.slug, version.number]) + "#model-fills")


@login_required
@require_GET
def version_model_fill_export(request: HttpRequest, slug: str, number: int, fill_id: int, fmt: str) -> HttpResponse:
    """The qrels of a variant with model labels: its own URL, never the version's export."""
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    if fmt not in QREL_FORMATS:
        return HttpResponse(f"unknown format {fmt!r}; choose one of {', '.join(QREL_FORMATS)}", status=400, content_type="text/plain")
    try:
        fill = model_fill_get(version, fill_id)
        rows = model_fill_rows(fill)
    except VersionIntegrityError as exc:
        return HttpResponse(exc.message, status=exc.http_status, content_type="text/plain; charset=utf-8")
    except GoldsetError:
        raise Http404(f"version {version.number} has no variant {fill_id}") from None
    response = StreamingHttpResponse(qrels_chunks(rows, fmt), content_type=QREL_CONTENT_TYPES[fmt] + "; charset=utf-8")
    name = f"{golden_set.slug}-v{version.number}-with-model-labels-{fill.short_hash}.{QREL_EXTENSIONS[fmt]}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["ETag"] = f'"{fill.content_hash}"'
    return response


@login_required
@require_GET
def version_changes_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Any two versions compared: each change with its query text and page title, counts by
    kind and by slice, filtered by either (?from=&to=&kind=&slice=), a page at a time."""
    golden_set = access_golden_set(request.user, slug)
    numbers = list(golden_set.versions.order_by("number").values_list("number", flat=True))
    if len(numbers) < 2:
        return render(request, "goldenset/changes.html", {"golden_set": golden_set, "numbers": numbers})
    new = version_get(golden_set, version_param(request.GET, "to", default=numbers[-1]))
    earlier = [number for number in numbers if number < new.number]
    old = version_get(golden_set, version_param(request.GET, "from", default=earlier[-1] if earlier else numbers[0]))
    kind = request.GET.get("kind", "")
    if kind and kind not in KINDS:
        raise ParameterError("kind", f"kind must be one of {', '.join(KINDS)}, got {kind[:40]!r}")
    changes = version_changes(old, new)
    slices = changes.slice_counts()
    slice_name = request.GET.get("slice", "")
    if slice_name and slice_name not in dict(slices):
        raise ParameterError("slice", f"no change between v{old.number} and v{new.number} falls in slice {slice_name[:80]!r}")
    page = Paginator(changes.filtered(kind=kind, slice_name=slice_name), CHANGES_PER_PAGE).get_page(request.GET.get("page"))
    ctx = {
        "golden_set": golden_set,
        "numbers": numbers,
        "old": old,
        "new": new,
        "changes": changes,
        "slices": slices,
        "kind": kind,
        "slice_name": slice_name,
        "page": page,
        "kinds": KIND_LABELS.items(),
    }
    return render(request, "goldenset/changes.html", ctx)


@login_required
@require_GET
def version_export(request: HttpRequest, slug: str, number: int, fmt: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    if fmt not in QREL_FORMATS:
        return HttpResponse(f"unknown format {fmt!r}; choose one of {', '.join(QREL_FORMATS)}", status=400, content_type="text/plain")
    try:
        chunks = version_export_chunks(version, fmt)
    except VersionIntegrityError as exc:
        return HttpResponse(exc.message, status=exc.http_status, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(chunks, content_type=QREL_CONTENT_TYPES[fmt] + "; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{golden_set.slug}-v{version.number}.{QREL_EXTENSIONS[fmt]}"'
    response["ETag"] = f'"{version.content_hash}"'
    return response


@login_required
@require_GET
def version_answers_export(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The version's reference answers as the JSON lines import_answers reads."""
    golden_set = access_golden_set(request.user, slug)
    version = version_get(golden_set, number)
    try:
        chunks = version_answers_chunks(version)
    except VersionIntegrityError as exc:
        return HttpResponse(exc.message, status=exc.http_status, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(chunks, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{golden_set.slug}-v{version.number}-answers.jsonl"'
    response["ETag"] = f'"{version.content_hash}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def query_page(request: HttpRequest, slug: str, query_id: str) -> HttpResponse:
    """A query: its text and slice values, its reference answer now and as the latest
    version froze it; managers edit the answer (or clear it) in a form here."""
    golden_set = access_golden_set(request.user, slug)
    query = get_object_or_404(Query, golden_set=golden_set, query_id=query_id)
    may_edit = request.user.is_staff or bool(user_roles(request.user, golden_set) & set(ANSWER_EDIT_ROLES))
    current = query_reference_answer(query)
    initial = (
        {"answer": current.answer, "aliases": "\n".join(current.aliases), "key_facts": "\n".join(current.key_facts)} if current else None
    )
    form = ReferenceAnswerForm(initial=initial)
    status = 200
    if request.method == "POST":
        if not may_edit:
            raise Http404("no such golden set")  # as access_golden_set answers a role short of it
        if request.POST.get("action") == "clear":
            if reference_answer_clear(query=query):
                messages.success(request, f"The reference answer of {query.query_id} was removed; published versions keep theirs.")
            return redirect("query", slug=golden_set.slug, query_id=query.query_id)
        form = ReferenceAnswerForm(request.POST)
        if form.is_valid():
            try:
                reference_answer_set(query=query, user=request.user, **form.cleaned_data)
            except GoldsetError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"The reference answer of {query.query_id} was saved; the next published version holds it.")
                return redirect("query", slug=golden_set.slug, query_id=query.query_id)
        status = 400
    latest = golden_set.versions.order_by("-number").first()
    frozen = dict(version_answer_rows(latest)).get(query.query_id) if latest is not None else None
    ctx = {
        "golden_set": golden_set,
        "query": query,
        "answer": current,
        "latest": latest,
        "frozen": frozen,
        "form": form if may_edit else None,
    }
    return render(request, "goldenset/query.html", ctx, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def publish_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Publish with a preview: what the new version would change against the latest (queries
    added, pairs added, removed and regraded, counts per slice), then a note and a confirm."""
    golden_set = access_golden_set(request.user, slug, roles=PUBLISH_ROLES)
    form = PublishForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            job = version_publish_request(
                golden_set=golden_set,
                user=request.user,
                note=form.cleaned_data["note"],
                job_task=publish_job_task,
            )
        except GoldsetError as exc:
            form.add_error(None, exc.message)
            status = 409 if isinstance(exc, ConflictError) else 400
        else:
            return redirect("publish_job", slug=golden_set.slug, job_id=job.pk)
    elif request.method == "POST":
        status = 400
    # Counts and the first changes only: the full list of a large set is a Change object a label.
    preview = publish_preview_summary(golden_set, first=CHANGES_ON_VERSION_PAGE)
    ctx = {
        "golden_set": golden_set,
        "form": form,
        "changes": preview,
        "slices": preview.slice_counts(),
        "shown": preview.first,
        "latest": golden_set.versions.order_by("-number").first(),
        "recent_jobs": publish_jobs_recent(golden_set),
        # The publish itself would be refused as "nothing changed": no button then.
        "unchanged": publish_unchanged(golden_set) is not None,
        # Labels whose evidence is gone from the page's new text: never carried silently (goldenset.stale_spans).
        "stale_left_out": len(stale_span_labels(golden_set)),
    }
    return render(request, "goldenset/publish.html", ctx, status=status)


@login_required
@require_GET
def publish_job_page(request: HttpRequest, slug: str, job_id: int, fragment: bool = False) -> HttpResponse:
    """A publish job's progress. The publish forms land here; its status fragment (at a URL
    of its own, so that the browser's back button never shows the fragment alone as the page)
    polls itself (htmx) while the job is queued or running, and ends with a link to the new
    version, or with why there is none."""
    golden_set = access_golden_set(request.user, slug, roles=PUBLISH_ROLES)
    job = get_object_or_404(PublishJob.objects.select_related("version", "created_by"), pk=job_id, golden_set=golden_set)
    ctx = {"golden_set": golden_set, "job": job, "progress": publish_job_progress(job), "poll_seconds": PUBLISH_POLL_SECONDS}
    if fragment:
        return render(request, "goldenset/publish/_job.html", ctx)
    return render(request, "goldenset/publish/job.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def golden_set_members(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=MEMBER_ROLES)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "revoke":  # from the confirmation page (golden_set_member_revoke)
                membership = get_object_or_404(Membership, pk=number_param(request.POST, "membership", default=0), golden_set=golden_set)
                membership_revoke(user=membership.user, golden_set=golden_set, role=membership.role, by=request.user)
                messages.success(request, f"{membership.user.username} is no longer {membership.role} of {golden_set.slug}.")
            elif request.POST.get("action") == "invite":
                user, password = member_invite(
                    username=request.POST.get("username", ""),
                    email=request.POST.get("email", "").strip(),
                    golden_set=golden_set,
                    role=request.POST.get("role", ""),
                    by=request.user,
                )
                # Shown once, on this answer: never stored in the clear nor put in a message.
                ctx = {**_members_context(golden_set), "invited": user, "invited_password": password}
                return render(request, "goldenset/members.html", ctx)
            else:
                username = request.POST.get("username", "").strip()
                user = get_user_model().objects.filter(username=username).first()
                if user is None:
                    raise GoldsetError(f"no user {username!r}", field="username")
                role = request.POST.get("role", "")
                membership_grant(user=user, golden_set=golden_set, role=role, by=request.user)
                messages.success(request, f"{user.username} is now {role} of {golden_set.slug}.")
        except GoldsetError as exc:
            messages.error(request, exc.message)
        return redirect("golden_set_members", slug=golden_set.slug)
    return render(request, "goldenset/members.html", _members_context(golden_set))


def _members_context(golden_set) -> dict:
    memberships = Membership.objects.filter(golden_set=golden_set).select_related("user").order_by("user__username", "role")
    # Roles the set inherits from its team (changed on the team's page, goldenset.team_views).
    team_memberships = TeamMembership.objects.filter(team_id=golden_set.team_id).select_related("user").order_by("user__username", "role")
    return {
        "golden_set": golden_set,
        "memberships": memberships,
        "team": golden_set.team,
        "team_memberships": team_memberships,
        "roles": Membership.Role.choices,
    }


@login_required
@require_GET
def golden_set_member_revoke(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    """Ask before a role is taken away: the POST that takes it goes to the members page."""
    golden_set = access_golden_set(request.user, slug, roles=MEMBER_ROLES)
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=membership_id, golden_set=golden_set)
    return render(request, "goldenset/member_revoke.html", {"golden_set": golden_set, "membership": membership})


AUDIT_PER_PAGE = 50


@require_GET
@login_required
def audit_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's audit trail, newest first, filtered by action, user and days; managers and staff."""
    golden_set = access_golden_set(request.user, slug, roles=AUDIT_ROLES)
    try:
        filters = audit_filters(request.GET)
    except GoldsetError as exc:
        raise ParameterError(exc.field, exc.message) from None
    page = Paginator(audit_records(golden_set, **filters), AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    query = urlencode({name: request.GET.get(name, "") for name in ("action", "user", "since", "until")})
    ctx = {"golden_set": golden_set, "page": page, "filters": request.GET, "filter_query": query}
    return render(request, "goldenset/audit.html", ctx)
