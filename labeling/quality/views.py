"""Pages of agreement, adjudication and annotator quality. Each view: fetch with an access
check, read through labeling.quality.selectors or act through labeling.quality.services,
render.

Agreement and adjudication are for adjudicators and managers, the quality page and its
gold-check settings for managers (staff may see all). Annotators judge blind and are
measured here, so every page is a 404 to them, as it is to a stranger.
"""

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from goldenset.models import GoldenSet, Membership
from goldenset.selectors import access_golden_set, user_roles
from labeling.judging.selectors import query_order_of
from labeling.judging.services import query_order_set, queue_overlap_set
from labeling.models import QueueSettings
from labeling.quality import selectors, services
from labeling.quality.forms import AdjudicateForm, GoldChecksForm, GoldShareForm, OverlapForm, QueryOrderForm
from lib.errors import GoldsetError
from lib.sanitize import page_html

AGREEMENT_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)
ADJUDICATE_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)
QUALITY_ROLES = (Membership.Role.MANAGER,)


def _tabs(request: HttpRequest, golden_set: GoldenSet, tab: str) -> dict:
    """What the pages' tabs need: the current tab, and whether the quality tab is the user's."""
    manages = request.user.is_staff or Membership.Role.MANAGER in user_roles(request.user, golden_set)
    return {"golden_set": golden_set, "tab": tab, "show_quality_tab": manages}


def _pair_or_404(golden_set: GoldenSet, query_pk: int, page_pk: int) -> selectors.PairReview:
    review = selectors.pair_review(golden_set, query_pk=query_pk, page_pk=page_pk)
    if review is None:
        raise Http404("no such judged pair in this golden set")
    return review


@login_required
@require_GET
def agreement_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=AGREEMENT_ROLES)
    ctx = {**_tabs(request, golden_set, "agreement"), "report": selectors.agreement_report(golden_set)}
    return render(request, "labeling/quality/agreement.html", ctx)


@login_required
@require_GET
def adjudicate_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=ADJUDICATE_ROLES)
    ctx = {**_tabs(request, golden_set, "adjudicate"), "disagreements": selectors.disagreements(golden_set)}
    return render(request, "labeling/quality/adjudicate.html", ctx)


def _next_pair(golden_set: GoldenSet, query_pk: int, page_pk: int) -> selectors.Disagreement | None:
    """The disagreement after (query_pk, page_pk) in the list, else the first other one."""
    items = selectors.disagreements(golden_set, limit=None).items
    keys = [(d.query_pk, d.page_pk) for d in items]
    if (query_pk, page_pk) in keys:
        at = keys.index((query_pk, page_pk))
        rest = items[at + 1 :] + items[:at]
    else:
        rest = items
    return rest[0] if rest else None


@login_required
@require_http_methods(["GET", "POST"])
def adjudicate_pair(request: HttpRequest, slug: str, query_pk: int, page_pk: int) -> HttpResponse:
    """One pair: the query, the page, every grade and note; a POST records the decision and
    goes on to the next disagreement."""
    golden_set = access_golden_set(request.user, slug, roles=ADJUDICATE_ROLES)
    review = _pair_or_404(golden_set, query_pk, page_pk)
    # No grade is chosen for the adjudicator: a pre-selected one let Enter alone decide it.
    form = AdjudicateForm(request.POST or None, golden_set=golden_set)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.pair_adjudicate(
                    query=review.query,
                    page=review.page,
                    adjudicator=request.user,
                    grade=form.cleaned_data["grade"],
                    note=form.cleaned_data["note"],
                )
            except GoldsetError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"({review.query.query_id}, {review.page.doc_id}) decided: grade {form.cleaned_data['grade']}.")
                following = _next_pair(golden_set, query_pk, page_pk)
                if following is None:
                    return redirect("adjudicate", slug=golden_set.slug)
                return redirect("adjudicate_pair", slug=golden_set.slug, query_pk=following.query_pk, page_pk=following.page_pk)
        status = 400
    ctx = {
        **_tabs(request, golden_set, "adjudicate"),
        "review": review,
        "form": form,
        "page_html": mark_safe(page_html(review.page.text)),  # noqa: S308 - sanitised by nh3 in lib.sanitize
        "following": _next_pair(golden_set, query_pk, page_pk),
    }
    return render(request, "labeling/quality/adjudicate_pair.html", ctx, status=status)


