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
and a task whose lease expired is handed out again. On PostgreSQL candidates are read
with SELECT ... FOR UPDATE SKIP LOCKED, so two annotators asking at the same moment lock
different rows; on SQLite the settings make every transaction IMMEDIATE, so the two
requests run one after the other. Either way a non-overlap task is with one annotator at
a time, and nobody is handed a pair they have judged.

Judging (`task_submit`) and skipping (`task_skip`) take only a task handed to the
annotator, leased to them by task_next or judgment_undo: a task's id in a URL does not
make it theirs (ForbiddenError, 403). Judging appends a goldenset Judgment (a GoldAnswer for a gold check);
the first judgment of a pool task closes it through
labeling.pools.services.pool_task_judged in the same transaction (the pool's order moves on), and decides from the task id
whether the task is an overlap task.

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
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from goldenset.models import GoldenSet, Judgment, Page, Query
from goldenset.selectors import pair_label
from goldenset.services import judgment_record
from labeling.judging.selectors import with_query_place
from labeling.models import CompletenessSample, GoldAnswer, JudgingTask, Pool, PoolQuery, QueueSettings
from labeling.pools.services import pool_task_judged, pool_task_lock
from lib.errors import ForbiddenError, GoldsetError
from lib.rows import columns, model_from_row, width

# Drawn once per hand-out to decide whether a gold check is due; tests replace it.
gold_draw = random.random

# Knuth's multiplicative hash: consecutive task ids map to well-spread fractions, so the
# share of overlap tasks matches overlap_share closely even over a few dozen tasks, and
# the decision for a task is the same on every machine and every run.
_HASH_MULTIPLIER = 0x9E3779B97F4A7C15
_HASH_SPACE = 1 << 64


def queue_settings_of(golden_set: GoldenSet) -> QueueSettings:
    """The set's queue settings, made with the defaults on first use.

    Read in the same statement and set on them: `has_samples`, whether the set has
    completeness samples (task_next does not look for a sample task when it has none),
    and on PostgreSQL `pool_ids`, the set's pools (task_next looks in each). Callers that
    need them several times (a request) read them once and pass them on.
    """
    samples = CompletenessSample.objects.filter(golden_set=OuterRef("golden_set"))
    settings = QueueSettings.objects.filter(golden_set=golden_set).annotate(has_samples=Exists(samples))
    if connection.vendor == "postgresql":
        from django.contrib.postgres.expressions import ArraySubquery  # imports psycopg: PostgreSQL only

        pools = Pool.objects.filter(golden_set=OuterRef("golden_set")).order_by().values("id")
        settings = settings.annotate(pool_ids=ArraySubquery(pools))
    queue_settings = settings.first()
    if queue_settings is None:
        queue_settings, _ = QueueSettings.objects.get_or_create(golden_set=golden_set)
        queue_settings.has_samples = CompletenessSample.objects.filter(golden_set=golden_set).exists()
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


def overlap_chosen(task_id: int, overlap_share: float) -> bool:
    """Whether task `task_id` goes to several annotators, for a share (0 to 1) of tasks."""
    return ((task_id * _HASH_MULTIPLIER) % _HASH_SPACE) / _HASH_SPACE < overlap_share


def _judged_by(annotator: AbstractBaseUser) -> Exists:
    """True for tasks whose pair `annotator` has a human judgment of (index judgment_pair_latest)."""
    return Exists(Judgment.objects.filter(query_id=OuterRef("query_id"), page_id=OuterRef("page_id"), annotator=annotator))


def _free(now) -> Q:
    return Q(leased_to__isnull=True) | Q(lease_expires_at__lte=now)


def _locked(tasks: QuerySet) -> QuerySet:
    # SKIP LOCKED: a row another annotator is being handed right now is passed over
    # instead of waited for. `of=self`: the task row only, never joined rows. The screen's
    # "page i of n" rides along (with_query_place), so showing it costs no statement.
    return with_query_place(tasks.select_related("query", "page")).select_for_update(skip_locked=True, of=("self",))


# --- the hand-written statements of the hand-out ---------------------------------------
#
# Every judgment runs _leases (a reload, a next-pair) or _query_candidate (the hand-out
# after a judgment), and through the ORM building and compiling them cost several times
# the CPU the database spends on them. So they are SQL, executed with a cursor, and their
# rows become the same model instances the ORM's select_related gave (lib.rows). What
# they select is _task_select()'s: the task, its query and page, and `query_pairs`
# (with_query_place's figure, "page i of n for this query": the pairs of the task's
# query in its pool, the PoolQuery row's page ids at 8 bytes each; NULL outside a pool).


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _task_columns() -> str:
    """What _task_select() selects (a lease written by _query_candidate returns the same)."""
    return (
        f"{columns(JudgingTask, 'task')}, {columns(Query, 'query')}, {columns(Page, 'page')}, "
        f"(SELECT length(pq.page_ids) / 8 FROM {_quote(PoolQuery._meta.db_table)} pq "
        f"WHERE pq.pool_id = task.pool_id AND pq.query_id = task.query_id)"
    )


def _task_select(judged: bool = False) -> str:
    """`judged=True` also selects whether the annotator, the statement's first parameter,
    has judged the task's pair (_judged_by_sql): the tasks' `judged_already`."""
    return (
        f"SELECT {_task_columns()}"
        + (f", {_judged_by_sql()} " if judged else " ")
        + f"FROM {_quote(JudgingTask._meta.db_table)} task "
        f"JOIN {_quote(Query._meta.db_table)} query ON query.id = task.query_id "
        f"JOIN {_quote(Page._meta.db_table)} page ON page.id = task.page_id "
    )


def _tasks_of(sql: str, params: list, judged: bool = False) -> list[JudgingTask]:
    """The tasks a _task_select(judged) statement returns, with query, page and query_pairs
    (and judged_already with `judged`)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    tasks = []
    query_at = width(JudgingTask)
    page_at = query_at + width(Query)
    for row in rows:
        task = model_from_row(JudgingTask, row)
        task.query = model_from_row(Query, row, query_at)
        task.page = model_from_row(Page, row, page_at)
        task.query_pairs = row[page_at + width(Page)]
        if judged:
            task.judged_already = bool(row[-1])
        tasks.append(task)
    return tasks


def _judged_by_sql() -> str:
    """SQL: the task's pair has a judgment by the annotator given as its parameter
    (index judgment_pair_latest); _judged_by's condition."""
    return (
        f"EXISTS (SELECT 1 FROM {_quote(Judgment._meta.db_table)} judged WHERE judged.query_id = task.query_id "
        f"AND judged.page_id = task.page_id AND judged.annotator_id = %s)"
    )


def _not_skipped(skipped: list[int]) -> tuple[str, list[int]]:
    if not skipped:
        return "", []
    return f" AND task.id NOT IN ({', '.join(['%s'] * len(skipped))})", list(skipped)


def _lock_clause() -> str:
    # SKIP LOCKED: a row another annotator is being handed right now is passed over
    # instead of waited for; OF task: the task row only, never the joined ones. SQLite
    # has no row locks: its IMMEDIATE transactions run hand-outs one after the other.
    return " FOR UPDATE OF task SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""


def _leases(golden_set: GoldenSet, annotator: AbstractBaseUser) -> list[JudgingTask]:
    """The tasks leased to `annotator` in the set, expired or not (index judging_task_leased),
    with `judged_already`: a held overlap task shown again then needs no statement to tell
    it is no correction (labeling.judging.selectors.task_is_correction)."""
    return _tasks_of(
        _task_select(judged=True) + "WHERE task.leased_to_id = %s AND task.golden_set_id = %s ORDER BY task.lease_expires_at, task.id",
        [annotator.pk, annotator.pk, golden_set.pk], judged=True,
    )


def own_lease(*, golden_set: GoldenSet, annotator: AbstractBaseUser) -> JudgingTask | None:
    """The task `annotator` holds in the set (unexpired lease), if any."""
    now = timezone.now()
    return next((task for task in _leases(golden_set, annotator) if task.lease_expires_at > now), None)


def _gold_candidate(golden_set: GoldenSet, annotator: AbstractBaseUser, now, skipped: list[int]) -> JudgingTask | None:
    answered = GoldAnswer.objects.filter(task=OuterRef("pk"), annotator=annotator)
    tasks = (
        JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).filter(_free(now))
        .exclude(Exists(answered)).exclude(_judged_by(annotator)).exclude(pk__in=skipped).order_by("id")
    )
    return _locked(tasks).first()


