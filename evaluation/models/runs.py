"""Runs and their series, with what is kept beside them (entries, failures, upload jobs, the
inputs a version's scoring reuses, the labels a run pooled).

A run is immutable once uploaded and large (a million entries), so its entries live as
one compressed columnar blob (lib.runs.RankedRun) rather than a row each."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.models import Chunking, GoldenSet, Version
from lib.job_fields import JobRunnerFields


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


class RunUploadJob(JobRunnerFields):
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

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["golden_set", "-created_at"], name="run_upload_job_recent")]

    def __str__(self) -> str:
        return f"upload of {self.source_name} to {self.golden_set_id} ({self.status})"


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
