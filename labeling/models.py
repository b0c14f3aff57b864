"""Pools and judging tasks.

A pool is the union of the top `depth` pages of chosen runs, per query, minus pairs
already labelled. Its pairs are kept per query (PoolQuery, one compact row each), and a
pair becomes a judging task when its query's window reaches it: a task's `position`
orders the annotators' queue (the next task is the open one with the lowest position),
and only the first `Pool.window` open pairs of each query, in the strategy's order, are
queued. As tasks before them are judged, the next pairs become tasks and join the queue.
"""

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from evaluation.models import Run
from goldenset.models import Chunk, GoldenSet, Page, Query
from labeling.pools.strategies import STRATEGIES, unpack_ranks
from lib.job_fields import JobRunnerFields


class Pool(models.Model):
    """Runs of a golden set pooled at a depth, judged in the order of a strategy."""

    class Strategy(models.TextChoices):
        DEPTH = "depth", "depth (rank order)"
        MTF = "mtf", "move-to-front"
        BANDIT = "bandit", "bandit over runs"
        MODEL_FIRST = "model_first", "model first (uses model labels)"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="pools")
    depth = models.PositiveIntegerField(help_text="pages taken from the top of each run, per query (runs added later may differ)")
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="most pairs judged in this pool; once spent, no task of the pool is queued"
    )
    # How many open tasks of each query are in the queue (have a position) at a time.
    # Queuing every task would make the queue index as large as the pool, and a pool
    # build write millions of random entries into it; a window keeps it small and the
    # next-task lookup cheap, while several annotators can still share one query.
    window = models.PositiveIntegerField(default=2)
    # How many pairs the pool holds (its PoolQuery pages), judging tasks already or not.
    # Written by pool_build and pool_extend, the only writers of pool pairs, so that
    # counts need not read them: open pairs are this less the closed tasks.
    pair_count = models.PositiveIntegerField(default=0)
    # Options of the strategy (e.g. {"discount": 0.9} for the bandit; {"model": ...,
    # "prompt_hash": ...} for model first, the model labels it orders by). Its
    # per-query state is not stored: it is replayed from the pool's done tasks, so it
    # cannot drift from the judgments and no large blob is rewritten per judgment.
    strategy_state = models.JSONField(default=dict, blank=True)
    runs = models.ManyToManyField(Run, through="PoolRun", related_name="pools")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "-created_at"]
        constraints = [
            # pool_build validates these; the database keeps every other path honest.
            models.CheckConstraint(condition=Q(depth__gte=1), name="pool_depth_positive"),
            models.CheckConstraint(condition=Q(budget__isnull=True) | Q(budget__gte=1), name="pool_budget_positive"),
            # A window of 0 would queue nothing: the pool could never be judged.
            models.CheckConstraint(condition=Q(window__gte=1), name="pool_window_positive"),
            # labeling.pools.strategies.strategy_class must find the strategy every reorder replays.
            models.CheckConstraint(condition=Q(strategy__in=list(STRATEGIES)), name="pool_strategy_known"),
        ]

    def __str__(self) -> str:
        return f"pool {self.pk} of {self.golden_set.slug} ({self.strategy}, depth {self.depth})"


class PoolChunk(models.Model):
    """A chunk that a pooled run of a chunking returned for a query, of a document the pool
    holds for that query: the passage the judging screen highlights in the document. A
    pool of chunk runs pools documents (SEMANTICS.md, "Documents, chunkings and levels");
    these rows remember which of each document's chunks brought it in. A pool of
    document runs has none. Written by pool_build and pool_extend with the pool's pairs."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+", db_index=False)
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+", db_index=False)
    # A highlight only: chunks a chunking import replaces take their rows with them, and
    # nothing else reads them, so they never hold a chunk back.
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            # One row per chunk of a pair; its (pool, query, page) prefix is the judging
            # screen's look-up of a pair's chunks.
            models.UniqueConstraint(fields=["pool", "query", "page", "chunk"], name="pool_chunk_unique"),
        ]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id} of query {self.query_id} in pool {self.pool_id}"


class PoolJudgingSummary(models.Model):
    """A large pool's judging figures as of `computed_at` (labeling.completeness.summaries):
    its closed tasks counted, its pace over the `recent_hours` before computed_at, and its
    found-against-judged curve, [[judgments made, relevant found], ...]. Each is an aggregate
    over every closed task, which the completeness page cannot afford per view at millions."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="+")
    computed_at = models.DateTimeField()
    recent_hours = models.PositiveIntegerField()
    done = models.PositiveIntegerField()
    skipped = models.PositiveIntegerField()
    relevant = models.PositiveIntegerField()
    recent = models.PositiveIntegerField()
    first_done_at = models.DateTimeField(null=True)
    last_done_at = models.DateTimeField(null=True)
    curve = models.JSONField(default=list)


