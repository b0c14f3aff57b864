"""The annotators' queue: which pair an annotator judges next, and what a judgment does.

Serving (`task_next`). An annotator first gets back the task they already hold (an
unexpired lease), so a reload shows the same pair. Otherwise, in one transaction, they
are handed, in this order:

1. a hidden gold check, at the set's QueueSettings.gold_share rate, if one is left that
   they have not answered;
2. an overlap task: a done task whose first judgment made it need `judgments_required`
   judgments, still short of them, whose pair they have not judged (index
   judging_task_overlap_open);
3. the open, queued task with the lowest position across the set's pools and its
   completeness samples (index judging_task_pool_queue, one look-up per pool).

With the set's QueueSettings.query_order at "one query at a time" (the default), an
overlap or queued task of the query the annotator is on comes before 2 and 3: the
caller says which query that is (the pair they just judged or skipped), or else it is the
query of their latest judgment in the set, so a fresh visit resumes where they left off.
One look-up through the unique index's (golden set, query) prefix; when it finds nothing
the annotator has exhausted the query's window (everything left in it is held by others,
judged by them or skipped by them) and 2 and 3 pick their next query, the least advanced
one (positions go slot by slot, see labeling.pools.strategies.slot_positions), which is,
while any is left untouched, a query nobody is judging. So annotators at work together
spread over queries, and two share one only when overlap or the queue leaves nothing
else. The order within a query stays the strategy's (the lowest position first), and
across queries the strategies' turns still decide which query comes next.

Tasks of retired queries are not handed out.

Each is skipped while leased to someone else; a lease lasts QueueSettings.lease_seconds
and a task whose lease expired is handed out again. Every search is an ORM queryset, and
the task it finds is leased by one statement (labeling.leases.lease_first: UPDATE ...
RETURNING, the search FOR UPDATE SKIP LOCKED on PostgreSQL), so two annotators asking at
the same moment take different rows; on SQLite the settings make every transaction
IMMEDIATE, so the two requests run one after the other. Either way a non-overlap task is
with one annotator at a time, and nobody is handed a pair they have judged.

Judging (`task_submit`) and skipping (`task_skip`) take only a task handed to the
annotator, leased to them by task_next or judgment_undo: a task's id in a URL does not
make it theirs (ForbiddenError, 403). Judging appends a goldenset Judgment (a GoldAnswer
for a gold check); the first judgment of a pool task closes it through
labeling.pools.services.pool_task_judged in the same transaction (the pool's order moves
on), and decides from the task id whether the task is an overlap task. The judging
screen calls `judgment_submit`: the judgment and the hand-out of the next pair in one
transaction.

Undo (`judgment_undo`). Judgments are append-only, so undo cannot remove one. It hands
the annotator's last judged pair back to them (a lease on the done task) and it is
shown again; the grade they give then is appended and supersedes the earlier one (the
latest judgment of a pair wins resolution), and on a pool or sample task it also
replaces the task's grade, so an adaptive order learns the corrected grade from then on
(positions already formed are not replayed). Skipping the pair instead keeps the
earlier grade. Undo goes back one judgment: a second undo while the pair is pending is
refused. Progress counts the pair as not judged while it is pending.

Skips are the annotator's own: a skipped task is released for others, and the caller
passes the ids the annotator skipped (`skipped_ids`, the judging views keep them in the
session) so it is not handed straight back to them.
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from goldenset.models import GoldenSet, Judgment
from goldenset.selectors import pair_label
from goldenset.services import judgment_record
from goldenset.spans import Span
from labeling.judging.selectors import judged_by, with_query_place
from labeling.leases import lease_first, pool_query_lock
from labeling.models import CompletenessSample, GoldAnswer, JudgingTask, Pool, QueueSettings
from labeling.pools.services import pool_task_judged
from lib.errors import ForbiddenError, GoldsetError

# Drawn once per hand-out to decide whether a gold check is due; tests replace it.
gold_draw = random.random

# Knuth's multiplicative hash: consecutive task ids map to well-spread fractions, so the
# share of overlap tasks matches overlap_share closely even over a few dozen tasks, and
# the decision for a task is the same on every machine and every run.
_HASH_MULTIPLIER = 0x9E3779B97F4A7C15
_HASH_SPACE = 1 << 64


def queue_settings_of(golden_set: GoldenSet) -> QueueSettings:
    """The set's queue settings, made with the defaults on first use."""
    queue_settings, _ = QueueSettings.objects.get_or_create(golden_set=golden_set)
    return queue_settings


