"""Evaluations of a run against a version, their scores and completeness figures.

Scores are rows, one per (run, version, slice, metric), because people filter and chart
them; per-query values, needed only for drill-down and significance tests, are one blob per
evaluation."""

from django.db import models
from django.db.models import Q

from evaluation.models.runs import Run
from goldenset.models import Version
from lib.job_fields import JobRunnerFields


class Evaluation(JobRunnerFields):
    """One run scored against one version: status while it runs, then its figures."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="evaluations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
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
