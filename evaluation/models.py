"""Runs, their evaluations against versions, the scores, and the alerts they raise.

A run is immutable once uploaded and large (a million entries), so its entries live as
one compressed columnar blob (lib.runs.RankedRun) rather than a row each. Scores are
rows, one per (run, version, slice, metric), because people filter and chart them;
per-query values, needed only for drill-down and significance tests, are one blob per
evaluation.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.models import Chunking, GoldenSet, Page, Query, Version


class EvaluationSettings(models.Model):
    """How a golden set's runs are scored and when alerts are raised (the seed's defaults)."""

    golden_set = models.OneToOneField(GoldenSet, on_delete=models.CASCADE, related_name="evaluation_settings")
    # ranx metric names; empty means evaluation.metrics.default_metrics(k_first, k_final).
    metrics = models.JSONField(default=list, blank=True)
    run_depth_cap = models.PositiveIntegerField(default=1000, help_text="entries kept per query of an uploaded run")
    # Alert thresholds. Points are hundredths of a fraction: 3.0 points = 0.03.
    alert_drop_points = models.FloatField(default=3.0, help_text="a drop larger than this, in points, raises an alert")
    alert_slice_floor = models.FloatField(default=0.75, help_text="a slice whose recall is under this fraction raises an alert")
    alert_rerank_loss_points = models.FloatField(default=10.0, help_text="recall@k_first minus recall@k_final above this, in points")
    # Upper bounds, in days, of the page-age slices (pages dated relative to a version's
    # publish time): [30, 365] gives 0-30d, 31-365d and 366d+.
    age_buckets = models.JSONField(default=list, blank=True)
    # Completeness (evaluation.completeness). A run's scores on a version are marked
    # unreliable wherever they are shown when its Judged@k_final there is under the floor.
    completeness_depth = models.PositiveIntegerField(default=100, help_text="pool depth assumed for leave-one-run-out")
    judged_floor = models.FloatField(
        default=0.9, help_text="a run whose Judged@k_final is under this fraction has its scores marked unreliable"
    )
    # Coverage targets (labeling.coverage): a slice whose recall rests on fewer queries than
    # this is flagged, whatever its recall. The recall target of a slice is
    # alert_slice_floor and its Judged@k target judged_floor: one number each, so the
    # coverage page and the alerts never disagree about what "under target" means.
    # Noise-aware drops (evaluation.alerts.noise): a drop past alert_drop_points is sent only
    # when a one-sided paired test over the queries rejects "no change" at alert_alpha,
    # divided among the comparisons of one night (Bonferroni); alert_power is the power at
    # which each slice's minimum detectable drop is stated.
    alert_alpha = models.FloatField(default=0.05, help_text="significance of a drop alert, shared by the comparisons of one night")
    alert_power = models.FloatField(default=0.8, help_text="power at which each slice's minimum detectable drop is stated")
    min_queries_per_slice = models.PositiveIntegerField(
        default=30, help_text="a slice averaged over fewer queries than this is flagged on the coverage page"
    )
    alert_emails = models.JSONField(default=list, blank=True)
    webhook_url = models.URLField(blank=True)
    # The Standard Webhooks signing secret, "whsec_<base64 of 32 random bytes>"
    # (evaluation.alerts.signing). Stored as it is, not hashed: the worker must sign with
    # it, as every HMAC sender does. Not encrypted with a key derived from SECRET_KEY
    # either: whoever reads the database also reads the settings (and SECRET_KEY) on the
    # same hosts, the secret only lets one forge this set's alerts, and a rotated
    # SECRET_KEY would silently break every signature. What protects it is that it is
    # shown once (the settings page right after creation or rotation) and never again:
    # not in the admin, the API or any later page; "" until the webhook is first turned on.
    webhook_secret = models.CharField(max_length=100, blank=True, editable=False)
    webhook_secret_created_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Runs in a series (monitoring's nightly runs, an eval job's uploads). A run whose share
    # of failed queries is over failing_share measured the endpoint's outage, not its recall:
    # it raises "endpoint failing" instead of recall alerts and is never a night's baseline.
    failing_share = models.FloatField(
        default=0.05, help_text="a series run with more than this fraction of failed queries raises 'endpoint failing'"
    )
    # A new version re-scores the latest this-many runs of each series (the night and the
    # nights its alerts compare it with); older nights keep the scores they have.
    series_rescore_nights = models.PositiveIntegerField(
        default=8, help_text="latest runs of each series a new version re-scores (the alerts compare 1 + 7 nights)"
    )
    # Retention: a series run older than this many days keeps its scores, but its entries
    # are dropped unless it is the first night of its ISO week; 0 keeps every night whole.
    series_keep_days = models.PositiveIntegerField(
        default=90, help_text="after this many days a series keeps the entries of one run a week (scores are kept for all)"
    )
    # A run answering under this share of the set's queries is marked partial at upload and
    # kept out of coverage flags and alerts until a manager marks it complete. 0.5 because a
    # run that leaves most queries unanswered scores them 0 (trec_eval -c): every slice then
    # sits under its floor for a reason that is not retrieval, while a run answering half the
    # set or more is a real, if patchy, system whose weak slices are worth a flag.
    partial_share = models.FloatField(
        default=0.5, help_text="a run answering under this fraction of the set's queries is marked partial at upload"
    )

    class Meta:
        verbose_name_plural = "evaluation settings"

    def __str__(self) -> str:
        return f"evaluation settings of {self.golden_set}"


class Series(models.Model):
    """Runs of one system stage measured over time: a monitored endpoint's nightly runs, or
    the runs an eval job uploads with a series name. Its runs carry `measured_at`, and the
    night alerts compare each with the series' previous night and its 7-night median."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="series")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "name"]
        verbose_name_plural = "series"
        constraints = [
            # Uploads, endpoints and the API name a series by its name within the set.
            models.UniqueConstraint(fields=["golden_set", "name"], name="series_name_unique_in_golden_set"),
        ]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """The ranked lists one retrieval system returned for the golden set's queries."""

    class Stage(models.TextChoices):
        FIRST_STAGE = "first_stage", "first stage"
        RERANKED = "reranked", "reranked (what the prompt sees)"
        OTHER = "other", "other"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="runs")
    name = models.CharField(max_length=200)
    system = models.CharField(max_length=200, help_text="the retrieval system; its first-stage and reranked runs form a funnel")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    source_name = models.CharField(max_length=300, blank=True, help_text="the uploaded file's name")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # What the upload found, shown beside the run so nobody has to guess.
    query_count = models.PositiveIntegerField()
    entry_count = models.PositiveIntegerField()
    depth_cap = models.PositiveIntegerField()
    dropped_by_depth = models.PositiveIntegerField(help_text="entries past the depth cap, not kept")
    external_doc_count = models.PositiveIntegerField(help_text="distinct doc ids outside the corpus: they count as unjudged")
    extra_column_lines = models.PositiveIntegerField(default=0, help_text="lines with text after the tag column, ignored")
    # The chunking whose chunk ids the run returns; null: the implicit "documents" chunking
    # (its ids are doc ids), as every run made before chunkings existed. A run of a chunking
    # is scored at document level and at chunk level (SEMANTICS.md).
    chunking = models.ForeignKey(Chunking, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    # A run of a series measures its system at one moment (a night): the nights are ordered
    # by it, and the alerts compare like with like through it.
    series = models.ForeignKey(Series, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    measured_at = models.DateTimeField(null=True, blank=True, help_text="when the system was queried (a series run's night)")
    # The version whose queries a night asked (its NightlyRun.version): the run is scored on
    # it and on every later one, though a later one was published before the run was stored.
    # None for an upload, scored from the version latest when it was uploaded.
    version_asked = models.ForeignKey(
        "goldenset.Version",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # Queries the endpoint did not answer (each in RunQueryFailure): they count as unanswered.
    failed_query_count = models.PositiveIntegerField(default=0)
    index_size = models.PositiveBigIntegerField(null=True, blank=True, help_text="documents the endpoint reported searching")
    # Retention (monitoring.retention) drops the entries of old nights; their scores stay.
    entries_dropped_at = models.DateTimeField(null=True, blank=True)
    # The lifecycle (evaluation.services run_archive, run_mark_complete, ...): the only
    # fields of a run that change after its upload; its entries and scores never do.
    # An archived run keeps its entries and scores but is left out of leaderboards, alerts,
    # coverage flags, pools and default lists until it is unarchived.
    archived_at = models.DateTimeField(null=True, blank=True)
    archived_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # What the upload found against the set's queries (the latest version's, else the live
    # ones): a run answering under EvaluationSettings.partial_share of them is partial, and
    # is kept out of coverage flags and alerts until a manager marks it complete.
    expected_query_count = models.PositiveIntegerField(null=True, blank=True, help_text="the set's queries when it was uploaded")
    answered_query_count = models.PositiveIntegerField(null=True, blank=True, help_text="of those, the queries it answers")
    partial = models.BooleanField(default=False, help_text="answered under the set's partial share of its queries at upload")
    completed_at = models.DateTimeField(null=True, blank=True, help_text="when a manager marked the partial run complete")
    completed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["golden_set", "system", "stage", "name"]
        constraints = [
            # Commands, the API and alerts name a run by its name within the set.
            models.UniqueConstraint(fields=["golden_set", "name"], name="run_name_unique_in_golden_set"),
            # A series run says what moment it measured, or the nights have no order.
            models.CheckConstraint(condition=Q(series=None) | Q(measured_at__isnull=False), name="series_run_has_measured_at"),
            # "Archived by" is only said of an archived run: unarchiving clears both.
            models.CheckConstraint(condition=Q(archived_by=None) | Q(archived_at__isnull=False), name="run_archived_by_only_when_archived"),
            # Only a partial run can be marked complete; the lists and the flags read the pair.
            models.CheckConstraint(condition=Q(completed_at=None) | Q(partial=True), name="run_completed_only_when_partial"),
        ]
        indexes = [models.Index(fields=["series", "measured_at"], name="run_series_measured_at")]

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def held_partial(self) -> bool:
        """Partial and not (yet) marked complete: out of coverage flags and alerts."""
        return self.partial and self.completed_at is None

    @property
    def held_back(self) -> bool:
        """True when the run raises no alert and no coverage flag: archived, or partial
        and not marked complete (evaluation.selectors.run_counted is the same in SQL)."""
        return self.archived or self.held_partial

    @property
    def answered_share(self) -> float | None:
        """The fraction of the set's queries (at upload) the run answers; None when not measured."""
        if self.expected_query_count is None or self.answered_query_count is None:
            return None
        return self.answered_query_count / self.expected_query_count if self.expected_query_count else 1.0

    @property
    def partial_note(self) -> str:
        """The sentence every page, the API and the command say of a partial run; '' otherwise."""
        if not self.partial:
            return ""
        head = (
            f"answers {self.answered_query_count} of {self.expected_query_count} queries "
            f"({100 * (self.answered_share or 0):.1f}%): marked partial"
        )
        if self.completed_at is not None:
            return f"{head}, then marked complete by a manager: it counts for coverage flags and alerts"
        return f"{head}: left out of coverage flags and alerts until a manager marks it complete"

    @property
    def failed_share(self) -> float:
        """The fraction of the run's queries (answered plus failed) whose request failed."""
        asked = self.query_count + self.failed_query_count
        return self.failed_query_count / asked if asked else 0.0

    def __str__(self) -> str:
        return self.name


class RunData(models.Model):
    """The entries of a run: a lib.runs.RankedRun as bytes. Kept apart so lists of runs stay light."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="data", primary_key=True)
    ranked = models.BinaryField()

    class Meta:
        verbose_name = verbose_name_plural = "run data"


class RunQueryFailure(models.Model):
    """A query an endpoint did not answer in a series run: why, as Goldset read it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="failures")
    query_id = models.CharField(max_length=200)
    error = models.TextField()
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="the last HTTP status, when there was an answer")

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            # A query fails at most once per run: the failure is its last attempt's.
            models.UniqueConstraint(fields=["run", "query_id"], name="run_failure_unique_query"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}: {self.error}"


class RunUploadJob(models.Model):
    """A run upload too large to read in the request (over settings.RUN_INLINE_UPLOAD_MB):
    the request writes the file to settings.RUN_UPLOAD_SPOOL, records what the form or the
    API said of it, and comes back; a worker reads it with run_import, all or nothing, and
    records the run or why there is none (evaluation.run_uploads). The spooled file is
    deleted when the job ends, whatever its outcome."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="run_upload_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # What the upload said, as run_import takes it.
    source_name = models.CharField(max_length=300, help_text="the uploaded file's name")
    format = models.CharField(max_length=20, default="auto")
    system = models.CharField(max_length=200)
    stage = models.CharField(max_length=20, choices=Run.Stage.choices)
    name = models.CharField(max_length=200, blank=True, help_text="empty: 'system stage'")
    series = models.CharField(max_length=200, blank=True)
    measured_at = models.DateTimeField(null=True, blank=True)
    chunking = models.CharField(max_length=200, blank=True, help_text="the chunking's name; empty: documents")
    size = models.PositiveBigIntegerField(help_text="bytes uploaded")
    # The file's name inside settings.RUN_UPLOAD_SPOOL (never a path: the folder is the
    # setting's, wherever a process mounts it); "" once the file is deleted.
    spool_name = models.CharField(max_length=100, blank=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Why there is no run: a refusal's message, code, status and field (the answer the
    # request would have given had it read the file) with every problem, each naming its line.
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=30, blank=True)
    error_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_field = models.CharField(max_length=50, blank=True)
    problems = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who holds it while it runs (lib.background_jobs.Holder; "" in-process).
    worker = models.CharField(max_length=255, blank=True)
    worker_start = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["golden_set", "-created_at"], name="run_upload_job_recent")]

    def __str__(self) -> str:
        return f"upload of {self.source_name} to {self.golden_set_id} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in self.ACTIVE


class VersionScoringInputs(models.Model):
    """A version's labels and slices as arrays (evaluation.scoring_inputs),
    stored the first time they are built. A version never changes, and building them reads
    every label and every labelled page's snapshot a row at a time (bench/growth.py times
    it at 100,000 queries); a worker or page that starts cold reads this one blob instead.
    The age slices are not in it: they depend on the set's settings, and are cut from the
    stored publication dates when read. `content_hash` and `version_created_at` repeat the
    version's, so that a blob left by a version whose id SQLite gave out again is not taken."""

    version = models.OneToOneField(Version, on_delete=models.CASCADE, primary_key=True, related_name="+")
    content_hash = models.CharField(max_length=64)
    version_created_at = models.DateTimeField()
    data = models.BinaryField()