def query_order_set(*, golden_set: GoldenSet, query_order: str) -> QueueSettings:
    """Set how the set's annotators go through queries (QueueSettings.QueryOrder's values).
    Takes effect at each annotator's next pair; nothing queued moves."""
    if query_order not in QueueSettings.QueryOrder.values:
        known = ", ".join(repr(value) for value in QueueSettings.QueryOrder.values)
        raise GoldsetError(f"unknown query order {query_order!r}; choose one of {known}", field="query_order")
    settings, _ = QueueSettings.objects.get_or_create(golden_set=golden_set)
    settings.query_order = query_order
    settings.save(update_fields=["query_order"])
    return settings


def queue_overlap_set(*, golden_set: GoldenSet, overlap_share: float, overlap_annotators: int) -> QueueSettings:
    """Set the share (0 to 1) of tasks judged by `overlap_annotators` people (2 or 3) instead
    of one, so that agreement can be measured. Takes effect for tasks first judged from now
    on; a task already judged keeps the number it was given. GoldsetError naming the field."""
    if isinstance(overlap_share, bool) or not isinstance(overlap_share, int | float) or not 0 <= overlap_share <= 1:
        raise GoldsetError(f"the overlap share must be a fraction from 0 to 1, got {overlap_share!r}", field="overlap_share")
    if overlap_annotators not in (2, 3):
        raise GoldsetError(f"an overlap pair goes to 2 or 3 annotators, not {overlap_annotators!r}", field="overlap_annotators")
    settings, _ = QueueSettings.objects.get_or_create(golden_set=golden_set)
    settings.overlap_share, settings.overlap_annotators = float(overlap_share), overlap_annotators
    settings.save(update_fields=["overlap_share", "overlap_annotators"])
    return settings


def overlap_chosen(task_id: int, overlap_share: float) -> bool:
    """Whether task `task_id` goes to several annotators, for a share (0 to 1) of tasks."""
    return ((task_id * _HASH_MULTIPLIER) % _HASH_SPACE) / _HASH_SPACE < overlap_share


# --- handing out -------------------------------------------------------------------------


def _leases(golden_set: GoldenSet, annotator: AbstractBaseUser) -> list[JudgingTask]:
    """The tasks leased to `annotator` in the set, expired or not (index judging_task_leased),
    with their query, page and place, and `judged_already`: a held overlap task shown again
    then needs no statement to tell it is no correction (selectors.task_is_correction)."""
    tasks = JudgingTask.objects.filter(leased_to=annotator, golden_set=golden_set).select_related("query", "page")
    return list(with_query_place(tasks).annotate(judged_already=judged_by(annotator)).order_by("lease_expires_at", "id"))


def _open_to(golden_set: GoldenSet, annotator: AbstractBaseUser, now: datetime, skipped: list[int]) -> QuerySet[JudgingTask]:
    """The set's tasks `annotator` may be handed now: free (no lease, or an expired one),
    of a query still in use (a retired query leaves every version from now on: judging it
    would be wasted), of a pair they have not judged, and not one they skipped."""
    tasks = (
        JudgingTask.objects.filter(golden_set=golden_set, query__retired_at__isnull=True)
        .filter(Q(leased_to__isnull=True) | Q(lease_expires_at__lte=now))
        .exclude(judged_by(annotator))
    )
    return tasks.exclude(pk__in=skipped) if skipped else tasks


def _gold_check(tasks: QuerySet[JudgingTask], annotator: AbstractBaseUser) -> QuerySet[JudgingTask]:
    """Gold checks they have not answered, in id order."""
    answered = GoldAnswer.objects.filter(task=OuterRef("pk"), annotator=annotator)
    return tasks.filter(kind=JudgingTask.Kind.GOLD).exclude(Exists(answered)).order_by("id")


