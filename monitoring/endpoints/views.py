"""Pages of a set's live endpoints: the list, add, edit and "try it". Managers (and staff)
only: an endpoint's URL and headers say where production lives, so everyone else gets the
404 a stranger gets. Each view: fetch with the access check, act through a service, render
or redirect.

Headers are shown as they were typed (`Bearer ${SEARCH_TOKEN}`): the environment variable
is resolved by the worker at send time, never here.
"""

import json
import time

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from goldenset.models import Membership
from goldenset.selectors import access_golden_set
from lib.errors import GoldsetError
from monitoring.endpoints.forms import EndpointAddForm, EndpointEditForm, EndpointTryForm, service_error_show
from monitoring.endpoints.selectors import endpoint_get, endpoints_of
from monitoring.endpoints.services import endpoint_add, endpoint_delete, endpoint_spec, endpoint_update
from monitoring.endpoints.spec import headers_shown
from monitoring.endpoints.trying import TRY_GIVE_UP_SECONDS, try_start, try_state
from monitoring.index_probes.selectors import index_panels, relevance_at_depth
from monitoring.nightly.services import endpoint_depth, latest_version
from monitoring.overview.selectors import series_latest_nights
from monitoring.tasks import endpoint_try_task

ENDPOINT_ROLES = (Membership.Role.MANAGER,)
# The raw answer shown on "try it" once indented: enough to see its shape, not megabytes
# (the client keeps as much of it, monitoring.endpoints.client.RAW_SHOWN_CHARS).
RAW_SHOWN_CHARS = 40_000
DEFAULT_TRY_K = 10


@login_required
@require_GET
def endpoints_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ENDPOINT_ROLES)
    rows = [(endpoint, headers_shown(endpoint_spec(endpoint))) for endpoint in endpoints_of(golden_set)]
    return render(request, "monitoring/endpoints/list.html", {"golden_set": golden_set, "rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_add_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ENDPOINT_ROLES)
    form = EndpointAddForm(request.POST or None, initial={"preset": request.GET.get("preset", "goldset"), "enabled": True})
    if request.method == "POST" and form.is_valid():
        values = form.options()
        identity = {key: values.pop(key) for key in ("name", "system", "stage", "preset", "url", "series")}
        try:
            endpoint = endpoint_add(golden_set=golden_set, user=request.user, **identity, **values)
        except GoldsetError as exc:
            service_error_show(form, exc)
        else:
            messages.success(
                request,
                f"Endpoint {endpoint.name} added; its nights join the series '{endpoint.series.name}'. "
                "Try it with one query before its first night.",
            )
            return redirect("endpoint_try", slug=golden_set.slug, name=endpoint.name)
    status = 400 if request.method == "POST" else 200
    return render(request, "monitoring/endpoints/form.html", {"golden_set": golden_set, "form": form, "endpoint": None}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_edit_page(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ENDPOINT_ROLES)
    endpoint = endpoint_get(golden_set, name)
    form = EndpointEditForm(request.POST or None, endpoint=endpoint)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint_update(endpoint=endpoint, user=request.user, **form.options())
        except GoldsetError as exc:
            service_error_show(form, exc)
            endpoint.refresh_from_db()  # the service set nothing, but the page shows what is stored
        else:
            messages.success(request, f"Endpoint {endpoint.name} saved.")
            return redirect("endpoints", slug=golden_set.slug)
    status = 400 if request.method == "POST" else 200
    ctx = {"golden_set": golden_set, "form": form, "endpoint": endpoint, "index_panels": _index_panels(endpoint)}
    return render(request, "monitoring/endpoints/form.html", ctx, status=status)


def _index_panels(endpoint) -> list:
    """The endpoint's index probe panel, with the relevance recall of its latest night."""
    night = series_latest_nights([endpoint.series])[endpoint.series_id]
    relevance = {endpoint.pk: relevance_at_depth(endpoint, night)}
    return index_panels([endpoint], now=timezone.now(), relevance=relevance)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_delete_page(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Ask first (GET: what goes and what stays), then delete (POST)."""
    golden_set = access_golden_set(request.user, slug, roles=ENDPOINT_ROLES)
    endpoint = endpoint_get(golden_set, name)
    problem = ""
    if request.method == "POST":
        try:
            done = endpoint_delete(endpoint=endpoint, user=request.user)
        except GoldsetError as exc:
            problem = exc.message
        else:
            messages.success(request, done)
            return redirect("endpoints", slug=golden_set.slug)
    ctx = {"golden_set": golden_set, "endpoint": endpoint, "nights": endpoint.nightly_runs.count(), "problem": problem}
    return render(request, "monitoring/endpoints/delete.html", ctx, status=409 if problem else 200)


def _pretty(raw: str) -> str:
    """The answer as indented JSON when it is JSON, else as it came; cut to RAW_SHOWN_CHARS."""
    try:
        raw = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        pass
    return (raw or "")[:RAW_SHOWN_CHARS]


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_try_page(request: HttpRequest, slug: str, name: str, token: str = "") -> HttpResponse:
    """Send one query to the endpoint and show the request as sent (headers as typed), the
    raw answer beside the ranking Goldset read from it, and the problems found. A POST
    starts the try on a worker (monitoring.endpoints.trying: it calls the outside world,
    never in the request) and comes back to the try's own page (`token`), which polls until
    the answer is there."""
    golden_set = access_golden_set(request.user, slug, roles=ENDPOINT_ROLES)
    endpoint = endpoint_get(golden_set, name)
    version = latest_version(golden_set.pk)
    default_k = endpoint_depth(endpoint, version) if version else DEFAULT_TRY_K
    form = EndpointTryForm(request.POST or None, initial={"query_id": "probe"})
    ctx = {"golden_set": golden_set, "endpoint": endpoint, "form": form, "version": version, "default_k": default_k}
    if request.method == "POST" and not token and form.is_valid():
        values = form.cleaned_data
        state = try_start(
            endpoint=endpoint,
            user_id=request.user.pk,
            query_id=values["query_id"] or "probe",
            query=values["query"],
            k=values["k"] or default_k,
            now=time.time(),
        )
        endpoint_try_task.delay(state.token)
        return redirect("endpoint_try_result", slug=golden_set.slug, name=endpoint.name, token=state.token)
    if token:
        state = try_state(token, user_id=request.user.pk, endpoint=endpoint)
        if state is None:
            raise Http404("no such try: it was another's, or is no longer kept; send the query again")
        form = EndpointTryForm(initial={"query_id": state.query_id, "query": state.query, "k": state.k})
        ctx.update({"form": form, "try": state, "k": state.k, "timeout_cut": state.timeout_cut})
        answer = state.answer
        if answer is None:
            ctx["waiting"] = time.time() - state.sent_at < TRY_GIVE_UP_SECONDS
            if request.htmx and ctx["waiting"]:
                return HttpResponse(status=204)  # nothing new: the page keeps polling
        else:
            ranking = [(rank, doc_id, score, doc_id in state.known) for rank, (doc_id, score) in enumerate(answer.ranking, start=1)]
            ctx.update(
                {
                    "answer": answer,
                    "raw": _pretty(answer.raw_text),
                    "raw_cut": len(answer.raw_text or "") > RAW_SHOWN_CHARS,
                    "ranking": ranking,
                    "unknown": sum(not known for *_, known in ranking),
                }
            )
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"  # the answer (or the giving up) is in: show the page whole
            return response
    return render(request, "monitoring/endpoints/try.html", ctx)