class RunPooledLabels(models.Model):
    """The labels of a version that a run has in its top `depth`
    (evaluation.completeness.pooled_labels): what leave-one-run-out pools the runs of the
    run's rivals against. Stored once computed, so that the worker processes that re-score
    a version share them: each process read and decoded every other system's run itself
    (about half of the first evaluation of each process at 100,000 queries). `fingerprint`
    is that of the version's labels as scored (evaluation.pooled_labels);
    `labels` the label indices, ascending, as .npy bytes."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="+")
    depth = models.PositiveIntegerField()
    fingerprint = models.CharField(max_length=32)
    labels = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "depth", "fingerprint", "run"], name="run_pooled_labels_unique"),
        ]


class Evaluation(models.Model):
    """One run scored against one version: status while it runs, then its figures."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="evaluations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When its task was last sent to the broker: the sweeper sends a pending evaluation
    # again only once this is STALE_AFTER old, not on every pass while it waits its turn.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # The Celery worker (its node name, "name@host") that last claimed it and the instance id
    # of its start (lib.background_jobs.Holder); "" when it was computed in-process. The
    # sweeper sends a running evaluation again at once when this worker start no longer
    # answers (a new start under the same name included), instead of waiting STALE_AFTER.
    worker = models.CharField(max_length=255, blank=True)
    worker_start = models.CharField(max_length=32, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    metrics = models.JSONField(default=list, help_text="metric names scored, in display order")
    # Over the version's queries: how many the averages used, how many the run did not
    # answer (scored 0, as trec_eval -c), how many had no relevant page (left out).
    queries_in_version = models.PositiveIntegerField(default=0)
    queries_averaged = models.PositiveIntegerField(default=0)
    unanswered_count = models.PositiveIntegerField(default=0)
    no_relevant_count = models.PositiveIntegerField(default=0)
    # Per-query values of every metric (npz: query ids + one float array per metric).
    per_query = models.BinaryField(null=True, blank=True)
    # Mean recall at each cut-off from 1 to the version's k_first, over all queries, as
    # [[k, fraction], ...]; null for evaluations scored before it was stored.
    recall_curve = models.JSONField(null=True, blank=True)
    # Where the run ranked each canary page of the set (evaluation.canaries) for its query,
    # {canary id: 1-based rank, or null when not ranked}, for the canaries whose query is in
    # the version when it was scored; pages and alerts read it instead of the run's entries.
    canary_ranks = models.JSONField(null=True, blank=True)
    # Per-hop recall@k, all-hops@k and queries with a missing hop, overall and per slice, for
    # a version whose labels carry hops (evaluation.hops.hop_figures); None otherwise.
    hop_figures = models.JSONField(null=True, blank=True)
    # A run of a chunking (Run.chunking): prompt tokens@k_final, the characters of its top
    # k_final chunks / 4 averaged over the queries it answers (SEMANTICS.md). Not a
    # fraction, so not a Score; null for a run of documents and before it was stored.
    prompt_tokens_k_final = models.FloatField(null=True, blank=True, help_text="characters of the top k_final chunks / 4, averaged")

    class Meta:
        constraints = [
            # Tasks upsert by (run, version): a redelivered task finds the row, not a twin.
            models.UniqueConstraint(fields=["run", "version"], name="evaluation_unique_run_version"),
        ]
        indexes = [models.Index(fields=["version", "status"], name="evaluation_version_status")]

    def __str__(self) -> str:
        return f"{self.run} on {self.version}"


class DocumentScores(models.Manager):
    """Score.objects: the document level only, what every figure compared across runs,
    slices, alerts and versions is. The chunk level of a run of a chunking is asked for by
    name (Score.every_level), so that no reader of one figure per (evaluation, slice,
    metric) meets a second one."""

    def get_queryset(self):
        return super().get_queryset().filter(level=Score.Level.DOCUMENT)


class Score(models.Model):
    """The mean of one metric for one evaluation, level and slice.

    `level` is "document" (every run: chunks mapped to their documents) or "chunk" (a run
    of a chunking, against the labels projected onto it: overall only, with evidence
    recall@k); SEMANTICS.md, "Documents, chunkings and levels". `slice` is "" for all
    queries, "query:FIELD=VALUE" for a query slice, and "page:FIELD=VALUE" for a page slice
    (only the relevant pages of that slice count). `value` is a fraction in [0, 1].
    """

    class Level(models.TextChoices):
        DOCUMENT = "document"
        CHUNK = "chunk"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="scores")
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.DOCUMENT, db_default=Level.DOCUMENT)
    slice = models.CharField(max_length=300, blank=True)
    metric = models.CharField(max_length=50)
    value = models.FloatField()
    queries_averaged = models.PositiveIntegerField()
    no_relevant_count = models.PositiveIntegerField(default=0)

    objects = DocumentScores()
    every_level = models.Manager()

    class Meta:
        base_manager_name = "every_level"
        constraints = [
            # One figure per (run, version, level, slice, metric): recomputes replace, never add.
            models.UniqueConstraint(fields=["evaluation", "level", "slice", "metric"], name="score_unique_level_slice_metric"),
            models.CheckConstraint(condition=Q(value__gte=0) & Q(value__lte=1), name="score_value_is_a_fraction"),
        ]

    def __str__(self) -> str:
        level = " (chunk level)" if self.level == self.Level.CHUNK else ""
        return f"{self.metric}{' ' + self.slice if self.slice else ''}{level} = {self.value:.4f}"