def _of_query(tasks: QuerySet[JudgingTask], golden_set: GoldenSet, annotator: AbstractBaseUser, on_query: int | None):
    """The overlap and queued tasks of the query `annotator` is on (`on_query`, or else
    the query of their latest judgment in the set), lowest position first; through the
    unique index's (golden set, query) prefix, the query's few tasks."""
    if on_query is None:
        latest = Judgment.objects.filter(annotator=annotator, source=Judgment.Source.HUMAN, query__golden_set=golden_set)
        on_query = Subquery(latest.order_by("-id").values("query_id")[:1])
    queued = Q(status=JudgingTask.Status.OPEN, position__isnull=False)
    short = Q(status=JudgingTask.Status.DONE, judgments_required__gt=F("judgments_done"))
    # An overlap task whose pool's budget emptied the queue may have no position: last.
    return (
        tasks.filter(query_id=on_query)
        .filter(queued | short)
        .exclude(kind=JudgingTask.Kind.GOLD)
        .order_by(F("position").asc(nulls_last=True), "id")
    )


def _overlap(tasks: QuerySet[JudgingTask]) -> QuerySet[JudgingTask]:
    """Done tasks still short of their judgments, in id order (index judging_task_overlap_open)."""
    return (
        tasks.filter(status=JudgingTask.Status.DONE, judgments_required__gt=F("judgments_done"))
        .exclude(kind=JudgingTask.Kind.GOLD)
        .order_by("id")
    )


def _lease_queued(
    golden_set: GoldenSet,
    tasks: QuerySet[JudgingTask],
    annotator: AbstractBaseUser,
    until: datetime,
) -> int | None:
    """Lease the free queued task of lowest position over the set's pools and its
    completeness samples; its primary key.

    One look-up per pool walks that pool's queue index (judging_task_pool_queue) in
    position order, and one the set's sample tasks (index judging_task_sample); a single
    look-up over the whole set would sort every pool's queue on each request. The source
    whose head comes first is leased from: should another annotator take that head
    meanwhile, they get the source's next task instead.
    """
    queued = tasks.filter(status=JudgingTask.Status.OPEN, position__isnull=False).order_by("position", "id")
    pool_ids = Pool.objects.filter(golden_set=golden_set).order_by().values_list("pk", flat=True)
    sources = [queued.filter(pool_id=pool_id) for pool_id in pool_ids]
    sources.append(queued.filter(sample__in=CompletenessSample.objects.filter(golden_set=golden_set)))
    # The re-judging queue of stale labels (labeling.stale; index judging_task_stale_queue).
    sources.append(queued.filter(kind=JudgingTask.Kind.STALE))
    heads = []
    for number, source in enumerate(sources):
        head = source.values_list("position", "pk").first()
        if head is not None:
            heads.append((*head, number))
    if not heads:
        return None
    return lease_first(sources[min(heads)[2]], annotator=annotator, until=until)


def _hand_out(
    golden_set: GoldenSet,
    annotator: AbstractBaseUser,
    leases: list[JudgingTask],
    skipped: list[int],
    on_query: int | None,
) -> JudgingTask | None:
    """The next task for `annotator`, who holds none of `leases` unexpired, leased to them,
    with its query, page and place; None when nothing is left for them. Inside the
    caller's transaction."""
    queue_settings = queue_settings_of(golden_set)
    now = timezone.now()
    until = now + timedelta(seconds=queue_settings.lease_seconds)
    tasks = _open_to(golden_set, annotator, now, skipped)
    leased = None
    if queue_settings.gold_share > 0 and gold_draw() < queue_settings.gold_share:
        leased = lease_first(_gold_check(tasks, annotator), annotator=annotator, until=until)
    if leased is None and queue_settings.query_order == QueueSettings.QueryOrder.ONE_AT_A_TIME:
        leased = lease_first(_of_query(tasks, golden_set, annotator, on_query), annotator=annotator, until=until)
    if leased is None:
        leased = lease_first(_overlap(tasks), annotator=annotator, until=until)
    if leased is None:
        leased = _lease_queued(golden_set, tasks, annotator, until)
    if leased is None:
        return None
    # An expired lease left on another task of theirs (they walked away) is let go.
    stale = [lease.pk for lease in leases if lease.pk != leased]
    if stale:
        JudgingTask.objects.filter(pk__in=stale, leased_to=annotator).update(leased_to=None, lease_expires_at=None)
    task = with_query_place(JudgingTask.objects.select_related("query", "page")).get(pk=leased)
    # Every search above passes over pairs they judged and gold checks they answered, so
    # the task is no correction (labeling.judging.selectors.task_is_correction).
    task.new_to_holder = True
    return task


