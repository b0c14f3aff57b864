"""The golden set's data: corpora and pages, golden sets and queries, judgments, versions.

Raw judgments are append-only and versions are immutable; both rules are enforced
below the app (database triggers, see migration 0002) as well as in it (querysets
that refuse bulk changes), because a number people act on must not drift.
"""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from lib.errors import GoldsetError
from lib.ids import id_problem

# The TREC convention most teams use; a set imported from a file takes the file's grades.
DEFAULT_GRADE_SCALE = [
    {"value": 0, "label": "not relevant"},
    {"value": 1, "label": "related"},
    {"value": 2, "label": "highly relevant"},
    {"value": 3, "label": "perfectly relevant"},
]


# A chunk carries a span's grade when it holds 100 characters of it or half of it, whichever
# is less: a short answer ("1953") counts in the chunk that holds half of it, a long passage
# in any chunk that holds a paragraph's worth of it.
DEFAULT_SPAN_MIN_OVERLAP_CHARS = 100
DEFAULT_SPAN_MIN_OVERLAP_SHARE = 0.5
# Near duplicates: copies with a changed header or footer are over 0.9; two pages of one
# template with different content are well under it.
DEFAULT_DUPLICATE_THRESHOLD = 0.9


def default_grade_scale() -> list[dict]:
    return [dict(grade) for grade in DEFAULT_GRADE_SCALE]


def validate_id(value: str) -> None:
    """The admin's forms check ids as every import does (lib.ids.id_problem)."""
    problem = id_problem(value, "the id")
    if problem:
        raise ValidationError(problem)


