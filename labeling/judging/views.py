"""The annotators' judging pages.

Judging is blind: these pages show a pair's query and page only, never system names,
ranks, scores or anyone else's grades. Every judging URL needs the annotator role in the
set (goldenset.selectors.access_golden_set raises 404 otherwise, so a stranger cannot
tell which sets exist). The queue itself is labeling.judging.services.
"""

import re
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from goldenset.models import GoldenSet, Membership
from goldenset.selectors import READ_ROLES, access_golden_set, golden_sets_for, user_roles
from goldenset.spans import Span
from labeling.judging.selectors import (
    SET_PROGRESS_SECONDS,
    judged_count,
    judging_progress,
    judging_task,
    leased_at,
    preview_task,
    previous_evidence,
    query_place,
    sets_to_judge,
    task_chunk_ranges,
    task_is_correction,
)
from labeling.judging.services import judgment_submit, judgment_undo, queue_settings_of, task_next, task_skip
from labeling.models import JudgingTask, Pool
from lib.errors import ForbiddenError, GoldsetError
from lib.params import ParameterError, number_param
from lib.text_offsets import offset_html

JUDGING_ROLES = (Membership.Role.ANNOTATOR,)
# Who may see the judging screen as annotators see it, without judging.
PREVIEW_ROLES = READ_ROLES
# Skipped task ids kept per set in the session, newest last; older skips may come back.
SKIPPED_KEPT = 500
# Words too common to be worth highlighting.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or the to was what when where which who why with "
    "you your my our this that these those".split()
)
_MARKUP = re.compile(r"(<[^>]*>|&#?\w+;)")
# The judge form's spans: "start-end" pairs of character offsets, comma-separated.
_SPAN = re.compile(r"^\s*(\d{1,9})\s*-\s*(\d{1,9})\s*$")
SPANS_MAX = 50


# --- what the screen shows -------------------------------------------------------------


@dataclass(frozen=True)
class GradeKey:
    key: str
    value: int
    label: str


def grade_keys(golden_set: GoldenSet) -> list[GradeKey]:
    """The key that gives each grade: the grade itself when every grade is a digit,
    otherwise 1, 2, 3 ... in the scale's order."""
    values = golden_set.grade_values()
    digits = all(0 <= value <= 9 for value in values)
    return [
        GradeKey(key=str(value) if digits else str(number), value=value, label=golden_set.grade_label(value))
        for number, value in enumerate(values, start=1)
    ]


def query_terms(text: str) -> list[str]:
    words = {word.lower() for word in re.findall(r"\w+", text)}
    return sorted((word for word in words if word not in STOPWORDS and (len(word) > 2 or word.isdigit())), key=len, reverse=True)


def highlight(html: str, terms: list[str]) -> SafeString:
    """Wrap the query's terms (and words they begin) in <mark>, in text only: never
    inside a tag or a character reference. `html` must be safe already."""
    if not terms:
        return mark_safe(html)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(term) for term in terms) + r")\w*", re.IGNORECASE)
    parts = _MARKUP.split(html)
    for index in range(0, len(parts), 2):  # even parts are text, odd ones markup
        parts[index] = pattern.sub(lambda match: f"<mark>{match.group(0)}</mark>", parts[index])
    return mark_safe("".join(parts))


def _skipped(request: HttpRequest, golden_set: GoldenSet) -> list[int]:
    return list(request.session.get("judging_skipped", {}).get(golden_set.slug, []))


def _remember_skip(request: HttpRequest, golden_set: GoldenSet, task_id: int) -> None:
    skipped = request.session.get("judging_skipped", {})
    ids = [pk for pk in skipped.get(golden_set.slug, []) if pk != task_id] + [task_id]
    skipped[golden_set.slug] = ids[-SKIPPED_KEPT:]
    request.session["judging_skipped"] = skipped


def _posted_judged(request: HttpRequest) -> int | None:
    """The count the fragment carried (its forms' hidden `judged`, `?judged=` on a GET);
    None when it carried none, or one that is not a count: the figure only feeds the
    progress bar, and refusing the request would lose the grade sent with it, so such a
    count falls back to the session's like a missing one (see _judged)."""
    try:
        return number_param(request.POST if request.method == "POST" else request.GET, "judged")
    except ParameterError:
        return None


def _judged(request: HttpRequest, golden_set: GoldenSet, *, fresh: bool = False, add: int = 0) -> int:
    """The annotator's judged pairs in the set (labeling.judging.selectors.judged_count, a
    pair handed back by an undo included).

    Counted once per visit to the screen (it reads all their judgments), then carried by
    the pair fragment: its forms post it back (`judged`) and the next fragment shows it
    plus `add`, so that a judgment does not write the session. The figure only feeds the
    annotator's own progress bar, so trusting what their page sends back is harmless. A
    request without it (a plain form, an old page) falls back to the count kept in the
    session at the visit, kept up there as before.
    """
    counts = request.session.get("judging_counts", {})
    posted = None if fresh else _posted_judged(request)
    if posted is not None:
        return posted + add
    if fresh or golden_set.slug not in counts:
        counts[golden_set.slug] = judged_count(golden_set=golden_set, annotator=request.user)
    elif add:
        counts[golden_set.slug] += add
    else:
        return counts[golden_set.slug]
    request.session["judging_counts"] = counts
    return counts[golden_set.slug]


