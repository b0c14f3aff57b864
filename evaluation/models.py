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

from goldenset.models import GoldenSet, Version


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
    alert_emails = models.JSONField(default=list, blank=True)
    webhook_url = models.URLField(blank=True)

    def __str__(self) -> str:
        return f"evaluation settings of {self.golden_set}"


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

    class Meta:
        ordering = ["golden_set", "system", "stage", "name"]
        constraints = [
            # Commands, the API and alerts name a run by its name within the set.
            models.UniqueConstraint(fields=["golden_set", "name"], name="run_name_unique_in_golden_set"),
        ]

    def __str__(self) -> str:
        return self.name


class RunData(models.Model):
    """The entries of a run: a lib.runs.RankedRun as bytes. Kept apart so lists of runs stay light."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="data", primary_key=True)
    ranked = models.BinaryField()


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
    started_at = models.DateTimeField(null=True, blank=True)
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

    class Meta:
        constraints = [
            # Tasks upsert by (run, version): a redelivered task finds the row, not a twin.
            models.UniqueConstraint(fields=["run", "version"], name="evaluation_unique_run_version"),
        ]
        indexes = [models.Index(fields=["version", "status"], name="evaluation_version_status")]

    def __str__(self) -> str:
        return f"{self.run} on {self.version}"


class Score(models.Model):
    """The mean of one metric for one evaluation and slice.

    `slice` is "" for all queries, "query:FIELD=VALUE" for a query slice, and
    "page:FIELD=VALUE" for a page slice (only the relevant pages of that slice count).
    `value` is a fraction in [0, 1].
    """

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="scores")
    slice = models.CharField(max_length=300, blank=True)
    metric = models.CharField(max_length=50)
    value = models.FloatField()
    queries_averaged = models.PositiveIntegerField()
    no_relevant_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # One figure per (run, version, slice, metric): recomputes replace, never add.
            models.UniqueConstraint(fields=["evaluation", "slice", "metric"], name="score_unique_slice_metric"),
            models.CheckConstraint(condition=Q(value__gte=0) & Q(value__lte=1), name="score_value_is_a_fraction"),
        ]

    def __str__(self) -> str:
        return f"{self.metric}{' ' + self.slice if self.slice else ''} = {self.value:.4f}"


class Alert(models.Model):
    """A number that crossed one of the golden set's alert thresholds."""

    class Kind(models.TextChoices):
        DROP_VS_VERSION = "drop_vs_version", "drop against the previous version"
        DROP_VS_RUN = "drop_vs_run", "drop against the system's previous run"
        SLICE_UNDER_FLOOR = "slice_under_floor", "slice under the recall floor"
        RERANK_LOSS = "rerank_loss", "rerank loss"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="alerts")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="alerts")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    metric = models.CharField(max_length=50)
    slice = models.CharField(max_length=300, blank=True)
    value = models.FloatField(help_text="the figure that crossed the threshold (fraction)")
    reference = models.FloatField(null=True, blank=True, help_text="what it was compared with (fraction)")
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    emailed_at = models.DateTimeField(null=True, blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    webhook_attempts = models.PositiveSmallIntegerField(default=0)
    webhook_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Recomputes are idempotent: the same crossing raises one alert, not one per retry.
            models.UniqueConstraint(fields=["run", "version", "kind", "metric", "slice"], name="alert_unique_crossing"),
        ]

    def __str__(self) -> str:
        return self.message
