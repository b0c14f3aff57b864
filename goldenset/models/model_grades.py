"""Model labels: the prompts a model graded pairs with, its grades, and the opt-in version
variant "with model labels" that fills unlabelled pairs with one model's grades."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.models.corpora import Page
from goldenset.models.history import AppendOnlyModel, Version
from goldenset.models.sets import GoldenSet, Query


class ModelPrompt(models.Model):
    """The exact text of a prompt (or a model's configuration) that made model labels, kept
    once and named by its sha256 (`ModelJudgment.prompt_hash`): an edited prompt is a new
    hash, so labels made under two wordings are never mixed up."""

    prompt_hash = models.CharField(max_length=64, unique=True, help_text="sha256 hex of the exact text")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.prompt_hash[:12]


class ModelJudgment(models.Model):
    """A grade a model gave a (query, page) pair: a source of its own, kept apart.

    Never read by human resolution (`goldenset.selectors.resolved_labels` reads Judgment
    only), so it enters no version, export, score, agreement or adjudication; every use of
    it is opted into and says so (labeling.model_labels reads it for calibration).
    `scale_low`/`scale_high` are the bounds of the set's grade scale when the label was
    written, copied so that the database itself can hold the grade within the scale.
    """

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="model_judgments")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="model_judgments")
    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="model_judgments")
    model = models.CharField(max_length=200, help_text="the model's name, e.g. gpt-4o-2024-08-06 or umbrela/llama3")
    prompt_hash = models.CharField(max_length=64, help_text="sha256 hex of the prompt or configuration (ModelPrompt)")
    raw_answer = models.TextField(blank=True, help_text="what the model answered, as it answered it")
    score = models.FloatField(null=True, blank=True, help_text="the model's own score, if it gave one (any scale)")
    grade = models.SmallIntegerField(help_text="the grade read from the answer, on the set's scale")
    scale_low = models.SmallIntegerField()
    scale_high = models.SmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Calibration reads one (set, model, prompt) source at a time.
            models.Index(fields=["golden_set", "model", "prompt_hash"], name="model_judgment_source"),
        ]
        constraints = [
            # The import refuses a second label of a pair from one model and prompt, and
            # calibration counts each pair once per source: one row per (pair, model, prompt).
            models.UniqueConstraint(fields=["query", "page", "model", "prompt_hash"], name="model_judgment_unique_per_prompt"),
            # Kappa and the confusion matrix compare grades on the set's scale.
            models.CheckConstraint(
                condition=Q(grade__gte=models.F("scale_low")) & Q(grade__lte=models.F("scale_high")),
                name="model_judgment_grade_in_scale",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} grades {self.query_id}/{self.page_id}: {self.grade}"


class VersionModelFill(AppendOnlyModel):
    """An opt-in variant of a published version "with model labels": the version's human
    labels, with one model's labels (model and prompt) filling the pairs of its queries
    that no person labelled (goldenset.model_fill).

    The version itself is untouched: its labels, hash and default export stay human-only.
    The variant has a content hash of its own, which covers the version's hash, the model,
    the prompt hash and every model-filled label, and an export of its own.
    """

    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="model_fills")
    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    content_hash = models.CharField(max_length=64)
    # Counts, so the version page need not count rows: the share of model labels is
    # model_label_count / (human_label_count + model_label_count).
    human_label_count = models.PositiveIntegerField()
    model_label_count = models.PositiveIntegerField()
    model_relevant_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "id"]
        constraints = [
            # One variant per (version, model, prompt): its hash names exactly that source.
            models.UniqueConstraint(fields=["version", "model", "prompt_hash"], name="version_model_fill_unique_source"),
        ]

    def __str__(self) -> str:
        return f"{self.version} with model labels of {self.model} ({self.prompt_hash[:12]})"

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]

    @property
    def model_share(self) -> float:
        """The fraction (0-1) of the variant's labels that are the model's."""
        total = self.human_label_count + self.model_label_count
        return self.model_label_count / total if total else 0.0


class VersionModelLabel(AppendOnlyModel):
    """A model's grade filling an unlabelled pair in a VersionModelFill."""

    fill = models.ForeignKey(VersionModelFill, on_delete=models.PROTECT, related_name="labels")
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    grade = models.SmallIntegerField()
    # Natural order of (query_id, doc_id), as VersionLabel.position: the export merges the
    # two streams in that order.
    position = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fill", "query", "page"], name="version_model_label_unique_pair"),
            models.UniqueConstraint(fields=["fill", "position"], name="version_model_label_unique_position"),
        ]