def _next_task(request: HttpRequest, golden_set: GoldenSet, on_query: int | None = None) -> JudgingTask | None:
    """The pair the annotator holds, or the next one handed to them (task_next)."""
    return task_next(golden_set=golden_set, annotator=request.user, skipped_ids=_skipped(request, golden_set), on_query=on_query)


def _pair_context(
    request: HttpRequest,
    golden_set: GoldenSet,
    task: JudgingTask | None,
    *,
    error: str = "",
    notice: str = "",
    fresh: bool = False,
    judged_add: int = 0,
) -> dict:
    """What the pair fragment shows of `task`, the pair handed to the annotator (None:
    nothing is left for them)."""
    previous_grade = task_is_correction(task=task, annotator=request.user) if task is not None else None
    judged = _judged(request, golden_set, fresh=fresh, add=judged_add)
    ctx = {
        "golden_set": golden_set,
        "task": task,
        "error": error,
        "notice": notice,
        "grade_keys": grade_keys(golden_set),
        "previous_grade": previous_grade,
        "previous_label": golden_set.grade_label(previous_grade) if previous_grade is not None else "",
        "judged": judged,
        "progress": judging_progress(
            golden_set=golden_set,
            annotator=request.user,
            judged=judged,
            pending_correction=previous_grade is not None,
            cache_seconds=SET_PROGRESS_SECONDS,
        ),
    }
    if task is None:
        ctx["has_queue"] = (
            Pool.objects.filter(golden_set=golden_set).exists()
            or JudgingTask.objects.filter(golden_set=golden_set, sample__isnull=False).exists()
        )
    else:
        ctx.update(_page_context(task))
        if previous_grade is not None and task.kind != JudgingTask.Kind.GOLD:
            ctx["previous_spans"], ctx["previous_hop"] = previous_evidence(task=task, annotator=request.user)
    return ctx


def _page_context(task: JudgingTask) -> dict:
    """The page as the screen shows it: its title and text with the query's terms marked,
    the text in runs that carry their offsets (lib.text_offsets, for evidence spans) with
    the chunks that brought the pair into the pool highlighted."""
    terms = query_terms(task.query.text)
    chunks = task_chunk_ranges(task)
    return {
        "title_html": highlight(str(escape(task.page.title)), terms),
        "text_html": highlight(offset_html(task.page.text, chunks), terms),
        "chunk_count": len(chunks),
        "place": query_place(task),
    }


def _on_query(task: JudgingTask) -> int | None:
    """The query an annotator is on after judging or skipping `task`: its own, except for a
    hidden gold check, which breaks into their query (task_next then resumes the query of
    their latest judgment, the one they were on: a gold answer is not a judgment)."""
    return None if task.kind == JudgingTask.Kind.GOLD else task.query_id


def _pair_response(
    request: HttpRequest,
    golden_set: GoldenSet,
    *,
    error: str = "",
    notice: str = "",
    on_query: int | None = None,
) -> HttpResponse:
    task = _next_task(request, golden_set, on_query)
    return render(request, "labeling/judging/_pair.html", _pair_context(request, golden_set, task, error=error, notice=notice))


def _after_post(
    request: HttpRequest,
    golden_set: GoldenSet,
    *,
    error: str = "",
    notice: str = "",
    on_query: int | None = None,
) -> HttpResponse:
    """The next pair's fragment for htmx; a redirect to the screen (with the message) otherwise
    (the screen counts what they judged afresh). `on_query`: task_next's."""
    if request.htmx:
        return _pair_response(request, golden_set, error=error, notice=notice, on_query=on_query)
    if error:
        messages.error(request, error)
    elif notice:
        messages.info(request, notice)
    return redirect("judging_screen", slug=golden_set.slug)


def _refused(request: HttpRequest, golden_set: GoldenSet, exc: GoldsetError) -> HttpResponse:
    """A judgment or skip refused by the queue. A task that is not theirs (ForbiddenError):
    the screen answers 403 with the message, while htmx gets the fragment of the pair they
    do hold with the message above it (a 403 would not be swapped in). Anything else, as
    _after_post."""
    if isinstance(exc, ForbiddenError) and not request.htmx:
        ctx = _pair_context(request, golden_set, _next_task(request, golden_set), error=exc.message, fresh=True)
        return render(request, "labeling/judging/screen.html", ctx, status=403)
    return _after_post(request, golden_set, error=exc.message)


# --- judging -----------------------------------------------------------------------------


@login_required
@require_GET
def judging_home(request: HttpRequest) -> HttpResponse:
    """The annotators' home: each set they judge with what waits there and their own counts;
    below, for managers and adjudicators, the sets whose judging screen they may preview."""
    rows = sets_to_judge(annotator=request.user, golden_sets=golden_sets_for(request.user, roles=JUDGING_ROLES))
    judged = {row.golden_set.pk for row in rows}
    previews = [golden_set for golden_set in golden_sets_for(request.user) if golden_set.pk not in judged]
    return render(request, "labeling/judging/home.html", {"rows": rows, "previews": previews})