class Completeness(models.Model):
    """How far one evaluation's scores can be trusted, for one slice (evaluation.completeness).

    `slice` is named as in Score: "" for all queries, "query:FIELD=VALUE" for a query slice;
    page slices have no row (Judged@k is about the run's top k, which a page slice does not
    change). Judged@k is the share of the run's top k (k_final and k_first of the
    evaluation's version) that has a label of any grade, averaged over `queries`, the
    queries the slice's scores average.

    The leave-one-run-out figures are on the overall row only, and null when the set had
    no run of another system to pool against: the run rescored (recall@k_first, ndcg@10,
    fractions) against the labels without the pages only its system contributed to a pool
    of depth `loro_depth`, and the change from the full labels in points (reduced - full,
    negative when the run would be under-scored unpooled). They depend on the set's other
    runs as they were when the evaluation was computed: a run uploaded later changes them
    only when the evaluation is recomputed.
    """

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="completeness")
    slice = models.CharField(max_length=300, blank=True)
    queries = models.PositiveIntegerField(help_text="queries averaged: those with a relevant page")
    judged_at_k_final = models.FloatField(help_text="fraction of the top k_final with a label")
    judged_at_k_first = models.FloatField(help_text="fraction of the top k_first with a label")
    loro_depth = models.PositiveIntegerField(null=True, blank=True, help_text="pool depth assumed")
    loro_other_runs = models.PositiveIntegerField(null=True, blank=True, help_text="runs of other systems in the pool")
    loro_recall_k_first = models.FloatField(null=True, blank=True, help_text="recall@k_first without the unique pages (fraction)")
    loro_ndcg_10 = models.FloatField(null=True, blank=True, help_text="ndcg@10 without the unique pages (fraction)")
    loro_recall_change_points = models.FloatField(null=True, blank=True, help_text="reduced minus full recall@k_first, in points")
    loro_ndcg_change_points = models.FloatField(null=True, blank=True, help_text="reduced minus full ndcg@10, in points")
    unique_relevant_count = models.PositiveIntegerField(null=True, blank=True, help_text="relevant labels only this system pooled")
    loro_emptied_queries = models.PositiveIntegerField(
        null=True, blank=True, help_text="queries whose every relevant page only this system pooled (they score 0 without them)"
    )

    class Meta:
        verbose_name_plural = "completeness"
        constraints = [
            # One row per (run, version, slice): recomputes replace, never add; pages read it by slice.
            models.UniqueConstraint(fields=["evaluation", "slice"], name="completeness_unique_slice"),
            models.CheckConstraint(
                condition=Q(judged_at_k_final__gte=0)
                & Q(judged_at_k_final__lte=1)
                & Q(judged_at_k_first__gte=0)
                & Q(judged_at_k_first__lte=1),
                name="completeness_judged_is_a_fraction",
            ),
            models.CheckConstraint(
                condition=(Q(loro_recall_k_first__isnull=True) | Q(loro_recall_k_first__gte=0) & Q(loro_recall_k_first__lte=1))
                & (Q(loro_ndcg_10__isnull=True) | Q(loro_ndcg_10__gte=0) & Q(loro_ndcg_10__lte=1)),
                name="completeness_loro_is_a_fraction",
            ),
            models.CheckConstraint(
                condition=(
                    Q(loro_recall_change_points__isnull=True)
                    | Q(loro_recall_change_points__gte=-100) & Q(loro_recall_change_points__lte=100)
                )
                & (Q(loro_ndcg_change_points__isnull=True) | Q(loro_ndcg_change_points__gte=-100) & Q(loro_ndcg_change_points__lte=100)),
                name="completeness_loro_change_is_points",
            ),
        ]

    def __str__(self) -> str:
        return f"Judged@k_final = {self.judged_at_k_final:.2f}{' ' + self.slice if self.slice else ''}"