def _first_free(
    where: str, params: list, annotator: AbstractBaseUser, now, skipped: list[int], order_by: str,
) -> JudgingTask | None:
    """The first task, by `order_by`, of those `where` (SQL on `task`, with `params`) that
    is free, of a query still in use, of a pair `annotator` has not judged and not in
    `skipped`: locked (SKIP LOCKED), with its query, page and query_pairs.

    The searches a hand-out falls back on when the annotator's query has nothing left
    for them (_overlap_candidate, _queued_candidate), written as SQL as _query_candidate
    is: through the ORM, building them cost several milliseconds of CPU a hand-out, on
    the judgments that end a query's window.
    """
    not_skipped, skipped_params = _not_skipped(skipped)
    sql = (
        _task_select() + f"WHERE {where} AND (task.leased_to_id IS NULL OR task.lease_expires_at <= %s) "
        # A retired query leaves every version from now on: judging it would be wasted.
        + "AND query.retired_at IS NULL AND NOT " + _judged_by_sql() + not_skipped
        + f" ORDER BY {order_by} LIMIT 1" + _lock_clause()
    )
    tasks = _tasks_of(sql, [*params, connection.ops.adapt_datetimefield_value(now), annotator.pk, *skipped_params])
    return tasks[0] if tasks else None


def _overlap_candidate(golden_set: GoldenSet, annotator: AbstractBaseUser, now, skipped: list[int]) -> JudgingTask | None:
    # Through the partial index judging_task_overlap_open, in id order.
    return _first_free(
        "task.golden_set_id = %s AND task.status = %s AND task.judgments_required > task.judgments_done AND task.kind <> %s",
        [golden_set.pk, JudgingTask.Status.DONE, JudgingTask.Kind.GOLD], annotator, now, skipped, "task.id",
    )


