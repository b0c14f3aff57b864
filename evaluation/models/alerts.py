"""Alerts, the incidents that group them and the messages that deliver them, slice mutes,
canaries and the webhook's delivery log."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models.runs import Run
from goldenset.models import GoldenSet, Page, Query, Version


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
