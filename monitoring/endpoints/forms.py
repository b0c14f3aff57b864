"""Forms of the endpoint pages. They turn text into values; whether an endpoint can work
(a template that cannot be read, a header holding a literal secret, a cron line) is decided
by the service (monitoring.endpoints.services), whose GoldsetError the views place on the
fields it names (`service_error_show`), so the page and the command agree."""

from django import forms

from lib.errors import GoldsetError
from monitoring.models import (
    DEFAULT_INDEX_PROBE_SCHEDULE,
    DEFAULT_INDEX_RECALL_FLOOR,
    DEFAULT_PROBE_SCHEDULE,
    DEFAULT_RUN_SCHEDULE,
    Endpoint,
)

# The fields a preset fills in; a generic endpoint needs them, the others may override them.
REQUEST_FIELDS = (
    "method",
    "body_template",
    "params_template",
    "hits_path",
    "doc_id_path",
    "score_path",
    "index_size_path",
    "count_url",
    "count_path",
)
LIMIT_FIELDS = ("timeout_seconds", "retries", "max_in_flight", "max_per_second")
SCHEDULE_FIELDS = ("run_schedule", "probe_schedule", "enabled")
# The index probe's: the exact request beside the approximate one, and what it is judged by.
EXACT_FIELDS = ("exact_body_template", "exact_params_template", "shard_path", "index_probe_schedule", "index_recall_floor")

_CODE = {"spellcheck": "false", "autocomplete": "off", "class": "code"}


def headers_text(pairs) -> str:
    """The stored [[name, value], ...] as the form's "Name: value" lines, as they were typed."""
    return "\n".join(f"{name}: {value}" for name, value in pairs or [])


class _EndpointFields(forms.Form):
    """What the add and edit forms share: the request, its reading, limits and schedules."""

    system = forms.CharField(max_length=200, help_text="the retrieval system; its first-stage and reranked endpoints form a funnel")
    url = forms.CharField(
        label="URL",
        max_length=2000,
        widget=forms.TextInput(attrs=_CODE),
        help_text="e.g. http://search:9200/wiki/_search; only addresses the deployment allows are called",
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={**_CODE, "rows": 3}),
        help_text="one 'Name: value' per line. Put secrets in environment variables whose names start with SEARCH_: "
        "'Authorization: Bearer ${SEARCH_TOKEN}' is resolved by the worker when it sends, and never stored or shown resolved.",
    )
    method = forms.ChoiceField(required=False, choices=[("", "preset's"), ("POST", "POST"), ("GET", "GET")])
    body_template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={**_CODE, "rows": 4}),
        help_text="JSON body holding {{query}}, {{query_id}} and {{k}}",
    )
    params_template = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs=_CODE),
        help_text="URL query string, e.g. q={{query}}&rows={{k}}",
    )
    hits_path = forms.CharField(
        required=False, max_length=300, widget=forms.TextInput(attrs=_CODE), help_text="dotted path of the hit list, e.g. hits.hits"
    )
    doc_id_path = forms.CharField(
        required=False,
        max_length=300,
        widget=forms.TextInput(attrs=_CODE),
        help_text="in a hit, e.g. _id (Vespa: id, read as the id fed: id:ns:type::X is X)",
    )
    score_path = forms.CharField(
        required=False, max_length=300, widget=forms.TextInput(attrs=_CODE), help_text="in a hit, e.g. _score (empty: rank order)"
    )
    index_size_path = forms.CharField(
        required=False,
        max_length=300,
        widget=forms.TextInput(attrs=_CODE),
        help_text="in a search answer, the documents searched",
    )
    count_url = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs=_CODE),
        help_text="a GET URL answering the index size, e.g. .../_count",
    )
    count_path = forms.CharField(
        required=False, max_length=300, widget=forms.TextInput(attrs=_CODE), help_text="in the count answer, e.g. count"
    )
    # Their bounds are the client's (monitoring.endpoints.spec), checked by the service.
    timeout_seconds = forms.FloatField(required=False, label="Timeout (seconds)", help_text="per attempt, 0.1 to 120 (default 10)")
    retries = forms.IntegerField(required=False, help_text="extra attempts on errors, timeouts, 429 and 5xx, 0 to 5 (default 2)")
    max_in_flight = forms.IntegerField(required=False, label="Requests at once", help_text="1 to 64 (default 8)")
    max_per_second = forms.FloatField(
        required=False, label="Requests per second", help_text="started per second, retries included (default 20)"
    )
    run_schedule = forms.CharField(
        required=False,
        max_length=100,
        widget=forms.TextInput(attrs=_CODE),
        help_text=f"cron line, UTC, of the nightly runs (default '{DEFAULT_RUN_SCHEDULE}')",
    )
    probe_schedule = forms.CharField(
        required=False,
        max_length=100,
        widget=forms.TextInput(attrs=_CODE),
        help_text=f"cron line, UTC, of the canary probes of a first stage (default '{DEFAULT_PROBE_SCHEDULE}')",
    )
    exact_body_template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={**_CODE, "rows": 4}),
        help_text="the same query asked exactly (brute force, e.g. OpenSearch script_score instead of knn), with the same "
        "placeholders; empty: the approximate body. An exact body or parameters turn the index probe on",
    )
    exact_params_template = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs=_CODE),
        help_text="URL query string of the exact request, e.g. q={{query}}&rows={{k}}&exact=true; empty: the approximate one's",
    )
    shard_path = forms.CharField(
        required=False,
        max_length=300,
        widget=forms.TextInput(attrs=_CODE),
        help_text="in a hit, the shard it came from, e.g. _shard: the index probe then reports ANN recall per shard",
    )
    index_probe_schedule = forms.CharField(
        required=False,
        max_length=100,
        widget=forms.TextInput(attrs=_CODE),
        help_text=f"cron line, UTC, of the index probes (default '{DEFAULT_INDEX_PROBE_SCHEDULE}': hourly, as an exact "
        "request scans the whole index)",
    )
    index_recall_floor = forms.FloatField(
        required=False,
        label="ANN recall floor",
        help_text=f"a fraction: ANN recall@k overall or on a shard under it raises an index alert (default {DEFAULT_INDEX_RECALL_FLOOR})",
    )
    enabled = forms.BooleanField(required=False, initial=True, help_text="off: no scheduled runs or probes (run now still works)")
    chunking = forms.CharField(
        required=False,
        max_length=100,
        widget=forms.TextInput(attrs=_CODE),
        help_text="the chunking of the corpus whose chunk ids it answers, e.g. semantic-400 (empty: documents, it answers doc ids); "
        "its nights are then scored at document and chunk level",
    )

    GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def groups(self) -> list[tuple[str, list]]:
        """(title, bound fields) in the order the template shows them."""
        return [(title, [self[name] for name in names if name in self.fields]) for title, names in self.GROUPS]

    def request_errors(self) -> bool:
        """True when a field of the request and reading has an error: its fieldset opens."""
        return any(self.errors.get(name) for name in REQUEST_FIELDS)

    def options(self) -> dict:
        """The cleaned values for the service, headers as the "Name: value" text it reads."""
        return {name: value for name, value in self.cleaned_data.items() if name in self.fields}