class Incident(models.Model):
    """The alerts of one night (or one recompute) of one endpoint, delivered as one message,
    then updated by later nights while it stays open, and triaged by a person: acknowledged,
    muted until a time, resolved (evaluation.alerts.incidents)."""

    class Kind(models.TextChoices):
        # A series/endpoint's nights, its canary probes and its failures.
        NIGHT = "night", "nightly runs and probes"
        # The alerts a publish's recompute or an uploaded run raised.
        RECOMPUTE = "recompute", "recompute"
        # The index-recall probe: approximate against exact neighbours.
        INDEX = "index", "index"

    class State(models.TextChoices):
        OPEN = "open"
        ACKNOWLEDGED = "acknowledged"
        MUTED = "muted"
        RESOLVED = "resolved"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="incidents")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # What it is about: the endpoint (or series) name, "v3" for a recompute, the run's system.
    subject = models.CharField(max_length=200)
    title = models.CharField(max_length=300, help_text="the worst alert's headline, updated as alerts join")
    state = models.CharField(max_length=20, choices=State.choices, default=State.OPEN)
    muted_until = models.DateTimeField(null=True, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    opened_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            # Later nights join the open incident of their subject rather than opening another.
            models.UniqueConstraint(
                fields=["golden_set", "kind", "subject"],
                condition=~Q(state="resolved"),
                name="incident_one_unresolved_per_subject",
            ),
        ]
        indexes = [models.Index(fields=["golden_set", "state"], name="incident_set_state")]

    def __str__(self) -> str:
        return f"incident {self.id}: {self.title}"