class Corpus(models.Model):
    """The pages that can be judged. Several golden sets may share one corpus."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Documents whose word shingles have an estimated Jaccard similarity at or above this
    # form a duplicate group (goldenset.duplicates); 1.0 groups exact duplicates only.
    duplicate_threshold = models.FloatField(
        default=DEFAULT_DUPLICATE_THRESHOLD,
        db_default=DEFAULT_DUPLICATE_THRESHOLD,
        help_text="near-duplicate threshold (0-1] on the Jaccard of word shingles; 1.0 = exact duplicates only",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "corpora"
        ordering = ["slug"]
        constraints = [
            # MinHashLSH takes a threshold in [0, 1]; 0 would make the whole corpus one group.
            models.CheckConstraint(
                condition=Q(duplicate_threshold__gt=0) & Q(duplicate_threshold__lte=1), name="corpus_duplicate_threshold_in_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Page(models.Model):
    """A document or chunk. `doc_id` is stable and opaque; `content_hash` flags stale labels."""

    # No index of its own: page_doc_id_unique_in_corpus leads with corpus (migration 0013).
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="pages", db_index=False)
    doc_id = models.CharField(max_length=255, validators=[validate_id])
    title = models.TextField(blank=True)
    # May be HTML: it is sanitised when shown, never when stored.
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    # False for id-only pages made by `import_qrels --create-missing`.
    has_text = models.BooleanField(default=True)
    # Slice metadata (language, doc type, ...), free-form; the golden set names which keys slice.
    metadata = models.JSONField(default=dict, blank=True)
    # When the page itself was first published and last changed (from the source, if known);
    # age slices are computed from published_at relative to a version's publish time.
    published_at = models.DateTimeField(null=True, blank=True)
    modified_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    # Exact and near duplicates form a group (goldenset.duplicates): every member but the
    # group's first (natural order of doc_id) points at that first member, which stands for
    # the group in judging and in recall. Null for a document with no duplicate, and for
    # the first member itself.
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Imports and exports address pages by doc_id: it must name one page per corpus.
            models.UniqueConstraint(fields=["corpus", "doc_id"], name="page_doc_id_unique_in_corpus"),
        ]

    def __str__(self) -> str:
        return self.doc_id


class PageChange(models.Model):
    """A page whose content_hash changed after it was written.

    Kept by a database trigger on goldenset_page (migration 0012), whatever the path of
    the change, so that stale labels (a judgment's page_hash against its page's hash now)
    are looked for among the judgments of changed pages only, rather than by comparing
    every judgment of a set with its page, which grows with the set (bench/growth.py times
    it), while pages rarely change."""

    page = models.OneToOneField(Page, on_delete=models.CASCADE, primary_key=True, related_name="+")


class Chunking(models.Model):
    """One named way of cutting a corpus's documents (its pages) into chunks, what an index
    stores and a run returns (`fixed-400`, `semantic-v2`). A corpus may have several.

    The chunking named DOCUMENTS is implicit and has no rows: each document is one chunk
    whose id is its doc_id, covering its whole text. A run or endpoint that names no
    chunking is on it, as every run made before chunkings existed."""

    DOCUMENTS = "documents"

    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="chunkings")
    name = models.CharField(max_length=100, validators=[validate_id])
    description = models.TextField(blank=True)
    # Counts, so lists need not count two million rows.
    chunk_count = models.PositiveIntegerField(default=0)
    document_count = models.PositiveIntegerField(default=0, help_text="documents with at least one chunk")
    created_at = models.DateTimeField(auto_now_add=True)
    # When its chunks were last written (an import, a replace): what scoring keeps per
    # process is keyed by it, rather than by counting two million rows at each use.
    written_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["corpus", "name"]
        constraints = [
            # Runs, endpoints and exports name a chunking by (corpus, name).
            models.UniqueConstraint(fields=["corpus", "name"], name="chunking_name_unique_in_corpus"),
            models.CheckConstraint(condition=~Q(name="documents"), name="chunking_documents_is_implicit"),
        ]

    def __str__(self) -> str:
        return f"{self.corpus.slug}/{self.name}"


class Chunk(models.Model):
    """A chunk of a chunking: its own id, its document and the characters [start, end) of
    the document's text it holds. Chunks of one chunking may overlap (a sliding window)."""

    # No index of its own: chunk_id_unique_in_chunking leads with chunking.
    chunking = models.ForeignKey(Chunking, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    chunk_id = models.CharField(max_length=255, validators=[validate_id])
    # No index of its own: chunk_of_document leads with page.
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="chunks", db_index=False)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        indexes = [
            # A document's chunks in text order (the judging screen, stale spans).
            models.Index(fields=["page", "chunking", "start"], name="chunk_of_document"),
        ]
        constraints = [
            # Runs address chunks by chunk_id: one chunk per id in a chunking.
            models.UniqueConstraint(fields=["chunking", "chunk_id"], name="chunk_id_unique_in_chunking"),
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="chunk_not_empty"),
        ]

    def __str__(self) -> str:
        return self.chunk_id