def _quality_page(
    request: HttpRequest,
    golden_set: GoldenSet,
    *,
    gold_form=None,
    share_form=None,
    order_form=None,
    overlap_form=None,
    status: int = 200,
) -> HttpResponse:
    summary = selectors.gold_check_summary(golden_set)
    if order_form is None:
        order_form = QueryOrderForm(initial={"query_order": query_order_of(golden_set)})
    if overlap_form is None:
        queue = QueueSettings.objects.filter(golden_set=golden_set).first() or QueueSettings()
        overlap_form = OverlapForm(initial={"overlap_share": queue.overlap_share, "overlap_annotators": queue.overlap_annotators})
    ctx = {
        **_tabs(request, golden_set, "quality"),
        "people": selectors.annotator_quality(golden_set),
        "gold": summary,
        "gold_form": gold_form or GoldChecksForm(),
        "share_form": share_form or GoldShareForm(initial={"gold_share": summary.gold_share}),
        "order_form": order_form,
        "overlap_form": overlap_form,
        "session_gap_minutes": selectors.SESSION_GAP_SECONDS // 60,
    }
    return render(request, "labeling/quality/quality.html", ctx, status=status)


@login_required
@require_GET
def quality_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=QUALITY_ROLES)
    return _quality_page(request, golden_set)


def _quality_post(
    request: HttpRequest,
    golden_set: GoldenSet,
    form: forms.Form,
    act: Callable[[dict], str],
    *,
    shown_as: str,
) -> HttpResponse:
    """A form of the quality page posted. `act` runs the service on the form's cleaned data
    and says what it did, which the manager reads back on the page. A refusal is shown on
    the form (`shown_as`, its name in the page), beside its field where the form has it,
    and the page comes back with it (400)."""
    if form.is_valid():
        try:
            done = act(form.cleaned_data)
        except GoldsetError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            for problem in exc.problems[:20]:
                form.add_error(None, problem)
        else:
            messages.success(request, done)
            return redirect("quality", slug=golden_set.slug)
    return _quality_page(request, golden_set, status=400, **{shown_as: form})


@login_required
@require_POST
def gold_checks_add(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=QUALITY_ROLES)

    def add(data: dict) -> str:
        added = services.gold_checks_add(golden_set=golden_set, count=data["count"], pairs=data["pairs"])
        return f"{added} gold check(s) added."

    return _quality_post(request, golden_set, GoldChecksForm(request.POST), add, shown_as="gold_form")


@login_required
@require_POST
def gold_share_update(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=QUALITY_ROLES)

    def share(data: dict) -> str:
        # gold_share_set refuses with field "gold_share" only: the refusal lands beside it.
        services.gold_share_set(golden_set=golden_set, gold_share=data["gold_share"])
        return f"Gold check share set to {data['gold_share']:g}."

    return _quality_post(request, golden_set, GoldShareForm(request.POST), share, shown_as="share_form")


@login_required
@require_POST
def overlap_update(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=QUALITY_ROLES)

    def overlap(data: dict) -> str:
        queue_overlap_set(golden_set=golden_set, overlap_share=data["overlap_share"], overlap_annotators=data["overlap_annotators"])
        return f"{data['overlap_share']:.0%} of the pairs first judged from now on go to {data['overlap_annotators']} annotators."

    return _quality_post(request, golden_set, OverlapForm(request.POST), overlap, shown_as="overlap_form")


@login_required
@require_POST
def query_order_update(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=QUALITY_ROLES)

    def order(data: dict) -> str:
        settings = query_order_set(golden_set=golden_set, query_order=data["query_order"])
        return f"Annotators now judge {settings.get_query_order_display()}, from their next pair."

    return _quality_post(request, golden_set, QueryOrderForm(request.POST), order, shown_as="order_form")
