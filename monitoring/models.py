"""Live retrieval endpoints, the nightly runs made by querying them, and canary probes.

An Endpoint is one stage of a system a team runs (its first stage, or its reranked stage,
i.e. what the prompt sees), reached over HTTP. On its run schedule a NightlyRun asks it
every query of the set's latest version and stores the answers as an ordinary run of the
endpoint's series (evaluation.Run), so scoring, slices, completeness, funnels and
re-scoring on every version apply as to any upload. On its probe schedule a ProbeRound
asks it each canary's query and records where the canary page came back.

Schedules are cron lines; one scheduled moment (a "slot") makes one NightlyRun and one
ProbeRound per endpoint, whatever the broker or the workers do: the slot is part of a
unique constraint, and the run is written in the same transaction that marks the night
done (monitoring.nightly).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models import Canary, Run, Series
from goldenset.models import Chunking, GoldenSet, Version
from lib.job_fields import JobRunnerFields

DEFAULT_RUN_SCHEDULE = "0 2 * * *"  # nightly, 02:00 UTC
DEFAULT_PROBE_SCHEDULE = "*/5 * * * *"  # every five minutes, as the seed's freshness probe
# Hourly, a quarter past: an exact (brute-force) search costs the engine a scan of the whole
# index per query, too much for the canaries' five minutes, while a refresh job that left
# shards behind should be named within the hour, not the next night. The quarter keeps it
# off the top of the hour, where nightly runs start.
DEFAULT_INDEX_PROBE_SCHEDULE = "15 * * * *"
# ANN recall@k under this opens an index alert. An HNSW or IVF index tuned as the engines'
# guides advise returns 0.95 to 0.99 of the exact neighbours; a drop under 0.95 is an index
# that lost something (stale shards, a bad merge), not the approximation's usual miss.
DEFAULT_INDEX_RECALL_FLOOR = 0.95


class Endpoint(models.Model):
    """The HTTP endpoint of one stage of a system, and how to read its answers.

    Header values may name environment variables (`Bearer ${SEARCH_TOKEN}`); they are
    resolved at send time in the worker and never stored or shown resolved.
    """

    class Stage(models.TextChoices):
        FIRST_STAGE = Run.Stage.FIRST_STAGE.value, Run.Stage.FIRST_STAGE.label
        RERANKED = Run.Stage.RERANKED.value, Run.Stage.RERANKED.label

    class Preset(models.TextChoices):
        GOLDSET = "goldset", "Goldset JSON contract"
        OPENSEARCH = "opensearch", "OpenSearch _search"
        ELASTICSEARCH = "elasticsearch", "Elasticsearch _search"
        SOLR = "solr", "Solr /select"
        VESPA = "vespa", "Vespa /search/"
        GENERIC = "generic", "generic HTTP"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100)
    system = models.CharField(max_length=200, help_text="the retrieval system; its first-stage and reranked endpoints form a funnel")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    series = models.OneToOneField(Series, on_delete=models.PROTECT, related_name="endpoint")
    preset = models.CharField(max_length=20, choices=Preset.choices)
    # The request: URL, method and templates holding {{query}}, {{query_id}} and {{k}}.
    # The chunking whose chunk ids the endpoint answers (null: documents, its ids doc ids):
    # its nights are runs of that chunking, scored at both levels.
    chunking = models.ForeignKey(Chunking, null=True, blank=True, on_delete=models.PROTECT, related_name="endpoints")
    url = models.CharField(max_length=2000)
    method = models.CharField(max_length=6, default="POST")
    body_template = models.TextField(blank=True)
    params_template = models.TextField(blank=True)
    headers = models.JSONField(default=list, blank=True, help_text="[[name, value], ...]; values may hold ${ENV_VAR}")
    # Where the answer holds its hits, and in a hit the doc id and score (dotted paths).
    hits_path = models.CharField(max_length=300, blank=True)
    doc_id_path = models.CharField(max_length=300, blank=True)
    score_path = models.CharField(max_length=300, blank=True)
    index_size_path = models.CharField(max_length=300, blank=True, help_text="in a search answer, the documents searched")
    count_url = models.CharField(max_length=2000, blank=True, help_text="a GET URL answering the index size")
    count_path = models.CharField(max_length=300, blank=True)
    # What a nightly run may ask of a production system.
    timeout_seconds = models.FloatField(default=10.0)
    retries = models.PositiveSmallIntegerField(default=2)
    max_in_flight = models.PositiveSmallIntegerField(default=8)
    max_per_second = models.FloatField(default=20.0)
    run_schedule = models.CharField(max_length=100, default=DEFAULT_RUN_SCHEDULE, help_text="cron line (UTC) of the nightly runs")
    probe_schedule = models.CharField(max_length=100, default=DEFAULT_PROBE_SCHEDULE, help_text="cron line (UTC) of the canary probes")
    enabled = models.BooleanField(default=True, help_text="off: no scheduled runs or probes (run now still works)")
    # Exact mode (the index probe, monitoring.index_probes): the request that asks the same
    # engine for the exact nearest neighbours (a brute-force script_score, or a flag of the
    # team's service), beside the approximate one above. Empty: no exact mode, no index probe.
    # An empty one of the two takes the approximate request's (a flag in the parameters keeps
    # the body).
    exact_body_template = models.TextField(blank=True, help_text="JSON body of the exact (brute-force) request")
    exact_params_template = models.TextField(blank=True, help_text="URL query string of the exact request")
    shard_path = models.CharField(max_length=300, blank=True, help_text="in a hit, the shard it came from, e.g. _shard")
    index_probe_schedule = models.CharField(
        max_length=100, default=DEFAULT_INDEX_PROBE_SCHEDULE, help_text="cron line (UTC) of the index probes (exact mode only)"
    )
    index_recall_floor = models.FloatField(
        default=DEFAULT_INDEX_RECALL_FLOOR, help_text="ANN recall@k (a fraction) under which an index alert is raised"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "system", "stage", "name"]
        constraints = [
            # Commands, pages and the API name an endpoint by its name within the set.
            models.UniqueConstraint(fields=["golden_set", "name"], name="endpoint_name_unique_in_golden_set"),
        ]

    def __str__(self) -> str:
        return self.name


class NightlyRun(JobRunnerFields):
    """One scheduled (or "run now") querying of an endpoint, and the run it made."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule"
        MANUAL = "manual"

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="nightly_runs")
    slot = models.DateTimeField(help_text="the scheduled moment (or when run now was asked)")
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.SCHEDULE)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="nightly")
    version = models.ForeignKey(Version, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    queries_total = models.PositiveIntegerField(default=0)
    queries_done = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True, help_text="time spent querying the endpoint")
    latency_p50_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-slot"]
        constraints = [
            # One scheduled night makes one run: the tick and redelivered tasks meet here.
            models.UniqueConstraint(fields=["endpoint", "slot"], name="nightly_run_unique_slot"),
        ]
        indexes = [models.Index(fields=["status"], name="nightly_run_status")]

    def __str__(self) -> str:
        return f"{self.endpoint} at {self.slot:%Y-%m-%d %H:%M}"