def task_next(
    *,
    golden_set: GoldenSet,
    annotator: AbstractBaseUser,
    skipped_ids: list[int] | None = None,
    on_query: int | None = None,
) -> JudgingTask | None:
    """The task `annotator` should judge now, leased to them; None when nothing is left for them.

    The task they already hold comes first (a reload shows the same pair). `skipped_ids`
    are tasks they skipped, not handed back to them. `on_query` is the primary key of the
    query they are on (the pair they just judged or skipped), kept to while it has work
    for them when the set judges one query at a time; None: their latest judgment's. The
    returned task has its query and page loaded, and `query_pairs` (with_query_place).
    """
    leases = _leases(golden_set, annotator)
    now = timezone.now()
    held = next((task for task in leases if task.lease_expires_at > now), None)
    if held is not None:
        return held
    with transaction.atomic():
        return _hand_out(golden_set, annotator, leases, list(skipped_ids or []), on_query)


# --- judging -----------------------------------------------------------------------------


def _check_held(task: JudgingTask, annotator: AbstractBaseUser, now) -> None:
    """ForbiddenError unless the task is handed to `annotator`: leased to them by task_next
    (a queued, overlap or gold task) or by judgment_undo. Their lease still counts once it
    has expired, as long as nobody else was handed the task since, so a slow grade is not
    lost; a task that is free or someone else's was never theirs to judge, whatever its id.
    A grade sent again for a pair they judged (a double press, a retry after an outage)
    is told so instead (GoldsetError)."""
    if task.leased_to_id == annotator.pk:
        return
    answered = (
        GoldAnswer.objects.filter(task=task, annotator=annotator).exists() if task.kind == JudgingTask.Kind.GOLD else task.judged_already
    )
    if answered:
        raise GoldsetError(f"you have already judged task {task.pk}", field="task")
    if task.leased_to_id is not None and task.lease_expires_at > now:
        raise ForbiddenError(
            f"task {task.pk} is now with another annotator (your hold on it expired); your grade was not recorded",
            field="task",
        )
    raise ForbiddenError(
        f"task {task.pk} is not handed to you: judge the pair your screen shows; your grade was not recorded",
        field="task",
    )


def _check_grade(golden_set: GoldenSet, grade) -> int:
    if isinstance(grade, bool) or grade not in golden_set.grade_values():
        allowed = ", ".join(map(str, golden_set.grade_values()))
        raise GoldsetError(f"grade {grade!r} is not on the scale of {golden_set.slug!r} ({allowed})", field="grade")
    return grade


def _expected_grade(task: JudgingTask) -> int:
    """The label a gold check is checked against: the pair's resolved label."""
    label = pair_label(query_pk=task.query_id, page_pk=task.page_id)
    if label is None:
        if task.grade is not None:
            return task.grade
        raise GoldsetError(f"gold check {task.pk} has no label to check against", field="task")
    return label