def _query_candidate(
    golden_set: GoldenSet, annotator: AbstractBaseUser, now, skipped: list[int], on_query: int | None,
    lease_until=None,
) -> JudgingTask | None:
    """The free overlap or queued task of the query `annotator` is on (`on_query`, or else
    their latest judgment's query in the set), lowest position first.

    With `lease_until` (PostgreSQL only) the task found is also leased to `annotator`
    until then, in the same statement: the row the search locks (FOR UPDATE SKIP LOCKED,
    in a CTE) is updated and returned (UPDATE ... RETURNING), one round trip where the
    search and _lease_write took two, on the hand-out that follows nearly every judgment.
    SQLite cannot return the joined query and page from an UPDATE: it searches only.
    """
    params: list = []
    if on_query is None:
        # Their latest judgment's query, evaluated once inside this statement: no round
        # trip of its own.
        query = (
            f"(SELECT latest.query_id FROM {_quote(Judgment._meta.db_table)} latest "
            f"JOIN {_quote(Query._meta.db_table)} of_set ON of_set.id = latest.query_id "
            f"WHERE latest.annotator_id = %s AND latest.source = %s AND of_set.golden_set_id = %s "
            f"ORDER BY latest.id DESC LIMIT 1)"
        )
        params += [annotator.pk, Judgment.Source.HUMAN, golden_set.pk]
    else:
        query = "%s"
        params.append(on_query)
    not_skipped, skipped_params = _not_skipped(skipped)
    search = (
        # Through the unique index's (golden set, query) prefix: the query's few tasks.
        f"WHERE task.golden_set_id = %s AND task.query_id = {query} "
        # Queued, or an overlap task still short of its judgments.
        + "AND ((task.status = %s AND task.position IS NOT NULL) "
        + "OR (task.status = %s AND task.judgments_required > task.judgments_done)) "
        + "AND task.kind <> %s AND (task.leased_to_id IS NULL OR task.lease_expires_at <= %s) "
        # A retired query leaves every version from now on: judging it would be wasted.
        + "AND query.retired_at IS NULL AND NOT " + _judged_by_sql() + not_skipped
        # An overlap task whose pool's budget emptied the queue may have no position: last.
        + " ORDER BY CASE WHEN task.position IS NULL THEN 1 ELSE 0 END, task.position, task.id LIMIT 1"
        + _lock_clause()
    )
    params = [golden_set.pk, *params, JudgingTask.Status.OPEN, JudgingTask.Status.DONE, JudgingTask.Kind.GOLD,
              connection.ops.adapt_datetimefield_value(now), annotator.pk, *skipped_params]
    if lease_until is None:
        tasks = _tasks_of(_task_select() + search, params)
    else:
        table, query_table = _quote(JudgingTask._meta.db_table), _quote(Query._meta.db_table)
        tasks = _tasks_of(
            f"WITH picked AS MATERIALIZED (SELECT task.id FROM {table} task "
            f"JOIN {query_table} query ON query.id = task.query_id {search}) "
            f"UPDATE {table} AS task SET leased_to_id = %s, lease_expires_at = %s "
            f"FROM picked, {query_table} query, {_quote(Page._meta.db_table)} page "
            f"WHERE task.id = picked.id AND query.id = task.query_id AND page.id = task.page_id "
            f"RETURNING {_task_columns()}",
            [*params, annotator.pk, connection.ops.adapt_datetimefield_value(lease_until)],
        )
    return tasks[0] if tasks else None


