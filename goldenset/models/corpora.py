"""Corpora and their documents (pages), the pages whose content changed, and chunkings:
the named ways of cutting a corpus's documents into chunks."""

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from goldenset.models.teams import Team
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
    # The team whose sets may judge the corpus's pages; its sets are the team's too.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="corpora")
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