def _record(
    task: JudgingTask,
    annotator: AbstractBaseUser,
    grade: int,
    note: str,
    seconds_spent: float | None,
    spans: Sequence[Span] = (),
    hop: str = "",
) -> tuple[JudgingTask, Judgment | GoldAnswer]:
    """task_submit's work inside the caller's transaction: (the task as read under its
    lock, what was written)."""
    note = (note or "").strip()
    if seconds_spent is not None and seconds_spent < 0:
        raise GoldsetError("seconds spent cannot be negative", field="seconds")
    if task.pool_id is not None:
        # pool_task_judged takes the pool's and the query's locks before the task's row:
        # take them first here too, or two submits could each hold what the other waits
        # for. They serialise judgments of one query only.
        pool_query_lock(pool_id=task.pool_id, query_id=task.query_id)
    task = (
        JudgingTask.objects.select_for_update(of=("self",))
        .select_related("golden_set", "query", "page")
        .annotate(judged_already=judged_by(annotator))
        .get(pk=task.pk)
    )
    golden_set = task.golden_set
    task.query.golden_set = golden_set  # the same row: the triggers of migration 0002 hold a task to its set
    grade = _check_grade(golden_set, grade)
    now = timezone.now()
    _check_held(task, annotator, now)
    # The judgment frees the task it was handed with.
    release = {"leased_to": None, "lease_expires_at": None}

    if task.kind == JudgingTask.Kind.GOLD:
        # task_next never hands out a gold check they answered: an answer here was
        # handed back by an undo.
        answer = GoldAnswer.objects.filter(task=task, annotator=annotator).first()
        if answer is None:
            answer = GoldAnswer.objects.create(
                task=task,
                annotator=annotator,
                grade=grade,
                expected_grade=_expected_grade(task),
                seconds_spent=seconds_spent,
            )
        else:  # handed back by an undo: the new answer replaces the old
            answer.grade, answer.seconds_spent = grade, seconds_spent
            answer.save(update_fields=["grade", "seconds_spent"])
        JudgingTask.objects.filter(pk=task.pk).update(**release)
        return task, answer

    already = task.judged_already
    # Judged by them and handed back again: only a done task, by an undo.
    if already and task.status != JudgingTask.Status.DONE:
        raise GoldsetError(f"you have already judged task {task.pk}", field="task")
    if not already and task.status == JudgingTask.Status.SKIPPED:
        raise GoldsetError(f"task {task.pk} was taken out of the queue", field="task")
    if not already and task.status == JudgingTask.Status.DONE and task.judgments_done >= task.judgments_required:
        raise GoldsetError(f"task {task.pk} needs no more judgments", field="task")

    judgment = judgment_record(
        query=task.query,
        page=task.page,
        grade=grade,
        annotator=annotator,
        note=note,
        seconds_spent=seconds_spent,
        spans=spans,
        hop=hop,
    )
    if already:
        # A correction after an undo. If theirs was the grade that closed the task,
        # the task takes the corrected one.
        first = (
            Judgment.objects.filter(query_id=task.query_id, page_id=task.page_id, source=Judgment.Source.HUMAN)
            .order_by("id")
            .values_list("annotator_id", flat=True)
            .first()
        )
        changes = dict(release)
        if first == annotator.pk:
            changes["grade"] = grade
        JudgingTask.objects.filter(pk=task.pk).update(**changes)
    elif task.status == JudgingTask.Status.OPEN:
        queue_settings = queue_settings_of(golden_set)
        required = queue_settings.overlap_annotators if overlap_chosen(task.pk, queue_settings.overlap_share) else 1
        if task.kind == JudgingTask.Kind.POOL:
            # Closes the task, frees its lease and counts the judgment, then moves the
            # pool's order on.
            pool_task_judged(task=task, grade=grade, judgments_required=required)
        else:
            JudgingTask.objects.filter(pk=task.pk).update(
                status=JudgingTask.Status.DONE,
                grade=grade,
                done_at=now,
                judgments_done=F("judgments_done") + 1,
                judgments_required=required,
                **release,
            )
    else:  # an overlap judgment of a done task
        JudgingTask.objects.filter(pk=task.pk).update(judgments_done=F("judgments_done") + 1, **release)
    return task, judgment


def task_submit(
    *,
    task: JudgingTask,
    annotator: AbstractBaseUser,
    grade: int,
    note: str = "",
    seconds_spent: float | None = None,
    spans: Sequence[Span] = (),
    hop: str = "",
) -> Judgment | GoldAnswer:
    """Record `annotator`'s grade for the task's pair and return what was written.

    A Judgment for pool and sample tasks (a GoldAnswer for a gold check). The task must be
    handed to the annotator (_check_held: ForbiddenError, 403, otherwise), so nobody judges
    an open task by posting its id; a pair they judged already is refused unless it was
    handed back by `judgment_undo` (then the new grade supersedes). The first judgment of
    a task closes it (for a pool task through pool_task_judged, which moves the pool's
    order on) and decides whether it is an overlap task. `seconds_spent`: seconds the
    annotator spent on the pair. `spans`: the evidence spans of the page that answer the
    query (goldenset.spans.Span, character offsets into Page.text; none grades the page
    as a whole), `hop` its evidence group, both kept on the Judgment (a gold check's
    answer is a grade only: they are not kept there). All in one transaction;
    GoldsetError names what is wrong and writes nothing.
    """
    with transaction.atomic():
        return _record(task, annotator, grade, note, seconds_spent, spans, hop)[1]


