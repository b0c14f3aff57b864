"""Output serializers that several API classes share. Input serializers, and outputs used
by one class only, live inside that class (api/views/)."""

from django.http import QueryDict
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.models import Run
from monitoring.models import Endpoint, NightlyRun

# DRF's own query parameter (the browsable API's ?format=api / ?format=json links).
FORMAT_OVERRIDE = "format"


def validated(serializer_class: type[serializers.Serializer], data, *, only_known: bool = False) -> dict:
    """`data` (a body or query parameters) checked by `serializer_class`; a ValidationError
    (400, every problem named by its field) otherwise. With `only_known`, a query parameter
    the serializer does not name is refused too (for an operation that takes no other:
    a mistyped `?limt=` should not silently give the default)."""
    serializer = serializer_class(data=data)
    valid = serializer.is_valid()
    errors = dict(serializer.errors) if not valid else {}
    if isinstance(data, QueryDict) and only_known:
        for name in sorted(set(data) - set(serializer.fields) - {FORMAT_OVERRIDE}):
            errors[name[:100]] = [f"is not a parameter of this operation (it takes: {', '.join(serializer.fields) or 'none'})"]
    if isinstance(data, QueryDict):
        # DRF takes an empty query parameter for an absent one; the schema says a value
        # may not be empty (minLength 1), so `?system=` is refused, not ignored.
        for name, field in serializer.fields.items():
            if "" in data.getlist(name) and not getattr(field, "allow_blank", False) and name not in errors:
                errors[name] = ["may not be empty; leave the parameter out instead"]
    if errors:
        raise serializers.ValidationError(errors)
    return serializer.validated_data


class GradeSerializer(serializers.Serializer):
    value = serializers.IntegerField()
    label = serializers.CharField()


class GoldenSetOutputSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField()
    corpus = serializers.CharField(source="corpus.slug")
    grade_scale = GradeSerializer(many=True)
    relevance_threshold = serializers.IntegerField(help_text="binary metrics count a page relevant from this grade")
    k_first = serializers.IntegerField(help_text="cut-off of the first stage (recall@k_first)")
    k_final = serializers.IntegerField(help_text="pages that reach the prompt (recall@k_final)")
    query_slice_fields = serializers.ListField(child=serializers.CharField())
    page_slice_fields = serializers.ListField(child=serializers.CharField())
    query_count = serializers.IntegerField(source="active_queries", help_text="queries not retired")
    latest_version = serializers.IntegerField(source="latest_version_number", allow_null=True)


class VersionOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField(help_text="sha256 of every label and snapshotted slice value; the qrels' ETag")
    note = serializers.CharField()
    author = serializers.CharField(source="author.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    relevance_threshold = serializers.IntegerField()
    k_first = serializers.IntegerField()
    k_final = serializers.IntegerField()
    query_slice_fields = serializers.ListField(child=serializers.CharField())
    page_slice_fields = serializers.ListField(child=serializers.CharField())
    query_count = serializers.IntegerField()
    label_count = serializers.IntegerField()
    relevant_count = serializers.IntegerField(help_text="labels with a grade at or above relevance_threshold")
    queries_without_relevant = serializers.IntegerField(help_text="left out of averages and shown as a coverage gap")


class PublishProgressSerializer(serializers.Serializer):
    step = serializers.CharField(help_text="the step running or last run, e.g. `writing labels`")
    number = serializers.IntegerField(allow_null=True, help_text="the step's number, from 1")
    steps = serializers.IntegerField(help_text="how many steps a publish has")
    done = serializers.IntegerField(help_text="rows of the step done so far")
    total = serializers.IntegerField(allow_null=True, help_text="rows of the step in all; null when not known ahead")


class PublishJobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    note = serializers.CharField()
    progress = PublishProgressSerializer(allow_null=True, help_text="how far the job got; null before its first step")
    version = VersionOutputSerializer(allow_null=True, help_text="the version it made, once done")
    error = serializers.CharField(help_text="why no version was made, once failed; empty otherwise")
    url = serializers.CharField(help_text="this job's address: GET it until status is done or failed")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    source_name = serializers.CharField(help_text="the uploaded file's name")
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    query_count = serializers.IntegerField()
    entry_count = serializers.IntegerField()
    depth_cap = serializers.IntegerField(help_text="entries kept per query")
    dropped_by_depth = serializers.IntegerField(help_text="entries past the depth cap, not kept")
    external_doc_count = serializers.IntegerField(help_text="distinct doc ids outside the corpus: they count as unjudged")
    extra_column_lines = serializers.IntegerField(help_text="lines with text after the tag column, ignored")
    series = serializers.CharField(
        source="series.name", allow_null=True, default=None, help_text="the series the run is a night of, or null"
    )
    measured_at = serializers.DateTimeField(allow_null=True, help_text="when the system was queried (a series run's night), else null")
    chunking = serializers.CharField(
        source="chunking.name",
        allow_null=True,
        default=None,
        help_text="the chunking whose chunk ids the run returns, or null for documents (doc ids)",
    )
    failed_query_count = serializers.IntegerField(help_text="queries the endpoint did not answer: they count as unanswered")
    index_size = serializers.IntegerField(allow_null=True, help_text="documents the endpoint reported searching, if it did")
    entries_dropped = serializers.SerializerMethodField(
        help_text="retention dropped the entries of this old night: its scores stay, it is not re-scored",
    )

    archived = serializers.BooleanField(
        help_text="archived: kept with its scores, left out of leaderboards, alerts, coverage flags, pools and default lists"
    )
    archived_at = serializers.DateTimeField(allow_null=True, help_text="when it was archived, else null")
    archived_by = serializers.CharField(source="archived_by.username", allow_null=True, default=None, help_text="who archived it")
    expected_query_count = serializers.IntegerField(
        allow_null=True,
        help_text="the set's queries when it was uploaded (its latest version's, else its live ones); null for an endpoint's night",
    )
    answered_query_count = serializers.IntegerField(allow_null=True, help_text="of those, the queries the run answers")
    partial = serializers.BooleanField(help_text="answered under the set's partial_share of its queries at upload")
    completed_at = serializers.DateTimeField(
        allow_null=True,
        help_text="when a manager marked the partial run complete (it then counts for coverage flags and alerts), else null",
    )
    counted = serializers.SerializerMethodField(
        help_text="false when the run raises no alert and no coverage flag: archived, or partial and not marked complete",
    )
    partial_note = serializers.CharField(
        help_text='a partial run\'s plain sentence ("answers 8 of 300 queries (2.7%): marked partial: ..."), else ""'
    )

    def get_entries_dropped(self, run: Run) -> bool:
        return run.entries_dropped_at is not None

    def get_counted(self, run: Run) -> bool:
        return not run.held_back


class RunUploadJobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    source_name = serializers.CharField(help_text="the uploaded file's name")
    size = serializers.IntegerField(help_text="bytes uploaded")
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    name = serializers.CharField(help_text="the run's name as asked; empty means 'system stage'")
    chunking = serializers.CharField(allow_null=True, help_text="the chunking the run's ids are chunks of, or null for documents")
    run = RunOutputSerializer(allow_null=True, help_text="the run stored, once done")
    error = serializers.CharField(help_text="why no run was stored, once failed; empty otherwise")
    error_code = serializers.CharField(
        allow_null=True,
        help_text="the error code the upload would have been answered with in the request (invalid, too_large, conflict, internal)",
    )
    error_status = serializers.IntegerField(
        allow_null=True, help_text="the HTTP status it would have been answered with (422, 413, 409, 500)"
    )
    field = serializers.CharField(allow_null=True, help_text="the field at fault (file for a bad line), or null")
    problems = serializers.ListField(child=serializers.CharField(), help_text="every fault found, each naming its line")
    url = serializers.CharField(help_text="this job's address: GET it until status is done or failed")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunFilterSerializer(serializers.Serializer):
    """?system=&stage=&archived= on lists of runs and of evaluations."""

    # Taken as sent (no trimming): a system is matched exactly, and "\x0b" is not "".
    system = serializers.CharField(required=False, max_length=200, trim_whitespace=False, help_text="only runs of this system")
    stage = serializers.ChoiceField(choices=Run.Stage.choices, required=False, help_text="only runs of this stage")
    archived = serializers.ChoiceField(
        choices=[("false", "false"), ("true", "true"), ("all", "all")],
        required=False,
        default="false",
        help_text="false (the default): runs that are not archived; true: archived runs only; all: both",
    )


def archived_filter(value: str, run_path: str = "") -> dict:
    """The ORM filter of RunFilterSerializer's `archived` ("false", "true" or "all")."""
    if value == "all":
        return {}
    return {f"{run_path}archived_at__isnull": value == "false"}


class SliceScoresSerializer(serializers.Serializer):
    slice = serializers.CharField(help_text='"query:FIELD=VALUE" or "page:FIELD=VALUE"')
    queries_averaged = serializers.IntegerField()
    no_relevant_count = serializers.IntegerField()
    scores = serializers.DictField(child=serializers.FloatField(), help_text="metric name -> fraction in [0, 1]")


class WeightedEstimateSerializer(serializers.Serializer):
    """A traffic-weighted estimate (evaluation.weighted; lib.survey): fractions in [0, 1]."""

    estimate = serializers.FloatField(help_text="Hajek's estimate of the metric over the traffic's queries with a relevant page")
    low = serializers.FloatField(help_text="lower end of its 95% design-based interval")
    high = serializers.FloatField(help_text="upper end of its 95% design-based interval")
    queries = serializers.IntegerField(help_text="drawn queries with a relevant page it rests on")


class CompletenessSerializer(serializers.Serializer):
    slice = serializers.CharField(help_text='"" for all queries, else "query:FIELD=VALUE"')
    queries = serializers.IntegerField(help_text="queries averaged: those with a relevant page")
    judged_at_k_final = serializers.FloatField(help_text="fraction of the top k_final with a label")
    judged_at_k_first = serializers.FloatField(help_text="fraction of the top k_first with a label")
    loro_depth = serializers.IntegerField(allow_null=True, help_text="pool depth assumed for leave-one-run-out")
    loro_other_runs = serializers.IntegerField(allow_null=True, help_text="runs of other systems in the pool")
    loro_recall_k_first = serializers.FloatField(allow_null=True, help_text="recall@k_first without the unique pages")
    loro_ndcg_10 = serializers.FloatField(allow_null=True, help_text="ndcg@10 without the unique pages")
    loro_recall_change_points = serializers.FloatField(allow_null=True, help_text="reduced minus full recall@k_first, points")
    loro_ndcg_change_points = serializers.FloatField(allow_null=True, help_text="reduced minus full ndcg@10, points")
    unique_relevant_count = serializers.IntegerField(allow_null=True, help_text="relevant labels only this system pooled")
    loro_emptied_queries = serializers.IntegerField(allow_null=True)


class EvaluationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    archived = serializers.BooleanField(help_text="archived: left out of the default lists")
    partial = serializers.BooleanField(help_text="answered under the set's partial_share of its queries at upload")


class EvaluationOutputSerializer(serializers.Serializer):
    """One run scored against one version (api.views.evaluations.evaluation_data)."""

    run = EvaluationRunSerializer()
    version = serializers.IntegerField(help_text="the version number the figures belong to")
    content_hash = serializers.CharField(help_text="of that version")
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])
    error = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    metrics = serializers.ListField(child=serializers.CharField(), help_text="ranx metric names, in display order")
    queries_in_version = serializers.IntegerField()
    queries_averaged = serializers.IntegerField(help_text="queries the averages are over")
    unanswered_count = serializers.IntegerField(help_text="queries the run did not answer, scored 0 (trec_eval -c)")
    no_relevant_count = serializers.IntegerField(help_text="queries with no relevant page, left out of the averages")
    scores = serializers.DictField(child=serializers.FloatField(), help_text="all queries: metric name -> fraction in [0, 1]")
    slices = SliceScoresSerializer(many=True)
    completeness = CompletenessSerializer(many=True)
    judged_floor = serializers.FloatField(help_text="the set's floor for Judged@k_final (fraction)")
    unreliable = serializers.BooleanField(help_text="Judged@k_final of all queries is under judged_floor")
    weighted = serializers.DictField(
        child=WeightedEstimateSerializer(),
        allow_null=True,
        help_text="metric name -> the traffic-weighted estimate; null unless the version's queries were drawn from a query log",
    )
    weighted_strata = serializers.DictField(
        child=serializers.DictField(child=WeightedEstimateSerializer()),
        allow_null=True,
        help_text="stratum -> metric name -> the traffic-weighted estimate within it; null as weighted",
    )
    unweighted_queries = serializers.IntegerField(
        allow_null=True, help_text="averaged queries added by hand (weight unknown): in scores, not in weighted; null as weighted"
    )