def _queued_candidate(
    golden_set: GoldenSet, annotator: AbstractBaseUser, now, skipped: list[int], queue_settings: QueueSettings,
) -> JudgingTask | None:
    """The free queued task of lowest position over the set's pools and samples."""
    best = None
    pool_ids = getattr(queue_settings, "pool_ids", None)
    if pool_ids is None:
        pool_ids = Pool.objects.filter(golden_set=golden_set).order_by().values_list("id", flat=True)
    # One look-up per pool walks that pool's queue index (judging_task_pool_queue) in
    # position order; a single look-up over the whole set would sort every pool's queue
    # on each request.
    sources = [("task.pool_id = %s", [pool_id]) for pool_id in pool_ids]
    if getattr(queue_settings, "has_samples", True):
        sources.append(("task.pool_id IS NULL AND task.kind = %s AND task.golden_set_id = %s", [JudgingTask.Kind.SAMPLE, golden_set.pk]))
    for source, params in sources:
        task = _first_free(
            f"{source} AND task.status = %s AND task.position IS NOT NULL", [*params, JudgingTask.Status.OPEN],
            annotator, now, skipped, "task.position, task.id",
        )
        if task is not None and (best is None or (task.position, task.pk) < (best.position, best.pk)):
            best = task
    return best


def task_next(
    *, golden_set: GoldenSet, annotator: AbstractBaseUser, skipped_ids: list[int] | None = None,
    queue_settings: QueueSettings | None = None, holds_none: bool = False, savepoint: bool = True,
    on_query: int | None = None,
) -> JudgingTask | None:
    """The task `annotator` should judge now, leased to them; None when nothing is left for them.

    The task they already hold comes first (a reload shows the same pair). `skipped_ids`
    are tasks they skipped, not handed back to them. `on_query` is the primary key of the
    query they are on (the pair they just judged or skipped), kept to while it has work
    for them when the set judges one query at a time; None: their latest judgment's. The
    returned task has its query and page loaded, and `query_pairs` (with_query_place).
    `queue_settings` saves reading them again (queue_settings_of's, with
    has_samples and pool_ids); `holds_none=True` says the caller knows the annotator holds no task
    (their held task was just judged), which saves looking for their leases.
    `savepoint=False` inside a caller's transaction hands the task out in it without a
    savepoint of its own (see task_submit).
    """
    leases = [] if holds_none else _leases(golden_set, annotator)
    now = timezone.now()
    held = next((task for task in leases if task.lease_expires_at > now), None)
    if held is not None:
        return held
    if queue_settings is None:
        queue_settings = queue_settings_of(golden_set)
    skipped = list(skipped_ids or [])
    lease_until = now + timedelta(seconds=queue_settings.lease_seconds)
    with transaction.atomic(savepoint=savepoint):
        task = None
        leased = False  # the lease written already by the search that found the task
        if queue_settings.gold_share > 0 and gold_draw() < queue_settings.gold_share:
            task = _gold_candidate(golden_set, annotator, now, skipped)
        if task is None and queue_settings.query_order == QueueSettings.QueryOrder.ONE_AT_A_TIME:
            # On PostgreSQL this search writes the lease of what it finds (UPDATE ... RETURNING).
            lease_in_search = lease_until if connection.vendor == "postgresql" else None
            task = _query_candidate(golden_set, annotator, now, skipped, on_query, lease_until=lease_in_search)
            leased = task is not None and lease_in_search is not None
        if task is None:
            task = _overlap_candidate(golden_set, annotator, now, skipped)
        if task is None:
            task = _queued_candidate(golden_set, annotator, now, skipped, queue_settings)
        if task is None:
            return None
        # Every search above passes over pairs they judged and gold checks they answered,
        # so the task is no correction (labeling.judging.selectors.task_is_correction).
        task.new_to_holder = True
        # An expired lease left on another task of theirs (they walked away) is let go.
        stale = [lease.pk for lease in leases if lease.pk != task.pk]
        if stale:
            JudgingTask.objects.filter(pk__in=stale, leased_to=annotator).update(leased_to=None, lease_expires_at=None)
        task.leased_to = annotator
        task.lease_expires_at = lease_until
        if not leased:
            _lease_write(task)
    return task


