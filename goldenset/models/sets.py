"""Golden sets, their members and queries, and the queries' reference answers."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.models.corpora import (
    DEFAULT_SPAN_MIN_OVERLAP_CHARS,
    DEFAULT_SPAN_MIN_OVERLAP_SHARE,
    Corpus,
    default_grade_scale,
    validate_id,
)
from goldenset.models.teams import Role, Team


class GoldenSet(models.Model):
    """One corpus, a set of queries, a grade scale and the settings every score depends on."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="golden_sets")
    # The corpus's team (goldenset.services checks it): whoever holds a role in the team
    # holds it here, and nobody outside it sees the set, its runs, endpoints or alerts.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="golden_sets")
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

    def latest_version(self) -> "Version | None":  # noqa: F821 - goldenset.models.history's, which imports this module
        return self.versions.order_by("-number").first()


class Membership(models.Model):
    """A person's role in one golden set; every page and endpoint checks it."""

    Role = Role

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
    # A query drawn from a query log (traffic.sampling): the probability the draw's design gave
    # it to be drawn, its stratum, and its traffic (events in the log). Null for a query added
    # by hand, whose weight is unknown: weighted estimates count it apart, never weight it.
    inclusion_probability = models.FloatField(null=True, blank=True, help_text="the chance the sampling design drew it")
    stratum = models.CharField(max_length=200, blank=True, default="", db_default="")
    traffic_count = models.PositiveBigIntegerField(null=True, blank=True, help_text="its events in the query log it was drawn from")
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