class GoldenSet(models.Model):
    """One corpus, a set of queries, a grade scale and the settings every score depends on."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="golden_sets")
    # [{"value": int, "label": str}, ...] in display order.
    grade_scale = models.JSONField(default=default_grade_scale)
    # Binary metrics (recall, MRR, hit rate) count a page relevant when grade >= this.
    relevance_threshold = models.SmallIntegerField(default=1)
    k_first = models.PositiveIntegerField(default=100, help_text="cut-off of the first stage")
    k_final = models.PositiveIntegerField(default=8, help_text="pages that reach the prompt")
    guidelines = models.TextField(blank=True)
    # Metadata keys that define slices: of queries (restrict queries) and of pages
    # (restrict which relevant pages are counted).
    query_slice_fields = models.JSONField(default=list, blank=True)
    page_slice_fields = models.JSONField(default=list, blank=True)
    # How evidence spans project onto a chunking (SEMANTICS.md, "Chunk level"): a chunk
    # carries a span's grade when it overlaps the span by at least this many characters,
    # or by at least this share of the span's length, whichever is reached first.
    span_min_overlap_chars = models.PositiveIntegerField(
        default=DEFAULT_SPAN_MIN_OVERLAP_CHARS, help_text="characters of a span a chunk must hold to carry its grade"
    )
    span_min_overlap_share = models.FloatField(
        default=DEFAULT_SPAN_MIN_OVERLAP_SHARE, help_text="or this share (0-1) of the span's length, whichever is less"
    )
    # What the prompt costs (the seed's maths, answers' depth-and-cost sweep): the traffic a
    # month, the price of a million input tokens, the tokens of a page in the prompt, and the
    # context's budget in tokens (None: k_final pages, whatever their length).
    monthly_queries = models.PositiveBigIntegerField(default=1_000_000, db_default=1_000_000, help_text="queries a month")
    price_per_million_input = models.DecimalField(
        max_digits=12, decimal_places=4, default=Decimal(3), db_default=Decimal(3), help_text="dollars per million input tokens"
    )
    tokens_per_page = models.PositiveIntegerField(default=400, db_default=400, help_text="tokens a page or chunk takes in the prompt")
    context_token_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="tokens of context a prompt may hold (empty: k_final pages)"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=Q(k_final__gt=0), name="golden_set_k_final_positive"),
            # recall@k_first is the first stage, recall@k_final what the prompt sees after it.
            models.CheckConstraint(condition=Q(k_first__gte=models.F("k_final")), name="golden_set_k_first_ge_k_final"),
        ]

    def __str__(self) -> str:
        return self.name

    def grade_values(self) -> list[int]:
        return [grade["value"] for grade in self.grade_scale]

    def grade_label(self, value: int) -> str:
        for grade in self.grade_scale:
            if grade["value"] == value:
                return grade["label"]
        return f"grade {value}"

    def latest_version(self) -> "Version | None":
        return self.versions.order_by("-number").first()


class Membership(models.Model):
    """A person's role in one golden set; every page and endpoint checks it."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator"
        ADJUDICATOR = "adjudicator"
        MANAGER = "manager"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # access checks look a role up by (user, set, role): one row each.
            models.UniqueConstraint(fields=["user", "golden_set", "role"], name="membership_unique_role"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.golden_set}"


class Query(models.Model):
    """A question of the golden set. Retired queries stay for history but leave new versions."""

    # No index of its own: query_id_unique_in_golden_set leads with golden_set (migration 0013).
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="queries", db_index=False)
    query_id = models.CharField(max_length=255, validators=[validate_id])
    text = models.TextField(blank=True)
    # False for id-only queries made by `import_qrels --create-missing`.
    has_text = models.BooleanField(default=True)
    metadata = models.JSONField(default=dict, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "queries"
        constraints = [
            # Runs and qrels address queries by query_id: one query per id in a set.
            models.UniqueConstraint(fields=["golden_set", "query_id"], name="query_id_unique_in_golden_set"),
        ]

    def __str__(self) -> str:
        return self.query_id


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


class ReferenceAnswer(models.Model):
    """A query's reference answer, what a generated answer is graded against (answers'
    oracle experiment): the answer, other ways of saying it (`aliases`, each counted as
    right by exact match and token F1) and the key facts a full answer holds. Edited by
    managers; a version freezes it (VersionAnswer)."""

    query = models.OneToOneField(Query, on_delete=models.CASCADE, related_name="reference_answer")
    answer = models.TextField()
    aliases = models.JSONField(default=list, blank=True)
    key_facts = models.JSONField(default=list, blank=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"answer to {self.query_id}"


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


class PublishJob(models.Model):
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
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who holds it while it runs: the worker's node name and the instance id of its start
    # (lib.background_jobs.Holder; "" in-process). The sweeper sends it again when that
    # worker start no longer answers, a new start under the same name included.
    worker = models.CharField(max_length=255, blank=True)
    worker_start = models.CharField(max_length=32, blank=True)

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

    @property
    def active(self) -> bool:
        return self.status in self.ACTIVE


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