# --- monitoring: series, their nights, endpoints ------------------------------------------


class NightSerializer(serializers.Serializer):
    """One run of a series with its figures on the newest version it was scored on
    (monitoring.overview.selectors.Night). Scores are fractions in [0, 1], at that version's k."""

    run_id = serializers.IntegerField(source="run.id")
    name = serializers.CharField(source="run.name")
    measured_at = serializers.DateTimeField(help_text="the night the run measures")
    version = serializers.IntegerField(
        source="version_number",
        allow_null=True,
        help_text="the version the figures were scored on; null until scored",
    )
    k_first = serializers.IntegerField(allow_null=True, help_text="that version's k_first")
    k_final = serializers.IntegerField(allow_null=True, help_text="that version's k_final")
    recall_first = serializers.FloatField(allow_null=True, help_text="recall@k_first on that version, all queries")
    recall_final = serializers.FloatField(allow_null=True, help_text="recall@k_final on that version, all queries")
    failed_query_count = serializers.IntegerField(source="run.failed_query_count", help_text="queries the endpoint did not answer")
    failing = serializers.BooleanField(help_text="more of its queries failed than the set allows: the night measured an outage")
    index_size = serializers.IntegerField(source="run.index_size", allow_null=True, help_text="documents the endpoint searched")
    slice_scores = serializers.DictField(
        source="slices",
        child=serializers.FloatField(),
        help_text="the ?slice= asked for: metric name -> fraction; {} without one",
    )