class PoolRun(models.Model):
    """A run in a pool, the depth it was pooled at, and its column in the tasks' `run_ranks`."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pool_runs")
    # PROTECT: the tasks' provenance (and leave-one-run-out) refers to the run.
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="pool_runs")
    depth = models.PositiveIntegerField()
    ordinal = models.PositiveSmallIntegerField(help_text="the run's column in every task's run_ranks, 0 first")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool", "ordinal"]
        constraints = [
            # pool_extend deepens the existing row of a run instead of adding a second.
            models.UniqueConstraint(fields=["pool", "run"], name="pool_run_unique_run"),
            # Each ordinal is one column of run_ranks: two runs cannot share it.
            models.UniqueConstraint(fields=["pool", "ordinal"], name="pool_run_unique_ordinal"),
            models.CheckConstraint(condition=Q(depth__gte=1), name="pool_run_depth_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.run} at depth {self.depth}"


class PoolQuery(models.Model):
    """One query's pairs in a pool: the pages to judge and each pooled run's rank of each.

    A pool of 10,000 queries pooled 100 deep from 20 runs holds millions of pairs, of
    which annotators reach a fraction; a row per pair made building it several times
    slower than computing it (bench/pool_build.py), for rows most of which would never
    be read. So a pool keeps its pairs here, one row per query, and a pair becomes a
    JudgingTask only when its query's window reaches it (labeling.pools.services). Each pair
    of the pool is here whether it is a task yet or not; a pool task always has its
    pair here.

    `page_ids`: the pages' primary keys, int64 little-endian, ascending. `run_ranks`: one
    little-endian uint16 per (page, run), page after page, `runs` per page, in
    PoolRun.ordinal order, 0 = not in that run's top; runs added to the pool later read
    as 0 in rows written before them (see `ranks()`).
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pool_queries", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+", db_index=False)
    page_ids = models.BinaryField()
    run_ranks = models.BinaryField()
    runs = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name_plural = "pool queries"
        constraints = [
            models.UniqueConstraint(fields=["pool", "query"], name="pool_query_unique"),
            models.CheckConstraint(condition=Q(runs__gte=1), name="pool_query_has_runs"),
        ]

    def __str__(self) -> str:
        return f"query {self.query_id} of pool {self.pool_id}"

    def pages(self) -> np.ndarray:
        """The pages' primary keys (int64, ascending)."""
        return np.frombuffer(bytes(self.page_ids), dtype="<i8").astype(np.int64)

    def ranks(self, runs: int) -> np.ndarray:
        """The ranks matrix (int64, pages x `runs`), 0 where a run did not retrieve a page."""
        stored = np.frombuffer(bytes(self.run_ranks), dtype="<u2").reshape(-1, self.runs)
        out = np.zeros((len(stored), runs), dtype=np.int64)
        kept = min(runs, self.runs)
        out[:, :kept] = stored[:, :kept]
        return out

    @staticmethod
    def packed(page_pks: np.ndarray, ranks: np.ndarray) -> dict:
        """The stored fields of pages (ascending) and their ranks matrix."""
        return {
            "page_ids": np.ascontiguousarray(page_pks, dtype="<i8").tobytes(),
            "run_ranks": np.ascontiguousarray(ranks, dtype="<u2").tobytes(),
            "runs": ranks.shape[1],
        }


