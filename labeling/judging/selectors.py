"""Reads of the judging screens: what an annotator judged before (a pair handed back by an
undo), when a task was handed to them, how far judging of the set has come, the
annotators' home and the pair a manager's preview shows."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Length
from django.http import Http404
from django.utils import timezone

from goldenset.models import EvidenceSpan, GoldenSet, Judgment
from labeling.models import GoldAnswer, JudgingTask, Pool, PoolChunk, PoolQuery, QueueSettings
from labeling.pools.strategies import QUERY_STRIDE


def judged_by(annotator: AbstractBaseUser) -> Exists:
    """True for tasks whose pair `annotator` has a judgment of (index judgment_pair_latest)."""
    return Exists(Judgment.objects.filter(query_id=OuterRef("query_id"), page_id=OuterRef("page_id"), annotator=annotator))


def judging_task(golden_set: GoldenSet, task_id: int, annotator: AbstractBaseUser) -> JudgingTask:
    """Task `task_id` of the set (Http404 for another set's or none): the judge and skip
    URLs' task. Its `judged_already` says whether `annotator` has a judgment of its pair
    (task_is_correction needs nothing more to tell that a pair they never judged is no
    correction)."""
    task = JudgingTask.objects.filter(pk=task_id, golden_set=golden_set).annotate(judged_already=judged_by(annotator)).first()
    if task is None:
        raise Http404("no such judging task")
    return task


def leased_at(task: JudgingTask, queue_settings: QueueSettings) -> datetime | None:
    """When the task was handed to its current holder (the lease's end less its length)."""
    if task.lease_expires_at is None:
        return None
    return task.lease_expires_at - timedelta(seconds=queue_settings.lease_seconds)


def query_order_of(golden_set: GoldenSet) -> str:
    """The set's QueueSettings.query_order, the default when it has no settings yet (a read
    does not make them)."""
    order = QueueSettings.objects.filter(golden_set=golden_set).values_list("query_order", flat=True).first()
    return order or QueueSettings._meta.get_field("query_order").default


# --- where a pair stands in its query ---------------------------------------------------------


@dataclass(frozen=True)
class QueryPlace:
    """Where the pair on the judging screen stands in its query: "page `page` of `of` for
    this query".

    `of` is how many pairs of the query the task's pool holds: every page pooled for it,
    whoever judges it. `page` is this pair's place (1 first) in the query's judging order,
    which the task's queue position holds: its slot (position // QUERY_STRIDE) is how many
    of the query's pairs were closed before it plus how many open ones the strategy puts
    ahead of it. So one annotator alone on a query reads 1, 2, ... up to `of`, and `of` less
    `page` is what is left of the query after this pair. Counting the pairs of the query
    rather than the annotator's own keeps both figures true when two annotators share a
    query: each sees the other's pages counted as gone by (the count jumps), never a total
    that shrinks under them or a "last page" followed by another. `page` is None for a
    held pair the strategy moved out of the window since it was handed out (it has no
    position); the screen then says "one of `of` pages".

    `pool` is the task's pool when the query is in more than one of the set's pools (each
    numbers its own pages, so the screen names the pool the figures are of), else None.
    """

    page: int | None
    of: int
    pool: int | None = None


def with_query_place(tasks: QuerySet) -> QuerySet:
    """`tasks` annotated with `query_pairs`, the pairs of each task's query in its pool
    (the pages of its PoolQuery row, 8 bytes each; None outside a pool), `query_in_other_pool`,
    whether another pool holds the query too, and `has_chunks`,
    whether runs of a chunking brought the pair in (PoolChunk rows), in the same
    statement: query_place and task_chunk_ranges read them."""
    pairs = (
        PoolQuery.objects.filter(pool_id=OuterRef("pool_id"), query_id=OuterRef("query_id"))
        .annotate(pairs=Length("page_ids") / 8)
        .values("pairs")
    )
    chunks = PoolChunk.objects.filter(pool_id=OuterRef("pool_id"), query_id=OuterRef("query_id"), page_id=OuterRef("page_id"))
    # Another pool of the query: the place then names its pool (QueryPlace.pool).
    # Through the set's few pools, each an index look-up of pool_query_unique (pool, query).
    other_pool = PoolQuery.objects.filter(pool__golden_set_id=OuterRef("golden_set_id"), query_id=OuterRef("query_id")).exclude(
        pool_id=OuterRef("pool_id")
    )
    return tasks.annotate(query_pairs=Subquery(pairs), has_chunks=Exists(chunks), query_in_other_pool=Exists(other_pool))


def task_chunk_ranges(task: JudgingTask) -> list[tuple[int, int]]:
    """The [start, end) character ranges of the chunks that the pooled runs of a chunking
    returned for the task's pair (PoolChunk), in text order; [] for a pair that runs of
    documents brought in. No statement for a task read through with_query_place whose
    `has_chunks` is False, so the judging cycle of a document pool reads nothing more."""
    if task.pool_id is None or getattr(task, "has_chunks", True) is False:
        return []
    rows = PoolChunk.objects.filter(pool_id=task.pool_id, query_id=task.query_id, page_id=task.page_id)
    return sorted(set(rows.values_list("chunk__start", "chunk__end")))


def query_place(task: JudgingTask) -> QueryPlace | None:
    """Where the task's pair stands in its query's pool (QueryPlace), for a pool task read
    through with_query_place; None for a task outside a pool (a completeness sample, a
    gold check) or one read without it."""
    pairs = getattr(task, "query_pairs", None)
    if task.kind != JudgingTask.Kind.POOL or not pairs:
        return None
    page = task.position // QUERY_STRIDE + 1 if task.position is not None else None
    pool = task.pool_id if getattr(task, "query_in_other_pool", False) else None
    return QueryPlace(page=min(page, pairs) if page is not None else None, of=pairs, pool=pool)


def task_is_correction(*, task: JudgingTask, annotator: AbstractBaseUser) -> int | None:
    """The grade `annotator` gave the task's pair before, if the task is back with them
    after an undo; None for a pair they have not judged."""
    if task.status == JudgingTask.Status.OPEN and task.kind != JudgingTask.Kind.GOLD:
        return None  # the first judgment of a pair closes its task
    if getattr(task, "new_to_holder", False):
        # Handed out by task_next's search, which passes over pairs they judged and gold
        # checks they answered: nothing to look up.
        return None
    if task.kind != JudgingTask.Kind.GOLD and getattr(task, "judged_already", None) is False:
        return None  # read with the pair's judgment by them looked up already (judged_by)
    if task.kind == JudgingTask.Kind.GOLD:
        return GoldAnswer.objects.filter(task=task, annotator=annotator).values_list("grade", flat=True).first()
    return (
        Judgment.objects.filter(query_id=task.query_id, page_id=task.page_id, annotator=annotator)
        .order_by("-id")
        .values_list("grade", flat=True)
        .first()
    )


def previous_evidence(*, task: JudgingTask, annotator: AbstractBaseUser) -> tuple[str, str]:
    """The spans ("start-end,..." as the judge form posts them) and hop of `annotator`'s
    latest judgment of the task's pair: what a pair handed back by an undo shows again,
    to keep or change. Called for corrections only."""
    judgment = (
        Judgment.objects.filter(query_id=task.query_id, page_id=task.page_id, annotator=annotator)
        .order_by("-id")
        .values("pk", "hop")
        .first()
    )
    if judgment is None:
        return "", ""
    spans = EvidenceSpan.objects.filter(judgment_id=judgment["pk"]).order_by("start").values_list("start", "end")
    return ",".join(f"{start}-{end}" for start, end in spans), judgment["hop"]


# --- progress ---------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgingProgress:
    """How far judging of a set has come, for the judging screen.

    `judged_by_you`: pairs the annotator has judged in the set (gold checks included,
    a pair handed back by an undo not). `done` of `total`: the set's pool and sample
    tasks closed, of all of them.
    """

    judged_by_you: int
    done: int
    total: int

    @property
    def share(self) -> float:
        """Fraction (0 to 1) of the set's tasks done."""
        return self.done / self.total if self.total else 0.0

    @property
    def percent(self) -> int:
        return int(round(100 * self.share))


def judged_count(*, golden_set: GoldenSet, annotator: AbstractBaseUser, since=None) -> int:
    """Pairs `annotator` has judged in the set (a pair judged again after an undo once),
    gold checks answered included; with `since`, those judged from that moment on. Reads
    all their judgments of the set: callers keep it."""
    judgments = Judgment.objects.filter(annotator=annotator, source=Judgment.Source.HUMAN, query__golden_set=golden_set)
    answers = GoldAnswer.objects.filter(annotator=annotator, task__golden_set=golden_set)
    if since is not None:
        judgments, answers = judgments.filter(created_at__gte=since), answers.filter(created_at__gte=since)
    return judgments.values("query_id", "page_id").distinct().count() + answers.count()


def _set_progress(golden_set: GoldenSet) -> tuple[int, int]:
    """(done, total) of the set's pool and sample tasks. A pool counts up to its budget:
    once that many of its pairs are judged, none of the rest is queued, so they are not
    waiting for anyone."""
    pools = list(Pool.objects.filter(golden_set=golden_set).order_by().values_list("id", "pair_count", "budget"))
    done = total = 0
    if pools:
        closed = dict(
            JudgingTask.objects.filter(pool_id__in=[pk for pk, _, _ in pools])
            .exclude(status=JudgingTask.Status.OPEN)
            .order_by()
            .values("pool_id")
            .annotate(n=Count("id"))
            .values_list("pool_id", "n")
        )
        for pk, pair_count, budget in pools:
            done += closed.get(pk, 0)
            total += pair_count if budget is None else max(min(pair_count, budget), closed.get(pk, 0))
    # Samples are small (hundreds of pairs): counted through the index judging_task_sample.
    samples = JudgingTask.objects.filter(sample__isnull=False, golden_set=golden_set).aggregate(
        total=Count("id"), done=Count("id", filter=~Q(status=JudgingTask.Status.OPEN))
    )
    return done + samples["done"], total + samples["total"]


# How long the judging screens may show a set's (done, total) before counting again.
SET_PROGRESS_SECONDS = 10


def judging_progress(
    *,
    golden_set: GoldenSet,
    annotator: AbstractBaseUser,
    judged: int | None = None,
    pending_correction: bool = False,
    cache_seconds: float = 0,
) -> JudgingProgress:
    """Counts for the progress bar. `judged` is judged_count's figure if the caller keeps
    it (counted here otherwise); `pending_correction` says a pair handed back by an undo is
    on screen, which counts as not judged. Pool totals come from Pool.pair_count, closed
    pool tasks from the partial index judging_task_pool_closed.

    With `cache_seconds` the set's (done, total) may be that old: counting the closed
    tasks of a pool part-way through judging reads hundreds of thousands of index entries
    (tens of ms), too much for every pair shown. It is kept in Django's default cache,
    which is per process (locmem, goldset.settings sets no CACHES): each worker counts at
    most once in that time, and workers may disagree by a few seconds' judgments, which a
    progress bar can afford.
    """
    if cache_seconds:
        # The set's creation time in the key: a reused id (a test database) is another set.
        key = f"labeling.set_progress:{golden_set.pk}:{golden_set.created_at.timestamp()}"
        counts = cache.get(key)
        if counts is None:
            counts = _set_progress(golden_set)
            cache.set(key, counts, cache_seconds)
        done, total = counts
    else:
        done, total = _set_progress(golden_set)
    if judged is None:
        judged = judged_count(golden_set=golden_set, annotator=annotator)
    return JudgingProgress(judged_by_you=max(judged - int(pending_correction), 0), done=done, total=total)


@dataclass(frozen=True)
class SetToJudge:
    """A row of the annotators' home: a set they judge and how much is waiting."""

    golden_set: GoldenSet
    waiting: int  # the set's pool and sample pairs not yet closed
    judged_by_you: int
    judged_today: int  # the pairs you judged since midnight (the server's time zone), counted as judged_by_you


def sets_to_judge(*, annotator: AbstractBaseUser, golden_sets) -> list[SetToJudge]:
    """The annotators' home, one row per set in `golden_sets` (those they judge)."""
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    rows = []
    for golden_set in golden_sets:
        progress = judging_progress(golden_set=golden_set, annotator=annotator, cache_seconds=SET_PROGRESS_SECONDS)
        today = judged_count(golden_set=golden_set, annotator=annotator, since=midnight)  # counted as judged_by_you is
        rows.append(SetToJudge(golden_set, progress.total - progress.done, progress.judged_by_you, today))
    return rows


def preview_task(golden_set: GoldenSet) -> JudgingTask | None:
    """The pair at the head of the set's queue, as an annotator would be shown it next (if no
    one holds it): what a manager previewing the judging screen sees. Reads, never leases."""
    return (
        with_query_place(
            JudgingTask.objects.filter(golden_set=golden_set, status=JudgingTask.Status.OPEN, position__isnull=False).select_related(
                "query", "page"
            )
        )
        .order_by("position", "id")
        .first()
    )
