"""Query logs and the draws that make a golden set stand for the traffic.

A QueryLog is a team's log as imported (traffic.logs): its queries normalised and merged,
each LoggedQuery with its count of events and its slice fields. A QueryDraw is one recorded,
repeatable sample of a log's queries into a golden set (traffic.sampling) by a design with a
seed; each DrawnQuery keeps the inclusion probability and stratum the design gave it, which
are also written on the golden set's Query (goldenset), where versions freeze them.
"""

from django.conf import settings
from django.db import models

from goldenset.models import GoldenSet, Query


class QueryLog(models.Model):
    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="query_logs")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=500, blank=True, help_text="the file it was imported from")
    lines_read = models.PositiveBigIntegerField(default=0)
    event_count = models.PositiveBigIntegerField(default=0, help_text="query events: the sum of the counts")
    query_count = models.PositiveIntegerField(default=0, help_text="distinct queries after normalising and merging")
    # The slice fields the log's lines carry (language, product area...), in first-seen order.
    fields = models.JSONField(default=list, blank=True)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "name"]
        constraints = [models.UniqueConstraint(fields=["golden_set", "name"], name="querylog_unique_name_in_set")]

    def __str__(self) -> str:
        return f"query log {self.name} of {self.golden_set}"


class LoggedQuery(models.Model):
    """One distinct query of a log: near-identical forms merged under `normalized`."""

    log = models.ForeignKey(QueryLog, on_delete=models.CASCADE, related_name="queries", db_index=False)
    normalized = models.TextField(help_text="the merge key: Unicode-normalised, case-folded, whitespace collapsed")
    text = models.TextField(help_text="its most frequent original form")
    count = models.PositiveBigIntegerField()
    # Slice field values (the most frequent value of each field among its events).
    fields = models.JSONField(default=dict, blank=True)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["log", "normalized"], name="loggedquery_unique_normalized")]
        # Head, torso and tail are cut by traffic rank.
        indexes = [models.Index(fields=["log", "-count"], name="loggedquery_log_count")]

    def __str__(self) -> str:
        return self.text


class QueryDraw(models.Model):
    """One sample of a log's queries into its golden set: design, size, strata, seed."""

    class Design(models.TextChoices):
        SRS = "srs", "simple random"
        STRATIFIED = "stratified", "stratified"
        PPS = "pps", "probability proportional to size"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="query_draws")
    log = models.ForeignKey(QueryLog, on_delete=models.PROTECT, related_name="draws")
    design = models.CharField(max_length=20, choices=Design.choices)
    strata_field = models.CharField(max_length=100, blank=True, help_text="a slice field, or 'traffic' for head/torso/tail")
    size = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    # A top-up: the target it drew towards ({"stratum": ..., "queries": n} or {"detectable_points": p}).
    target = models.JSONField(default=dict, blank=True)
    # Per stratum: {"stratum": {"population": N_h, "drawn": n_h, "events": E_h}}.
    strata = models.JSONField(default=dict, blank=True)
    added_count = models.PositiveIntegerField(default=0, help_text="queries added to the set")
    marked_count = models.PositiveIntegerField(default=0, help_text="queries the set held already, marked drawn")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "-created_at"]

    def __str__(self) -> str:
        return f"{self.get_design_display()} draw of {self.size} from {self.log.name}"


class DrawnQuery(models.Model):
    draw = models.ForeignKey(QueryDraw, on_delete=models.CASCADE, related_name="drawn")
    logged_query = models.ForeignKey(LoggedQuery, on_delete=models.PROTECT, related_name="+")
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    inclusion_probability = models.FloatField()
    stratum = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["draw", "logged_query"], name="drawnquery_unique_in_draw")]

    def __str__(self) -> str:
        return f"{self.query} drawn with p={self.inclusion_probability:.4g}"