class JudgingTask(models.Model):
    """One (query, page) pair to judge.

    `position` orders the queue: the next task is the open one with the lowest position
    (ties by id); a task without one is not in the queue now. Pool tasks interleave
    queries round-robin: position = slot * labeling.pools.strategies.QUERY_STRIDE + the query's
    primary key modulo QUERY_STRIDE, where slot n is the query's (n+1)-th page to judge. Only the
    first `pool.window` open tasks of a query in the strategy's order have a position;
    each judgment (pool_task_judged) moves the window on and, for adaptive strategies,
    reorders it. Once the pool's budget is spent, no task has a position. A pool task is
    made when its pair joins its query's window (PoolQuery), so a pool's pairs that have
    not yet been queued have no task.

    `run_ranks` says which runs put the page in their pooled top and where: one
    little-endian uint16 per run of the pool, in PoolRun.ordinal order, 0 = not in that
    run's top (see `ranks()`).
    """

    class Kind(models.TextChoices):
        POOL = "pool", "pool"
        SAMPLE = "sample", "completeness sample"
        GOLD = "gold", "hidden gold check"
        # A label whose evidence spans no longer hold on its page's new text (goldenset.stale_spans), to judge again.
        STALE = "stale", "stale label to judge again"

    class Status(models.TextChoices):
        OPEN = "open"
        DONE = "done"
        SKIPPED = "skipped"

    # Tasks are written in bulk (a COPY of whole windows), so the references below carry
    # no per-row foreign key check, and only the partial indexes further down (per-row
    # checks made writing a large pool's tasks several times slower, bench/pool_build.py). Instead:
    # - lookups go through the unique constraint (golden set, query, page), whose
    #   first columns they are, and the partial indexes by pool and by lease;
    # - triggers (migration 0002) check a whole statement's rows at once, and more than
    #   foreign keys would: the query and the pool belong to the task's golden set and
    #   the page to its corpus; a lease names an existing user; the other references
    #   cannot change after insert;
    # - deletes of what they point to go through the ORM's PROTECT, CASCADE and SET_NULL
    #   (queries, pages and golden sets are never deleted by the app; judgments protect
    #   them too).
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="+", db_index=False, db_constraint=False)
    pool = models.ForeignKey(
        Pool, null=True, blank=True, on_delete=models.CASCADE, related_name="tasks", db_index=False, db_constraint=False
    )
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+", db_index=False, db_constraint=False)
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+", db_index=False, db_constraint=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    position = models.BigIntegerField(null=True, blank=True)
    best_rank = models.PositiveIntegerField(null=True, blank=True, help_text="best rank of the page in the pooled runs")
    run_ranks = models.BinaryField(default=bytes, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    # The grade that closed the task: adaptive strategies replay the query's done tasks in
    # order of done_at, so the order they produced can always be reproduced.
    grade = models.SmallIntegerField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    # The annotator queue hands a task to one person at a time for a while.
    leased_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    judgments_required = models.PositiveSmallIntegerField(default=1)
    # Judgments made on this task so far. An overlap task (judgments_required > 1) closes
    # its pool position with the first one (the strategy learns from it) and stays
    # available, to other annotators only, until this reaches judgments_required.
    judgments_done = models.PositiveSmallIntegerField(default=0, db_default=0)
    # The completeness sample a SAMPLE task was drawn for (see CompletenessSample).
    sample = models.ForeignKey(
        "CompletenessSample",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="tasks",
        db_index=False,
        db_constraint=False,
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            # One task per pair and kind: pooling skips pairs that are already tasks, and
            # the queue never shows one pair twice for the same purpose.
            models.UniqueConstraint(fields=["golden_set", "query", "page", "kind"], name="judging_task_unique_pair"),
            # Reorders and budgets act on a pool's tasks; a pool task without its pool is lost.
            models.CheckConstraint(condition=~Q(kind="pool") | Q(pool__isnull=False), name="judging_task_pool_kind_has_pool"),
            # The queue frees a lease when it expires: a lease without an end would never free.
            models.CheckConstraint(
                condition=Q(leased_to__isnull=True) | Q(lease_expires_at__isnull=False), name="judging_task_lease_has_expiry"
            ),
            models.CheckConstraint(condition=Q(judgments_required__gte=1), name="judging_task_needs_a_judgment"),
        ]
        indexes = [
            # The queue: a pool's queued open tasks by position. Partial, so it holds the
            # windows only (about window x queries entries), not the whole pool.
            models.Index(fields=["pool", "position"], condition=Q(status="open", position__isnull=False), name="judging_task_pool_queue"),
            # Done and skipped tasks by pool: budgets and progress count them. Partial, so
            # a pool build, whose tasks are all open, writes nothing into it (an index of
            # every task by pool cost a fifth of the build); open ones are
            # Pool.pair_count less these. Other lookups of a pool's tasks go through the
            # unique constraint's (golden set, query) prefix.
            models.Index(fields=["pool", "status"], condition=~Q(status="open"), name="judging_task_pool_closed"),
            # An annotator's current leases; partial, so unleased rows cost nothing.
            models.Index(fields=["leased_to"], condition=Q(leased_to__isnull=False), name="judging_task_leased"),
            # Overlap tasks still waiting for another annotator's judgment.
            models.Index(
                fields=["golden_set", "id"],
                condition=Q(status="done", judgments_required__gt=models.F("judgments_done")),
                name="judging_task_overlap_open",
            ),
            # The re-judging queue of stale labels (labeling.stale), by position; partial, so other tasks cost nothing.
            models.Index(fields=["golden_set", "position"], condition=Q(kind="stale", status="open"), name="judging_task_stale_queue"),
            # A completeness sample's tasks; partial, so pool tasks (sample NULL) cost nothing.
            models.Index(fields=["sample", "status"], condition=Q(sample__isnull=False), name="judging_task_sample"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} task {self.query_id}/{self.page_id} ({self.status})"

    def ranks(self, runs: int) -> list[int]:
        """This task's rank in each of the pool's first `runs` runs (PoolRun.ordinal order),
        0 where the run did not put the page in its pooled top."""
        return unpack_ranks([bytes(self.run_ranks)], runs)[0].tolist()


class QueueSettings(models.Model):
    """How a golden set's judging queue hands out work. One row per set, made on first use."""

    class QueryOrder(models.TextChoices):
        # An annotator keeps to the query they are on until its window has nothing left for
        # them, as TREC and Quepid assessors judge a query's pages together (reading the
        # query once, grading its pages against each other).
        ONE_AT_A_TIME = "one_at_a_time", "one query at a time"
        # Every pair goes in queue order: queries take turns, the least advanced first, so
        # an annotator's next pair is usually of another query.
        INTERLEAVED = "interleaved", "queries interleaved"

    golden_set = models.OneToOneField(GoldenSet, on_delete=models.CASCADE, related_name="queue_settings")
    # Share of tasks (0 to 1) that go to `overlap_annotators` people instead of one, so
    # that agreement can be measured; decided per task when it is first judged.
    overlap_share = models.FloatField(default=0.1)
    overlap_annotators = models.PositiveSmallIntegerField(default=2)
    # Share of the tasks an annotator is served (0 to 0.5) that are hidden gold checks.
    gold_share = models.FloatField(default=0.0)
    # How long a task stays with the annotator it was handed to before returning to the queue.
    lease_seconds = models.PositiveIntegerField(default=600)
    # How an annotator's pairs follow each other (labeling.judging.services.task_next).
    query_order = models.CharField(max_length=20, choices=QueryOrder.choices, default=QueryOrder.ONE_AT_A_TIME)

    class Meta:
        verbose_name = verbose_name_plural = "queue settings"
        constraints = [
            models.CheckConstraint(condition=Q(overlap_share__gte=0) & Q(overlap_share__lte=1), name="queue_overlap_share_fraction"),
            models.CheckConstraint(
                condition=Q(overlap_annotators__gte=2) & Q(overlap_annotators__lte=3), name="queue_overlap_two_or_three"
            ),
            models.CheckConstraint(condition=Q(gold_share__gte=0) & Q(gold_share__lte=0.5), name="queue_gold_share_fraction"),
            models.CheckConstraint(condition=Q(lease_seconds__gte=30), name="queue_lease_at_least_30s"),
            # task_next tells the two orders apart by these values: a third would read as interleaved.
            models.CheckConstraint(condition=Q(query_order__in=["one_at_a_time", "interleaved"]), name="queue_query_order_known"),
        ]

    def __str__(self) -> str:
        return f"queue settings of {self.golden_set.slug}"


class GoldAnswer(models.Model):
    """An annotator's grade on a hidden gold check (a GOLD task, whose pair has a known label).

    Kept apart from goldenset.Judgment on purpose: a gold check measures the annotator,
    and must not move the label it is checked against.
    """

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="gold_answers")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    grade = models.SmallIntegerField()
    expected_grade = models.SmallIntegerField(help_text="the pair's label when the check was answered")
    seconds_spent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # The queue serves each gold check to an annotator once.
            models.UniqueConstraint(fields=["task", "annotator"], name="gold_answer_once_per_annotator"),
        ]

    def __str__(self) -> str:
        return f"gold answer {self.grade} (expected {self.expected_grade}) by {self.annotator_id}"