def _lease_write(task: JudgingTask) -> None:
    """Store the task's lease (the row is locked by the hand-out): the statement of
    task.save(update_fields=...), without its cost of building it each time."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_quote(JudgingTask._meta.db_table)} SET leased_to_id = %s, lease_expires_at = %s WHERE id = %s",
            [task.leased_to_id, connection.ops.adapt_datetimefield_value(task.lease_expires_at), task.pk],
        )


def _submitted_task(task_id: int, annotator: AbstractBaseUser) -> JudgingTask:
    """The task a grade was sent for, locked FOR UPDATE (the task row only), with its
    golden set (also its query's), query and page loaded and `judged_already`, whether
    `annotator` has judged its pair: the ORM's select_related read, hand written as the
    statements of the hand-out are (see above)."""
    lock = " FOR UPDATE OF task" if connection.features.has_select_for_update_of else ""
    sql = (
        f"SELECT {columns(JudgingTask, 'task')}, {columns(Query, 'query')}, {columns(Page, 'page')}, "
        f"{columns(GoldenSet, 'gs')}, {_judged_by_sql()} "
        f"FROM {_quote(JudgingTask._meta.db_table)} task "
        f"JOIN {_quote(Query._meta.db_table)} query ON query.id = task.query_id "
        f"JOIN {_quote(Page._meta.db_table)} page ON page.id = task.page_id "
        f"JOIN {_quote(GoldenSet._meta.db_table)} gs ON gs.id = task.golden_set_id "
        f"WHERE task.id = %s" + lock
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [annotator.pk, task_id])
        row = cursor.fetchone()
    if row is None:
        raise JudgingTask.DoesNotExist(f"judging task {task_id} does not exist")
    query_at = width(JudgingTask)
    page_at = query_at + width(Query)
    set_at = page_at + width(Page)
    task = model_from_row(JudgingTask, row)
    task.golden_set = model_from_row(GoldenSet, row, set_at)
    task.query = model_from_row(Query, row, query_at)
    task.query.golden_set = task.golden_set  # the same row: the triggers of migration 0002 hold a task to its set
    task.page = model_from_row(Page, row, page_at)
    task.judged_already = bool(row[-1])
    return task


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
        GoldAnswer.objects.filter(task=task, annotator=annotator).exists() if task.kind == JudgingTask.Kind.GOLD
        else task.judged_already
    )
    if answered:
        raise GoldsetError(f"you have already judged task {task.pk}", field="task")
    if task.leased_to_id is not None and task.lease_expires_at > now:
        raise ForbiddenError(
            f"task {task.pk} is now with another annotator (your hold on it expired); your grade was not recorded",
            field="task",
        )
    raise ForbiddenError(
        f"task {task.pk} is not handed to you: judge the pair your screen shows; your grade was not recorded", field="task",
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


def task_submit(
    *, task: JudgingTask, annotator: AbstractBaseUser, grade: int, note: str = "", seconds_spent: float | None = None,
    queue_settings: QueueSettings | None = None, savepoint: bool = True,
) -> Judgment | GoldAnswer:
    """Record `annotator`'s grade for the task's pair and return what was written.

    A Judgment for pool and sample tasks (a GoldAnswer for a gold check). The task must be
    handed to the annotator (_check_held: ForbiddenError, 403, otherwise), so nobody judges
    an open task by posting its id; a pair they judged already is refused unless it was
    handed back by `judgment_undo` (then the new grade supersedes). The first judgment of a task closes it (for a pool task through
    pool_task_judged, which moves the pool's order on) and decides whether it is an
    overlap task. All in one transaction; GoldsetError names what is wrong and writes
    nothing. `queue_settings` saves reading the set's settings again.

    `savepoint=False` is for a caller that calls it inside its own transaction and lets
    a GoldsetError end that transaction (the judging view, which hands out the next pair
    in the same transaction: one COMMIT a judgment): no savepoint is made, two statements
    fewer. A caller that goes on after a refusal inside its transaction keeps the default.
    """
    note = (note or "").strip()
    if seconds_spent is not None and seconds_spent < 0:
        raise GoldsetError("seconds spent cannot be negative", field="seconds")
    with transaction.atomic(savepoint=savepoint):
        pool = None
        if task.pool_id is not None:
            # pool_task_judged takes the pool's and the query's locks before the task's
            # rows: take them first here too, or two submits could each hold what the
            # other waits for. They serialise judgments of one query only.
            pool = pool_task_lock(task=task)
        task = _submitted_task(task.pk, annotator)
        golden_set = task.golden_set
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
                    task=task, annotator=annotator, grade=grade, expected_grade=_expected_grade(task), seconds_spent=seconds_spent,
                )
            else:  # handed back by an undo: the new answer replaces the old
                answer.grade, answer.seconds_spent = grade, seconds_spent
                answer.save(update_fields=["grade", "seconds_spent"])
            JudgingTask.objects.filter(pk=task.pk).update(**release)
            return answer

        already = task.judged_already
        # Judged by them and handed back again: only a done task, by an undo.
        if already and task.status != JudgingTask.Status.DONE:
            raise GoldsetError(f"you have already judged task {task.pk}", field="task")
        if not already and task.status == JudgingTask.Status.SKIPPED:
            raise GoldsetError(f"task {task.pk} was taken out of the queue", field="task")
        if not already and task.status == JudgingTask.Status.DONE and task.judgments_done >= task.judgments_required:
            raise GoldsetError(f"task {task.pk} needs no more judgments", field="task")

        judgment = judgment_record(
            query=task.query, page=task.page, grade=grade, annotator=annotator, note=note, seconds_spent=seconds_spent,
        )
        if already:
            # A correction after an undo. If theirs was the grade that closed the task,
            # the task takes the corrected one.
            first = (
                Judgment.objects.filter(query_id=task.query_id, page_id=task.page_id, source=Judgment.Source.HUMAN)
                .order_by("id").values_list("annotator_id", flat=True).first()
            )
            changes = dict(release)
            if first == annotator.pk:
                changes["grade"] = grade
            JudgingTask.objects.filter(pk=task.pk).update(**changes)
        elif task.status == JudgingTask.Status.OPEN:
            if queue_settings is None:
                queue_settings = queue_settings_of(golden_set)
            required = queue_settings.overlap_annotators if overlap_chosen(task.pk, queue_settings.overlap_share) else 1
            if task.kind == JudgingTask.Kind.POOL and pool is not None:
                # Closes the task, frees its lease and counts the judgment, in one UPDATE;
                # the locks and the task row are the ones taken above.
                pool_task_judged(task=task, grade=grade, pool=pool, task_locked=True, judgments_required=required)
            elif task.kind == JudgingTask.Kind.POOL:
                pool_task_judged(task=task, grade=grade)
                JudgingTask.objects.filter(pk=task.pk).update(judgments_done=F("judgments_done") + 1, judgments_required=required)
            else:
                JudgingTask.objects.filter(pk=task.pk).update(
                    status=JudgingTask.Status.DONE, grade=grade, done_at=now, leased_to=None, lease_expires_at=None,
                    judgments_done=F("judgments_done") + 1, judgments_required=required,
                )
        else:  # an overlap judgment of a done task
            JudgingTask.objects.filter(pk=task.pk).update(judgments_done=F("judgments_done") + 1, **release)
    return judgment


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
        .order_by("-id").values("query_id", "page_id", "grade", "created_at").first()
    )
    last_answer = (
        GoldAnswer.objects.filter(annotator=annotator, task__golden_set=golden_set)
        .order_by("-id").values("task_id", "grade", "created_at").first()
    )
    if last_answer is not None and (last_judgment is None or last_answer["created_at"] > last_judgment["created_at"]):
        task_id, previous = last_answer["task_id"], last_answer["grade"]
    elif last_judgment is not None:
        task_id = (
            JudgingTask.objects.filter(golden_set=golden_set, query_id=last_judgment["query_id"], page_id=last_judgment["page_id"])
            .exclude(kind=JudgingTask.Kind.GOLD).order_by("id").values_list("id", flat=True).first()
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
