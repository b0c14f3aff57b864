"""What is never changed once written: judgments and their evidence spans, versions and
the rows they froze (queries, pages, labels, spans, duplicates, reference answers), and the
publish jobs that make versions. Enforced below the app (database triggers, migration 0002)
as well as in it (AppendOnlyQuerySet)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.models.corpora import DEFAULT_SPAN_MIN_OVERLAP_CHARS, DEFAULT_SPAN_MIN_OVERLAP_SHARE, Page
from goldenset.models.sets import GoldenSet, Query
from lib.errors import GoldsetError
from lib.job_fields import JobRunnerFields


class AppendOnlyQuerySet(models.QuerySet):
    """Refuses bulk update and delete: history rows are written once and kept."""

    def update(self, **kwargs):
        raise GoldsetError(f"{self.model._meta.verbose_name_plural} are append-only and cannot be updated")

    def delete(self):
        raise GoldsetError(f"{self.model._meta.verbose_name_plural} are append-only and cannot be deleted")


class AppendOnlyModel(models.Model):
    """A row that can be inserted once and never changed or removed through the app."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise GoldsetError(f"a {self._meta.verbose_name} cannot be changed once written")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise GoldsetError(f"a {self._meta.verbose_name} cannot be deleted")


class Judgment(AppendOnlyModel):
    """One person's (or one import's) grade for a (query, page) pair.

    Never overwritten: a later judgment of the same pair supersedes an earlier one for
    resolution, and both stay in history.
    """

    class Source(models.TextChoices):
        HUMAN = "human"
        IMPORTED = "imported"
        # An adjudicator's decision on a pair the annotators disagreed on: it overrides
        # every other judgment of the pair in resolution.
        ADJUDICATED = "adjudicated"

    # No index of its own: judgment_pair_latest leads with query (migration 0013).
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="judgments", db_index=False)
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="judgments")
    grade = models.SmallIntegerField()
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="judgments")
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.HUMAN)
    note = models.TextField(blank=True)
    seconds_spent = models.FloatField(null=True, blank=True, help_text="seconds the annotator spent on the pair")
    # The page's content_hash when it was judged: a different hash now means a stale label.
    page_hash = models.CharField(max_length=64, blank=True)
    # The evidence group of a multi-hop query this document belongs to ("" for none):
    # per-hop recall counts within each hop.
    hop = models.CharField(max_length=100, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["query", "page", "-id"], name="judgment_pair_latest"),
            # /metrics counts the judgments of the last minute at every scrape.
            models.Index(fields=["created_at"], name="judgment_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(source="imported") | Q(annotator__isnull=False),
                name="judgment_human_has_annotator",
            ),
        ]


class EvidenceSpan(AppendOnlyModel):
    """A span of a judged document that answers the query: characters [start, end) of the
    page's text as it was judged, with its grade (the judgment's, unless the span says
    otherwise). A judgment with no span grades the document as a whole.

    `text` is the span's text when it was marked: when the document changes, a span whose
    text still stands at the same place holds, one whose text moved follows it, and one
    whose text is gone makes the label stale (goldenset.stale_spans)."""

    judgment = models.ForeignKey(Judgment, on_delete=models.PROTECT, related_name="spans")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    grade = models.SmallIntegerField()
    text = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="evidence_span_not_empty"),
        ]


class Version(AppendOnlyModel):
    """An immutable, numbered snapshot of a golden set's resolved labels and slice metadata.

    `content_hash` covers every label and every snapshotted metadata value, so two
    versions with the same hash hold the same data, and an eval job pinning
    (number, hash) gets exactly the labels it was scored against.
    """

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    note = models.TextField(blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # Settings the numbers depend on, frozen with the labels.
    relevance_threshold = models.SmallIntegerField()
    k_first = models.PositiveIntegerField()
    k_final = models.PositiveIntegerField()
    query_slice_fields = models.JSONField(default=list)
    page_slice_fields = models.JSONField(default=list)
    span_min_overlap_chars = models.PositiveIntegerField(default=DEFAULT_SPAN_MIN_OVERLAP_CHARS, db_default=DEFAULT_SPAN_MIN_OVERLAP_CHARS)
    span_min_overlap_share = models.FloatField(default=DEFAULT_SPAN_MIN_OVERLAP_SHARE, db_default=DEFAULT_SPAN_MIN_OVERLAP_SHARE)
    # Counts, so lists and the API need not count a million rows.
    query_count = models.PositiveIntegerField()
    label_count = models.PositiveIntegerField()
    relevant_count = models.PositiveIntegerField()
    # Queries with no relevant page: left out of averages and shown as a coverage gap.
    queries_without_relevant = models.PositiveIntegerField()
    # What the version holds beyond grades (0 in versions made before these existed), so
    # that a reader of one with none of them need not look.
    hop_count = models.PositiveIntegerField(default=0, db_default=0, help_text="labels with a hop")
    span_count = models.PositiveIntegerField(default=0, db_default=0, help_text="evidence spans")
    duplicate_count = models.PositiveIntegerField(default=0, db_default=0, help_text="documents counted as another of their group")
    answer_count = models.PositiveIntegerField(default=0, db_default=0, help_text="queries with a reference answer")
    # The set's judgments when it was read (None before this was recorded). Judgments are
    # append-only, so the same count later means the same judgments: what lets a publish
    # request refuse "nothing changed" at once without resolving a million labels.
    judgment_count = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["golden_set", "number"]
        constraints = [
            # Eval jobs pin a version by (golden set, number).
            models.UniqueConstraint(fields=["golden_set", "number"], name="version_number_unique_in_golden_set"),
        ]

    def __str__(self) -> str:
        return f"{self.golden_set.slug} v{self.number}"

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]