@login_required
@require_GET
def judging_screen(request: HttpRequest, slug: str) -> HttpResponse:
    """The judging screen; a manager or adjudicator who does not judge the set gets a preview:
    the pair at the head of the queue as annotators see it, with grading turned off."""
    golden_set = access_golden_set(request.user, slug, JUDGING_ROLES + PREVIEW_ROLES)
    if not user_roles(request.user, golden_set) & set(JUDGING_ROLES):
        return render(request, "labeling/judging/screen.html", _preview_context(golden_set))
    ctx = _pair_context(request, golden_set, _next_task(request, golden_set), fresh=True)
    return render(request, "labeling/judging/screen.html", ctx)


def _preview_context(golden_set: GoldenSet) -> dict:
    task = preview_task(golden_set)
    progress = judging_progress(golden_set=golden_set, annotator=AnonymousUser(), judged=0, cache_seconds=SET_PROGRESS_SECONDS)
    ctx = {"golden_set": golden_set, "task": task, "preview": True, "grade_keys": grade_keys(golden_set), "progress": progress}
    if task is None:
        ctx["has_queue"] = Pool.objects.filter(golden_set=golden_set).exists()
    else:
        ctx.update(_page_context(task))
    return ctx


@login_required
@require_GET
def judging_next(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, JUDGING_ROLES)
    return _pair_response(request, golden_set)


def _seconds(raw: str, task: JudgingTask, golden_set: GoldenSet) -> float | None:
    """Seconds the annotator spent: what the page measured, or else the time since the
    pair was handed to them (less precise: it counts a reload's wait too)."""
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = None
    if seconds is not None and 0 <= seconds < 86_400:
        return round(seconds, 1)
    if task.leased_to_id is not None:
        start = leased_at(task, queue_settings_of(golden_set))
        return round(max((timezone.now() - start).total_seconds(), 0.0), 1)
    return None


def posted_spans(raw: str) -> list[Span]:
    """The judge form's `spans` ("start-end,start-end", offsets into the page's text; ""
    for none), each graded as the page (goldenset.spans.spans_checked checks the rest).
    GoldsetError naming the piece that is not a span."""
    pieces = [piece for piece in (raw or "").split(",") if piece.strip()]
    if len(pieces) > SPANS_MAX:
        raise GoldsetError(f"{len(pieces)} spans is more than the {SPANS_MAX} a judgment may mark", field="spans")
    spans = []
    for piece in pieces:
        match = _SPAN.match(piece)
        if match is None:
            raise GoldsetError(f"span {piece.strip()[:40]!r} is not start-end (two character offsets)", field="spans")
        spans.append(Span(int(match.group(1)), int(match.group(2))))
    return spans


@login_required
@require_POST
def judging_judge(request: HttpRequest, slug: str, task_id: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, JUDGING_ROLES)
    task = judging_task(golden_set, task_id, request.user)
    raw = request.POST.get("grade", "").strip()
    try:
        grade = int(raw)
    except ValueError:
        return _after_post(request, golden_set, error=f"grade {raw!r} is not a number; press one of the grade keys")
    correction = task_is_correction(task=task, annotator=request.user) is not None
    try:
        spans = posted_spans(request.POST.get("spans", ""))
        next_task = judgment_submit(
            task=task,
            annotator=request.user,
            grade=grade,
            note=request.POST.get("note", ""),
            seconds=_seconds(request.POST.get("seconds", ""), task, golden_set),
            skipped_ids=_skipped(request, golden_set),
            spans=spans,
            hop=request.POST.get("hop", ""),
        )
    except GoldsetError as exc:
        return _refused(request, golden_set, exc)
    if not request.htmx:
        return redirect("judging_screen", slug=golden_set.slug)  # the screen shows the pair handed out
    ctx = _pair_context(request, golden_set, next_task, judged_add=0 if correction else 1)
    return render(request, "labeling/judging/_pair.html", ctx)


@login_required
@require_POST
def judging_skip(request: HttpRequest, slug: str, task_id: int) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, JUDGING_ROLES)
    task = judging_task(golden_set, task_id, request.user)
    try:
        task_skip(task=task, annotator=request.user)
    except GoldsetError as exc:
        return _refused(request, golden_set, exc)
    _remember_skip(request, golden_set, task.pk)
    # A pair handed back by an undo is theirs, judged: skipping it keeps their grade.
    kept = task.status == JudgingTask.Status.DONE
    notice = "Skipped: your earlier grade of the pair stands." if kept else "Skipped: the pair goes to someone else."
    return _after_post(request, golden_set, notice=notice, on_query=_on_query(task))


@login_required
@require_POST
def judging_undo(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, JUDGING_ROLES)
    try:
        judgment_undo(annotator=request.user, golden_set=golden_set)
    except GoldsetError as exc:
        return _after_post(request, golden_set, error=exc.message)
    # The pair handed back says what was undone and what grading or skipping it does (one
    # banner, templates/labeling/judging/_pair.html): no second notice here.
    return _after_post(request, golden_set)