class CompletenessSample(models.Model):
    """A uniform random sample of unjudged pages the pooled runs ranked below the pool depth.

    Annotators judge its SAMPLE tasks like any other; the share found relevant, scaled to
    `population`, estimates how many relevant pages nobody has judged.
    """

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="completeness_samples")
    pool = models.ForeignKey(Pool, null=True, blank=True, on_delete=models.SET_NULL, related_name="samples")
    # Ranks depth_from + 1 .. depth_to of the runs were sampled (the pool took 1 .. depth_from).
    depth_from = models.PositiveIntegerField()
    depth_to = models.PositiveIntegerField()
    population = models.PositiveIntegerField(help_text="unjudged (query, page) pairs the sample was drawn from")
    size = models.PositiveIntegerField(help_text="pairs drawn")
    seed = models.BigIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(depth_to__gt=models.F("depth_from")), name="sample_depth_range"),
            models.CheckConstraint(condition=Q(size__lte=models.F("population")), name="sample_within_population"),
        ]

    def __str__(self) -> str:
        return f"completeness sample {self.pk} of {self.golden_set.slug} ({self.size} of {self.population})"


class PoolJob(JobRunnerFields):
    """A pool build, a pool extension or a completeness sample draw asked for from a page,
    run by a Celery worker (labeling.jobs).

    On a large set these take longer than a web request may (a pool of 20 runs over
    100,000 queries, bench/pool_build.py): the page records the
    job, checks what can be checked at once, and comes back; the worker runs the service,
    all or nothing as from the command line, and records the summary it printed or why
    it refused. `arguments` are ids and numbers: the worker reads the rows again.
    """

    class Kind(models.TextChoices):
        BUILD = "build", "build a pool"
        EXTEND = "extend", "extend a pool"
        SAMPLE = "sample", "draw a completeness sample"
        FLAGGED = "flagged", "pool the flagged slices"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="pool_jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    arguments = models.JSONField(default=dict)
    lines = models.JSONField(default=list, blank=True, help_text="the summary of what was written")
    error = models.TextField(blank=True, help_text="why nothing was written")
    problems = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["golden_set", "-created_at"], name="pool_job_recent")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for {self.golden_set_id} ({self.status})"

    @property
    def took(self) -> str:
        """How long the worker took, for people ("7.2 s", "3 min"); empty until it finishes."""
        if self.started_at is None or self.finished_at is None:
            return ""
        seconds = (self.finished_at - self.started_at).total_seconds()
        if seconds < 1:
            return f"{seconds:.2f} s"
        return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class JudgeJob(JobRunnerFields):
    """A model grading the pairs of a pool (or a sample of them), run by a Celery worker
    (labeling.model_labels.jobs): of kind `chat`, through an OpenAI-compatible chat endpoint;
    of kind `local`, the packaged all-MiniLM-L6-v2 on the worker itself (no URL, no key, no
    price; `prompt_hash` names its thresholds, labeling.model_labels.local_judge).

    Grades are written as model labels (goldenset.model_labels.model_labels_record) chunk by
    chunk, so a job that stops keeps what it wrote, and another run of the same model and
    prompt skips those pairs. The API key is not here: `api_key_env` names the variable the
    worker reads it from. Prices are the manager's figures, per million tokens.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    class Kind(models.TextChoices):
        CHAT = "chat", "chat: an OpenAI-compatible API"
        LOCAL = "local", "local: all-MiniLM-L6-v2 on the worker"

    class Pairs(models.TextChoices):
        POOL = "pool", "the pool's pairs: labels where people have none yet"
        JUDGED = "judged", "pairs people judged (the latest version's labels): what calibration compares"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="judge_jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CHAT)
    # Which pairs it grades: a pool's (to fill in what people have not judged), or the pairs
    # of the latest version (to calibrate the model against people: "judged by both").
    pairs = models.CharField(max_length=10, choices=Pairs.choices, default=Pairs.POOL, db_default=Pairs.POOL)
    pool = models.ForeignKey(Pool, null=True, on_delete=models.SET_NULL, related_name="judge_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    base_url = models.URLField(max_length=500, blank=True, help_text="a chat judge's API; empty for a local one")
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(max_length=100, blank=True, help_text="the variable holding the API key, never the key")
    prompt_hash = models.CharField(max_length=64)
    sample_size = models.PositiveIntegerField(null=True, blank=True, help_text="grade this many pairs of the pool, drawn at random")
    max_in_flight = models.PositiveSmallIntegerField(default=4)
    batch_size = models.PositiveSmallIntegerField(
        default=1,
        help_text="passages of one query graded in one request (1: a request per pair)",
    )
    price_in = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True, help_text="per million input tokens")
    price_out = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True, help_text="per million output tokens")
    pairs_total = models.PositiveIntegerField(default=0)
    pairs_skipped = models.PositiveIntegerField(default=0, help_text="labelled by this model and prompt before the job")
    pairs_done = models.PositiveIntegerField(default=0)
    pairs_failed = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    # While it runs: the latest request attempt that failed and is tried again ("no answer
    # within 120 s (attempt 1 of 4); trying again"), so the page says at the first timeout
    # that the endpoint does not answer; emptied when a request settles.
    retrying = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["golden_set", "-created_at"], name="judge_job_recent")]
        constraints = [
            # A worker pool of 0 would send nothing; past 64 it is a denial of someone's service.
            models.CheckConstraint(condition=Q(max_in_flight__gte=1) & Q(max_in_flight__lte=64), name="judge_job_in_flight_bounded"),
            models.CheckConstraint(condition=Q(sample_size__isnull=True) | Q(sample_size__gte=1), name="judge_job_sample_positive"),
            # The worker picks the judge by kind: a chat job with no URL would fail only there.
            models.CheckConstraint(condition=Q(kind="local") | ~Q(base_url=""), name="judge_job_chat_has_url"),
            # The judge refuses other sizes (lib.llm_judging.MAX_BATCH); a prompt of more passages outgrows small models.
            models.CheckConstraint(condition=Q(batch_size__gte=1) & Q(batch_size__lte=20), name="judge_job_batch_bounded"),
        ]

    def __str__(self) -> str:
        return f"{self.model} judging {self.golden_set_id} ({self.status})"

    @property
    def settled(self) -> int:
        return self.pairs_skipped + self.pairs_done + self.pairs_failed


class JudgeFailure(models.Model):
    """A pair a judge job could not grade: why, and what the model answered if it did (a
    malformed answer is kept as it came, never read as a guess)."""

    job = models.ForeignKey(JudgeJob, on_delete=models.CASCADE, related_name="failures")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="+")
    error = models.TextField()
    raw_answer = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.query_id}/{self.page_id} {self.error}"