class VersionQuery(AppendOnlyModel):
    """A query as it stood in a version, with its slice metadata."""

    # No index of its own: the unique constraint below starts with version, and a third
    # index on every row written made a publish slower (bench/publish.py).
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="version_queries", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    metadata = models.JSONField(default=dict)
    # The query's sampling weight as it stood (Query.inclusion_probability, stratum,
    # traffic_count): frozen with the labels, so a weighted score of a version never moves.
    inclusion_probability = models.FloatField(null=True, blank=True)
    stratum = models.CharField(max_length=200, blank=True, default="", db_default="")
    traffic_count = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "version queries"
        constraints = [
            models.UniqueConstraint(fields=["version", "query"], name="version_query_unique"),
        ]


class VersionPage(AppendOnlyModel):
    """A labelled page as it stood in a version: slice metadata, publish date, content hash."""

    # No index of its own: the unique constraint below starts with version, and a third
    # index on every row written made a publish slower (bench/publish.py).
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="version_pages", db_index=False)
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    metadata = models.JSONField(default=dict)
    published_at = models.DateTimeField(null=True)
    content_hash = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "page"], name="version_page_unique"),
        ]


class VersionLabel(AppendOnlyModel):
    """The resolved grade of one (query, page) pair in a version."""

    # No index of its own: the unique constraint below starts with version, and a third
    # index on every row written made a publish slower (bench/publish.py).
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="labels", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    grade = models.SmallIntegerField()
    # The pair's evidence group of a multi-hop query ("" for none), from the judgment that decided the grade.
    hop = models.CharField(max_length=100, blank=True, default="", db_default="")
    # Canonical order (natural order of query_id, then doc_id), fixed at publish time so
    # exports stream in index order and are byte-identical whatever the row ids are.
    position = models.PositiveIntegerField()

    class Meta:
        constraints = [
            # One grade per pair per version: the qrels of a version are a function.
            models.UniqueConstraint(fields=["version", "query", "page"], name="version_label_unique_pair"),
            # Exports read labels in this index's order.
            models.UniqueConstraint(fields=["version", "position"], name="version_label_unique_position"),
        ]


class VersionSpan(AppendOnlyModel):
    """An evidence span of a version's label: the spans of the judgment that decided the
    pair's grade, as they stood at publish. A label with no span grades the whole document."""

    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="spans", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    grade = models.SmallIntegerField()

    class Meta:
        indexes = [models.Index(fields=["version", "query", "page", "start"], name="version_span_of_label")]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="version_span_not_empty"),
        ]


class VersionDuplicate(AppendOnlyModel):
    """A document that a version counts as its duplicate group's first member: its labels are
    the group's, and a run's members of one group count once (SEMANTICS.md)."""

    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="duplicates", db_index=False)
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")
    group_page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "page"], name="version_duplicate_unique_page")]


class VersionAnswer(AppendOnlyModel):
    """A reference answer as a version froze it: hashed with the version (only when the
    version has answers, so versions without any hash as before), diffed and exported."""

    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="answers", db_index=False)
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    answer = models.TextField()
    aliases = models.JSONField(default=list)
    key_facts = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "query"], name="version_answer_unique_query")]


class PublishJob(JobRunnerFields):
    """A publish asked for from a page, the admin, the API or the command, run by a worker
    (goldenset.publishing). Publishing a large set takes longer than a request may
    (bench/publish.py measures it at a million labels): the request checks what it can at once, records the job and
    comes back; the worker runs version_publish, all or nothing, and records the version
    or why there is none. While it runs, its steps are reported through the cache
    (goldenset.publishing.publish_job_progress), as its own row is written only on commit.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="publish_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    note = models.TextField(blank=True)
    version = models.ForeignKey(Version, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    progress = models.JSONField(default=dict, blank=True, help_text="the last step reported: step, number, steps, done, total")
    error = models.TextField(blank=True, help_text="why no version was made")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["golden_set", "-created_at"], name="publish_job_recent")]
        constraints = [
            # Two publishes of one set at once make one version: the second request is
            # refused while the first is queued or running (goldenset.publishing).
            models.UniqueConstraint(
                fields=["golden_set"],
                condition=Q(status__in=["queued", "running"]),
                name="publish_job_one_active_per_set",
            ),
        ]

    def __str__(self) -> str:
        return f"publish of {self.golden_set_id} ({self.status})"