class NightlyRunSerializer(serializers.Serializer):
    """One querying of a live endpoint (scheduled, or run now) and the run it made.
    Needs `slug` in the serializer's context, for `url`."""

    id = serializers.IntegerField()
    endpoint = serializers.CharField(source="endpoint.name")
    slot = serializers.DateTimeField(help_text="the scheduled moment, or when run now was asked")
    trigger = serializers.ChoiceField(choices=NightlyRun.Trigger.choices)
    status = serializers.ChoiceField(choices=NightlyRun.Status.values)  # the values of an evaluation's status: one enum
    queries_total = serializers.IntegerField(help_text="queries to ask (0 until it starts)")
    queries_done = serializers.IntegerField(help_text="queries asked so far")
    failed_count = serializers.IntegerField(help_text="queries the endpoint did not answer")
    run_id = serializers.IntegerField(allow_null=True, help_text="the run it made, once done")
    version = serializers.IntegerField(
        source="version.number", allow_null=True, default=None, help_text="the version whose queries it asks"
    )
    error = serializers.CharField(allow_blank=True, help_text="why it failed; empty otherwise")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField(help_text="where to poll this night")

    def get_url(self, night: NightlyRun) -> str:
        return reverse("api_endpoint_night", kwargs={"slug": self.context["slug"], "endpoint": night.endpoint.name, "night_id": night.pk})


class HeaderSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_blank=True, help_text="as typed: ${ENV_VAR} is resolved by the worker at send time, never here")