class ProbeRound(models.Model):
    """One probe of every canary of the set on one first-stage endpoint, at one slot."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="probe_rounds")
    slot = models.DateTimeField()
    trigger = models.CharField(max_length=10, choices=NightlyRun.Trigger.choices, default=NightlyRun.Trigger.SCHEDULE)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    canaries = models.PositiveIntegerField(default=0)
    missed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-slot"]
        constraints = [
            # One probe per endpoint and slot, however many ticks or workers see the slot.
            models.UniqueConstraint(fields=["endpoint", "slot"], name="probe_round_unique_slot"),
        ]

    def __str__(self) -> str:
        return f"probe of {self.endpoint} at {self.slot:%Y-%m-%d %H:%M}"


class Probe(models.Model):
    """Where one canary page came back for its query in one probe round."""

    round = models.ForeignKey(ProbeRound, on_delete=models.CASCADE, related_name="probes")
    canary = models.ForeignKey(Canary, on_delete=models.CASCADE, related_name="probes")
    rank = models.PositiveIntegerField(null=True, blank=True, help_text="1-based rank of the page, null when not returned")
    k = models.PositiveIntegerField(help_text="depth asked (the version's k_first): found means rank <= k")
    latency_ms = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="why the endpoint gave no answer (then found is false and rank null)")

    class Meta:
        ordering = ["round", "canary"]
        constraints = [
            models.UniqueConstraint(fields=["round", "canary"], name="probe_unique_canary_in_round"),
            models.CheckConstraint(condition=Q(rank=None) | Q(rank__gte=1), name="probe_rank_is_one_based"),
        ]

    @property
    def found(self) -> bool:
        return self.rank is not None and self.rank <= self.k

    def __str__(self) -> str:
        return f"{self.canary}: {'rank ' + str(self.rank) if self.found else 'missed'}"


class IndexProbe(models.Model):
    """One index probe round of an endpoint: its approximate and exact answers for a sample of
    the version's queries, compared (monitoring.index_probes.services; SEMANTICS.md, "ANN
    recall@k"). `ann_recall` and the shares in `per_shard` are fractions; `per_shard` is
    {shard: {"exact": neighbours of the exact top k on it, "returned": of those, the ones
    the approximate top k held, "share": returned / exact}}, empty when the answers name no
    shard."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="index_probes")
    slot = models.DateTimeField()
    trigger = models.CharField(max_length=10, choices=NightlyRun.Trigger.choices, default=NightlyRun.Trigger.SCHEDULE)
    version = models.ForeignKey(Version, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    k = models.PositiveIntegerField(null=True, blank=True, help_text="depth compared: the endpoint's depth on the version")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    queries_asked = models.PositiveIntegerField(default=0)
    queries_compared = models.PositiveIntegerField(default=0, help_text="asked and answered both ways, the exact answer not empty")
    ann_recall = models.FloatField(null=True, blank=True, help_text="mean over the queries compared of |approx ∩ exact| / |exact|")
    per_shard = models.JSONField(default=dict, blank=True)
    errors = models.PositiveIntegerField(default=0, help_text="queries whose approximate or exact request failed")
    error = models.TextField(blank=True, help_text="the first error, or why nothing was compared")

    class Meta:
        ordering = ["-slot"]
        constraints = [
            # One index probe per endpoint and slot, however many ticks or workers see the slot.
            models.UniqueConstraint(fields=["endpoint", "slot"], name="index_probe_unique_slot"),
        ]

    def __str__(self) -> str:
        return f"index probe of {self.endpoint} at {self.slot:%Y-%m-%d %H:%M}"
