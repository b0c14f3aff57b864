"""How a golden set's runs are scored and when its alerts are raised."""

from django.db import models

from goldenset.models import GoldenSet


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
    # Completeness (evaluation.completeness). A run's scores on a version are marked
    # unreliable wherever they are shown when its Judged@k_final there is under the floor.
    completeness_depth = models.PositiveIntegerField(default=100, help_text="pool depth assumed for leave-one-run-out")
    judged_floor = models.FloatField(
        default=0.9, help_text="a run whose Judged@k_final is under this fraction has its scores marked unreliable"
    )
    # Coverage targets (labeling.coverage): a slice whose recall rests on fewer queries than
    # this is flagged, whatever its recall. The recall target of a slice is
    # alert_slice_floor and its Judged@k target judged_floor: one number each, so the
    # coverage page and the alerts never disagree about what "under target" means.
    # Noise-aware drops (evaluation.alerts.noise): a drop past alert_drop_points is sent only
    # when a one-sided paired test over the queries rejects "no change" at alert_alpha,
    # divided among the comparisons of one night (Bonferroni); alert_power is the power at
    # which each slice's minimum detectable drop is stated.
    alert_alpha = models.FloatField(default=0.05, help_text="significance of a drop alert, shared by the comparisons of one night")
    alert_power = models.FloatField(default=0.8, help_text="power at which each slice's minimum detectable drop is stated")
    min_queries_per_slice = models.PositiveIntegerField(
        default=30, help_text="a slice averaged over fewer queries than this is flagged on the coverage page"
    )
    alert_emails = models.JSONField(default=list, blank=True)
    webhook_url = models.URLField(blank=True)
    # The Standard Webhooks signing secret, "whsec_<base64 of 32 random bytes>"
    # (evaluation.alerts.signing). Stored as it is, not hashed: the worker must sign with
    # it, as every HMAC sender does. Not encrypted with a key derived from SECRET_KEY
    # either: whoever reads the database also reads the settings (and SECRET_KEY) on the
    # same hosts, the secret only lets one forge this set's alerts, and a rotated
    # SECRET_KEY would silently break every signature. What protects it is that it is
    # shown once (the settings page right after creation or rotation) and never again:
    # not in the admin, the API or any later page; "" until the webhook is first turned on.
    webhook_secret = models.CharField(max_length=100, blank=True, editable=False)
    webhook_secret_created_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Runs in a series (monitoring's nightly runs, an eval job's uploads). A run whose share
    # of failed queries is over failing_share measured the endpoint's outage, not its recall:
    # it raises "endpoint failing" instead of recall alerts and is never a night's baseline.
    failing_share = models.FloatField(
        default=0.05, help_text="a series run with more than this fraction of failed queries raises 'endpoint failing'"
    )
    # A new version re-scores the latest this-many runs of each series (the night and the
    # nights its alerts compare it with); older nights keep the scores they have.
    series_rescore_nights = models.PositiveIntegerField(
        default=8, help_text="latest runs of each series a new version re-scores (the alerts compare 1 + 7 nights)"
    )
    # Retention: a series run older than this many days keeps its scores, but its entries
    # are dropped unless it is the first night of its ISO week; 0 keeps every night whole.
    series_keep_days = models.PositiveIntegerField(
        default=90, help_text="after this many days a series keeps the entries of one run a week (scores are kept for all)"
    )
    # A run answering under this share of the set's queries is marked partial at upload and
    # kept out of coverage flags and alerts until a manager marks it complete. 0.5 because a
    # run that leaves most queries unanswered scores them 0 (trec_eval -c): every slice then
    # sits under its floor for a reason that is not retrieval, while a run answering half the
    # set or more is a real, if patchy, system whose weak slices are worth a flag.
    partial_share = models.FloatField(
        default=0.5, help_text="a run answering under this fraction of the set's queries is marked partial at upload"
    )

    class Meta:
        verbose_name_plural = "evaluation settings"

    def __str__(self) -> str:
        return f"evaluation settings of {self.golden_set}"