class IncidentMessage(models.Model):
    """One message (an e-mail and a webhook POST) about an incident: the first lists the
    alerts that opened it, each later one the alerts a later night added. Retries wait
    until next_attempt_at, with or without a broker."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="messages")
    number = models.PositiveIntegerField(help_text="1 for the message that opened the incident, then 2, 3...")
    created_at = models.DateTimeField(auto_now_add=True)
    emailed_at = models.DateTimeField(null=True, blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    webhook_attempts = models.PositiveSmallIntegerField(default=0)
    webhook_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="when a failed delivery is tried again")
    gave_up_at = models.DateTimeField(null=True, blank=True)
    # While closed_at is empty the message is gathering: alerts that join the incident join it.
    # It closes at its first send (evaluation.alerts.messages), and later alerts start the next.
    closed_at = models.DateTimeField(null=True, blank=True, help_text="when it stopped gathering alerts and was first sent")
    rounds = models.PositiveSmallIntegerField(default=0, help_text="delivery rounds tried; the backoff counts them")

    class Meta:
        ordering = ["incident", "number"]
        constraints = [
            models.UniqueConstraint(fields=["incident", "number"], name="incidentmessage_unique_number"),
            # Alerts of one night (or one recompute) gather in the one message still open.
            models.UniqueConstraint(fields=["incident"], condition=Q(closed_at=None), name="incidentmessage_one_gathering"),
        ]
        indexes = [models.Index(fields=["next_attempt_at"], name="incidentmessage_due")]

    def __str__(self) -> str:
        return f"message {self.number} of incident {self.incident_id}"


class SliceMute(models.Model):
    """A slice a manager muted: its alerts are stored and join their incident, but page nobody
    until `until` (evaluation.alerts.incidents)."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="slice_mutes")
    slice = models.CharField(max_length=300)
    until = models.DateTimeField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "slice"]
        # Muting a slice again moves its end: one row per slice, read on every alert.
        constraints = [models.UniqueConstraint(fields=["golden_set", "slice"], name="slicemute_one_per_slice")]

    def __str__(self) -> str:
        return f"{self.slice} muted until {self.until:%Y-%m-%d %H:%M}"