def judgment_submit(
    *,
    task: JudgingTask,
    annotator: AbstractBaseUser,
    grade: int,
    note: str = "",
    seconds: float | None = None,
    skipped_ids: list[int] | None = None,
    spans: Sequence[Span] = (),
    hop: str = "",
) -> JudgingTask | None:
    """Record `annotator`'s grade for the task's pair (as task_submit, `seconds` spent on
    it) and hand out their next pair (as task_next, kept to the judged pair's query; not
    one of `skipped_ids`), in one transaction. Returns the next pair, None when nothing
    is left for them. `spans` and `hop` as task_submit's. A refusal (GoldsetError,
    ForbiddenError) writes nothing and hands nothing out. The judging screen's one write
    a grade."""
    with transaction.atomic():
        task, _ = _record(task, annotator, grade, note, seconds, spans, hop)
        # A hidden gold check breaks into the query they are on: after one, their latest
        # judgment's query (a gold answer is not a judgment) is the one to go on with.
        on_query = None if task.kind == JudgingTask.Kind.GOLD else task.query_id
        leases = []
        if not (task.leased_to_id == annotator.pk and task.lease_expires_at > timezone.now()):
            # They judged a task they no longer held: they may hold another. One they held
            # they held alone (task_next and judgment_undo lease one task to an annotator
            # at a time), and the judgment freed it.
            leases = [lease for lease in _leases(task.golden_set, annotator) if lease.pk != task.pk]
            held = next((lease for lease in leases if lease.lease_expires_at > timezone.now()), None)
            if held is not None:
                return held
        return _hand_out(task.golden_set, annotator, leases, list(skipped_ids or []), on_query)


def task_skip(*, task: JudgingTask, annotator: AbstractBaseUser) -> None:
    """Give the task back unjudged: it returns to the queue for others.

    Only a task handed to the annotator can be skipped, as only such a task can be judged
    (_check_held): ForbiddenError otherwise, and nothing changes. A pair handed back by an
    undo keeps the annotator's earlier grade. The caller keeps the task out of this
    annotator's next hand-outs (`skipped_ids` of task_next).
    """
    released = JudgingTask.objects.filter(pk=task.pk, leased_to=annotator).update(leased_to=None, lease_expires_at=None)
    if not released:
        raise ForbiddenError(f"task {task.pk} is not handed to you, so there is nothing to skip", field="task")


@dataclass(frozen=True)
class UndoResult:
    task: JudgingTask
    previous_grade: int


def judgment_undo(*, annotator: AbstractBaseUser, golden_set: GoldenSet) -> UndoResult:
    """Hand `annotator`'s last judged pair of the set back to them, to judge again.

    Nothing is deleted (judgments are append-only): see the module docstring. The task
    they held is released. GoldsetError when there is nothing to undo, when the pair is
    already handed back, or when someone else holds it right now.
    """
    last_judgment = (
        Judgment.objects.filter(annotator=annotator, source=Judgment.Source.HUMAN, query__golden_set=golden_set)
        .order_by("-id")
        .values("query_id", "page_id", "grade", "created_at")
        .first()
    )
    last_answer = (
        GoldAnswer.objects.filter(annotator=annotator, task__golden_set=golden_set)
        .order_by("-id")
        .values("task_id", "grade", "created_at")
        .first()
    )
    if last_answer is not None and (last_judgment is None or last_answer["created_at"] > last_judgment["created_at"]):
        task_id, previous = last_answer["task_id"], last_answer["grade"]
    elif last_judgment is not None:
        task_id = (
            JudgingTask.objects.filter(golden_set=golden_set, query_id=last_judgment["query_id"], page_id=last_judgment["page_id"])
            .exclude(kind=JudgingTask.Kind.GOLD)
            .order_by("id")
            .values_list("id", flat=True)
            .first()
        )
        if task_id is None:
            raise GoldsetError("your last judgment in this set was not made in the judging queue; there is nothing to undo here")
        previous = last_judgment["grade"]
    else:
        raise GoldsetError("you have not judged anything in this set yet; there is nothing to undo")

    with transaction.atomic():
        task = JudgingTask.objects.select_for_update().get(pk=task_id)
        now = timezone.now()
        if task.leased_to_id == annotator.pk and task.lease_expires_at > now:
            raise GoldsetError("your last judgment is already undone: judge the pair again, or skip it to keep your grade")
        if task.leased_to_id not in (None, annotator.pk) and task.lease_expires_at > now:
            raise GoldsetError("someone else is judging that pair right now; try undoing again in a few minutes")
        JudgingTask.objects.filter(leased_to=annotator, golden_set=golden_set).exclude(pk=task.pk).update(
            leased_to=None, lease_expires_at=None
        )
        task.leased_to = annotator
        task.lease_expires_at = now + timedelta(seconds=queue_settings_of(golden_set).lease_seconds)
        task.save(update_fields=["leased_to", "lease_expires_at"])
    return UndoResult(task=task, previous_grade=previous)