class EndpointOutputSerializer(serializers.Serializer):
    """A live endpoint as registered, without secrets: header values are shown as typed
    (`Bearer ${SEARCH_TOKEN}`), never resolved; the request itself (REQUEST_FIELDS) only
    with `shows_request` in the context, for the set's managers. Reads the attributes that
    api.selectors.endpoints_with_nights sets (last_night, running, next_run_at, next_probe_at).
    Needs `slug` in the serializer's context."""

    name = serializers.CharField()
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Endpoint.Stage.choices)
    preset = serializers.ChoiceField(choices=Endpoint.Preset.choices)
    url = serializers.CharField(allow_null=True, help_text="null unless the caller manages the set (as on the pages)")
    method = serializers.CharField(allow_null=True, help_text="null unless the caller manages the set")
    body_template = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        help_text="holds {{query}}, {{query_id}} and {{k}}; null unless the caller manages the set",
    )
    params_template = serializers.CharField(allow_blank=True, allow_null=True, help_text="null unless the caller manages the set")
    headers = serializers.SerializerMethodField()
    hits_path = serializers.CharField(allow_blank=True, help_text="dotted path to the hits in an answer")
    doc_id_path = serializers.CharField(allow_blank=True, help_text="in a hit, the doc id")
    score_path = serializers.CharField(allow_blank=True, help_text="in a hit, the score")
    index_size_path = serializers.CharField(allow_blank=True, help_text="in an answer, the documents searched")
    count_url = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        help_text="a GET URL answering the index size; null unless the caller manages the set",
    )
    count_path = serializers.CharField(allow_blank=True)
    timeout_seconds = serializers.FloatField()
    retries = serializers.IntegerField()
    max_in_flight = serializers.IntegerField(help_text="requests in flight at once, at most")
    max_per_second = serializers.FloatField(help_text="requests a second, at most")
    run_schedule = serializers.CharField(help_text="cron line (UTC) of the nightly runs")
    probe_schedule = serializers.CharField(help_text="cron line (UTC) of the canary probes (first-stage endpoints)")
    exact_body_template = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        help_text="the exact (brute-force) request's body the index probe compares with; null unless the caller manages the set",
    )
    exact_params_template = serializers.CharField(
        allow_blank=True, allow_null=True, help_text="the exact request's URL query string; null unless the caller manages the set"
    )
    shard_path = serializers.CharField(allow_blank=True, help_text="in a hit, the shard it came from (ANN recall per shard)")
    index_probe_schedule = serializers.CharField(help_text="cron line (UTC) of the index probes (endpoints with an exact request)")
    index_recall_floor = serializers.FloatField(
        help_text="ANN recall@k (a fraction), overall or a shard's, under which an index alert opens"
    )
    enabled = serializers.BooleanField(help_text="off: no scheduled runs or probes (run now still works)")
    series = serializers.CharField(source="series.name", help_text="the series its nightly runs join")
    created_at = serializers.DateTimeField()
    last_night = NightlyRunSerializer(allow_null=True, help_text="the latest night done or failed")
    running = NightlyRunSerializer(allow_null=True, help_text="a night pending or running now")
    next_run_at = serializers.DateTimeField(allow_null=True, help_text="the next scheduled night; null when disabled")
    next_probe_at = serializers.DateTimeField(allow_null=True, help_text="the next canary probe; null when disabled or reranked")

    @extend_schema_field(HeaderSerializer(many=True, allow_null=True))
    def get_headers(self, endpoint: Endpoint) -> list[dict]:
        return [{"name": str(name), "value": str(value)} for name, value in endpoint.headers]

    # How the endpoint is asked: what the monitoring pages show the set's managers only
    # (an adjudicator sees the nights, not where and with what they are sent).
    REQUEST_FIELDS = (
        "url",
        "method",
        "body_template",
        "params_template",
        "headers",
        "count_url",
        "exact_body_template",
        "exact_params_template",
    )

    def to_representation(self, endpoint: Endpoint) -> dict:
        data = super().to_representation(endpoint)
        if not self.context.get("shows_request", False):
            data.update(dict.fromkeys(self.REQUEST_FIELDS))
        return data