class Alert(models.Model):
    """A number that crossed one of the golden set's alert thresholds."""

    class Kind(models.TextChoices):
        DROP_VS_VERSION = "drop_vs_version", "drop against the previous version"
        DROP_VS_RUN = "drop_vs_run", "drop against the system's previous run"
        SLICE_UNDER_FLOOR = "slice_under_floor", "slice under the recall floor"
        RERANK_LOSS = "rerank_loss", "rerank loss"
        CANARY_MISSED = "canary_missed", "canary page missed"
        DROP_VS_PREVIOUS_NIGHT = "drop_vs_previous_night", "drop against the series' previous night"
        DROP_VS_MEDIAN = "drop_vs_median", "drop against the series' 7-night median"
        ENDPOINT_FAILING = "endpoint_failing", "endpoint failing"
        PROBE_MISSED = "probe_missed", "canary probe missed"
        INDEX_RECALL = "index_recall", "index recall under the exact neighbours"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="alerts")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="alerts")
    # Null for a canary probe's alert, which is about an endpoint (`subject`), not a run.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts")
    canary = models.ForeignKey("Canary", null=True, blank=True, on_delete=models.CASCADE, related_name="alerts")
    subject = models.CharField(max_length=200, blank=True, help_text="the endpoint a probe or failure alert is about")
    # A probe alert is resolved when its canary is found again; other alerts stay as raised.
    resolved_at = models.DateTimeField(null=True, blank=True)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    metric = models.CharField(max_length=50)
    slice = models.CharField(max_length=300, blank=True)
    value = models.FloatField(help_text="the figure that crossed the threshold (fraction)")
    reference = models.FloatField(null=True, blank=True, help_text="what it was compared with (fraction)")
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    # The incident it belongs to and the message that sent it (null: not sent, e.g. within noise).
    # Delivery is recorded on the message (IncidentMessage), never on the alert.
    incident = models.ForeignKey(Incident, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts")
    incident_message = models.ForeignKey(IncidentMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts")
    # Noise-aware drops (evaluation.alerts.noise): a drop past the threshold that the paired
    # test cannot tell from chance is stored with within_noise and never sent.
    within_noise = models.BooleanField(default=False)
    p_value = models.FloatField(null=True, blank=True, help_text="one-sided paired test of the drop")
    detectable_points = models.FloatField(null=True, blank=True, help_text="the slice's minimum detectable drop, in points")
    queries_compared = models.PositiveIntegerField(null=True, blank=True, help_text="queries the paired test compared")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Recomputes are idempotent: the same crossing raises one alert, not one per retry.
            models.UniqueConstraint(fields=["run", "version", "kind", "metric", "slice"], name="alert_unique_crossing"),
            # A missed canary raises one alert per (canary, endpoint) until it is found again.
            models.UniqueConstraint(
                fields=["canary", "subject"],
                condition=Q(kind="probe_missed", resolved_at=None),
                name="alert_one_open_probe_miss",
            ),
        ]

    def __str__(self) -> str:
        return self.message


class Canary(models.Model):
    """A page that a golden set's query must find in every run's top k_first (the newest
    runbook, say): a canary missed means the index or the system lost something people
    just wrote, whatever the averages say. Checked on every evaluation (evaluation.canaries)."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="canaries")
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    note = models.TextField(blank=True, help_text="why this page must be found, e.g. 'runbook published 2026-11-20'")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "id"]
        verbose_name_plural = "canaries"
        constraints = [
            # canary_add refuses a second canary of the same pair; the check reports each once.
            models.UniqueConstraint(fields=["golden_set", "query", "page"], name="canary_unique_pair"),
        ]

    def __str__(self) -> str:
        return f"canary {self.page} for {self.query}"


class WebhookDelivery(models.Model):
    """One attempt to POST to a set's webhook (an alert, or a test event when alert is None),
    written by evaluation.alerts.delivery for every attempt, refused addresses included."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="webhook_deliveries")
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, null=True, blank=True, related_name="webhook_deliveries")
    incident_message = models.ForeignKey(
        IncidentMessage, on_delete=models.CASCADE, null=True, blank=True, related_name="webhook_deliveries"
    )
    # The Standard Webhooks `webhook-id`: the same on every attempt of one message.
    message_id = models.CharField(max_length=100)
    attempt = models.PositiveSmallIntegerField()
    sent_at = models.DateTimeField()
    # The host only: the path of a Slack or Teams URL is itself a secret token.
    host = models.CharField(max_length=255)
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="the HTTP status answered; empty when none was")
    error = models.CharField(max_length=100, blank=True, help_text="the class of error when no status was answered")
    duration_ms = models.PositiveIntegerField()

    class Meta:
        verbose_name_plural = "webhook deliveries"
        # The alerts page reads a set's latest deliveries.
        indexes = [models.Index(fields=["golden_set", "-sent_at"], name="webhookdelivery_set_latest")]

    def __str__(self) -> str:
        return f"{self.message_id} attempt {self.attempt}"

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def shown_error(self) -> str:
        """The error as the alerts page shows it to managers: one word for every failure to
        get an answer, so that a refused internal address, a closed port and a filtered one
        read the same (the port-scanner finding, tests/hardening/test_webhook_ssrf.py);
        `error` keeps the exact class for staff, in the admin."""
        return "unreachable" if self.error else ""