class EndpointAddForm(_EndpointFields):
    name = forms.CharField(
        max_length=100,
        widget=forms.TextInput(attrs=_CODE),
        help_text="within the set, e.g. prod-hybrid-first: letters, digits, '.', '_', '-'",
    )
    stage = forms.ChoiceField(choices=Endpoint.Stage.choices, help_text="reranked is what the prompt sees")
    preset = forms.ChoiceField(
        choices=Endpoint.Preset.choices,
        help_text="fills in the request and where the answer holds its hits; generic takes them from the fields below",
    )
    series = forms.CharField(required=False, max_length=200, help_text="the series its nightly runs join (default '<name> nightly')")

    field_order = ["name", "system", "stage", "preset", "url", "series"]
    GROUPS = (
        ("Endpoint", ("name", "system", "stage", "preset", "url", "series", "chunking", "headers")),
        ("Request and reading", REQUEST_FIELDS),
        ("Limits", LIMIT_FIELDS),
        ("Schedules", SCHEDULE_FIELDS),
        ("Exact mode and index probe", EXACT_FIELDS),
    )

    def is_generic(self) -> bool:
        preset = self.data.get("preset") if self.is_bound else self.initial.get("preset")
        return preset == Endpoint.Preset.GENERIC


class EndpointEditForm(_EndpointFields):
    """Everything but the name, stage, preset and series, which name the endpoint's history."""

    GROUPS = (
        ("Endpoint", ("system", "url", "chunking", "headers")),
        ("Request and reading", REQUEST_FIELDS),
        ("Limits", LIMIT_FIELDS),
        ("Schedules", SCHEDULE_FIELDS),
        ("Exact mode and index probe", EXACT_FIELDS),
    )

    def __init__(self, *args, endpoint: Endpoint, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                **{
                    name: getattr(endpoint, name)
                    for name in (*REQUEST_FIELDS, *LIMIT_FIELDS, *SCHEDULE_FIELDS, *EXACT_FIELDS, "system", "url")
                },
                "headers": headers_text(endpoint.headers),
                "chunking": endpoint.chunking.name if endpoint.chunking_id else "",
            },
        )
        super().__init__(*args, **kwargs)
        # An edit states every value: an empty limit or schedule is an error, not "the default".
        for name in ("method", *LIMIT_FIELDS, "run_schedule", "probe_schedule", "index_probe_schedule", "index_recall_floor"):
            self.fields[name].required = True
        self.fields["method"].choices = [("POST", "POST"), ("GET", "GET")]

    def is_generic(self) -> bool:
        return True  # every request field is shown when editing


class EndpointTryForm(forms.Form):
    query = forms.CharField(max_length=2000, widget=forms.TextInput(attrs={"autofocus": True}), help_text="the query text to send")
    query_id = forms.CharField(max_length=200, required=False, initial="probe", help_text="sent as {{query_id}} (default 'probe')")
    k = forms.IntegerField(
        required=False, min_value=1, max_value=1000, help_text="depth asked (default: the stage's k of the latest version)"
    )


def service_error_show(form: forms.Form, exc: GoldsetError) -> None:
    """Put a service's GoldsetError on the form: each problem on the field it starts with
    ("url: ..."), the rest and the summary above the form."""
    if not exc.problems:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return
    form.add_error(None, exc.message)
    for problem in exc.problems:
        name, colon, text = problem.partition(":")
        name = name.strip()
        if colon and name in form.fields:
            form.add_error(name, text.strip())
        else:
            form.add_error(None, problem)
