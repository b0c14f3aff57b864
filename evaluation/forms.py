"""Forms of the evaluation pages: the evaluation settings, the run upload and the
choice of two runs to compare. They turn text into values; what a setting may be is
decided by the service's own field checks (evaluation.settings_service), so the page and the
service agree."""

import re

from django import forms
from django.db.models import Q

from evaluation.models import EvaluationSettings, Run
from evaluation.selectors import evaluation_settings
from evaluation.settings_service import default_metric_names, settings_field_clean
from goldenset.models import Chunking, GoldenSet
from lib.errors import GoldsetError
from lib.run_formats import FORMAT_HELP, RUN_FORMATS

_SEPARATORS = re.compile(r"[,\s]+")
# What an empty completeness field means: the model's default, as an empty metrics list does.
_DEFAULT_DEPTH = EvaluationSettings._meta.get_field("completeness_depth").default
_DEFAULT_FLOOR = EvaluationSettings._meta.get_field("judged_floor").default
_DEFAULT_MIN_QUERIES = EvaluationSettings._meta.get_field("min_queries_per_slice").default


def _items(text: str) -> list[str]:
    return [item for item in _SEPARATORS.split(text or "") if item]


class EvaluationSettingsForm(forms.Form):
    metrics = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"spellcheck": "false"}),
        help_text="ranx metric names separated by commas, in display order. Empty means the defaults shown.",
    )
    run_depth_cap = forms.IntegerField(
        min_value=1, help_text="Entries kept per query when a run is uploaded (at least k_first). Applies to new uploads."
    )
    alert_drop_points = forms.FloatField(
        label="Drop alert (points)",
        help_text="Alert when recall@k_first or recall@k_final falls by more than this many points "
        "(hundredths: 3 means 0.03) against the previous version or the system's previous run.",
    )
    # Not required: a form posted without them (a script written before they existed) keeps the set's.
    alert_alpha = forms.FloatField(
        required=False,
        label="Drop alert significance (alpha)",
        help_text="A drop past the threshold is sent only when a one-sided paired t-test over the queries finds it at this "
        "significance, shared by the night's comparisons (Bonferroni); otherwise it is recorded as within noise. 0.05, not 5.",
    )
    alert_power = forms.FloatField(
        required=False,
        label="Power of the detectable drop",
        help_text="The power at which the pages state each slice's minimum detectable drop and mark it underpowered. 0.8, not 80.",
    )
    alert_slice_floor = forms.FloatField(
        label="Slice floor (fraction)",
        help_text="Alert when a slice's recall is under this fraction (0.75, not 75): recall@k_final for "
        "reranked runs, recall@k_first for the others. The coverage page flags slices under it too.",
    )
    alert_rerank_loss_points = forms.FloatField(
        label="Rerank loss alert (points)",
        help_text="Alert when recall@k_first of a system's first stage minus recall@k_final of its reranked run is over this many points.",
    )
    age_buckets = forms.CharField(
        required=False,
        label="Age buckets (days)",
        help_text="Upper bounds in days of the page-age slices, separated by commas: 30, 365 gives 0-30d, "
        "31-365d and 366d+. Empty means 30, 365.",
    )
    completeness_depth = forms.IntegerField(
        required=False,
        label="Completeness depth (pages)",
        min_value=1,
        help_text="Pool depth assumed for leave-one-run-out: a run's unique pages are the labelled pages in its top "
        f"this many that no other system's run has in its own top this many. Empty means {_DEFAULT_DEPTH}.",
    )
    judged_floor = forms.FloatField(
        required=False,
        label="Judged@k floor (fraction)",
        help_text="A run whose Judged@k_final (share of its top k_final with a label) is under this fraction (0.9, not "
        f"90) has its scores marked unreliable wherever they are shown, with the suggestion to pool it. Empty means {_DEFAULT_FLOOR:g}.",
    )
    min_queries_per_slice = forms.IntegerField(
        required=False,
        label="Minimum queries per slice",
        min_value=1,
        help_text="The coverage page flags a slice whose recall is averaged over fewer queries (those with a relevant page "
        "in the slice) than this: too few to trust, whatever the figure. Its other targets are the slice floor and the "
        f"Judged@k floor above. Empty means {_DEFAULT_MIN_QUERIES}.",
    )
    alert_emails = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Alert e-mails",
        help_text="Addresses separated by commas or new lines. The set's managers with an address get alerts too.",
    )
    webhook_url = forms.CharField(
        required=False,
        label="Webhook URL",
        widget=forms.URLInput,
        help_text="When set, each alert is POSTed here as JSON with a Slack/Teams-ready `text` line, signed the Standard Webhooks "
        "way (retried with backoff on failure). Setting it makes a signing secret, shown once below.",
    )

    failing_share = forms.FloatField(
        required=False,
        label="Endpoint failing (fraction of queries)",
        help_text="A series run (a monitored endpoint's night) with more than this fraction of failed queries "
        "(0.05, not 5) raises 'endpoint failing' instead of recall alerts, and is no night's baseline.",
    )
    series_rescore_nights = forms.IntegerField(
        required=False,
        label="Nights re-scored per series",
        min_value=1,
        help_text="A new version re-scores the latest this-many runs of each series (the night alerts compare a night "
        "with the one before and the 7-night median: keep it at 8 or more). Older nights keep their scores.",
    )
    series_keep_days = forms.IntegerField(
        required=False,
        label="Keep whole nights (days)",
        min_value=0,
        help_text="After this many days a series keeps the entries of one run a week; every night keeps its scores. "
        "0 keeps every night whole.",
    )

    partial_share = forms.FloatField(
        required=False,
        label="Partial run (fraction of queries)",
        help_text="A run answering under this fraction of the set's queries (0.5, not 50) is marked partial at upload: "
        "left out of coverage flags and alerts until a manager marks it complete. Applies to new uploads. Empty means 0.5.",
    )

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        self.golden_set = golden_set
        defaults = ", ".join(default_metric_names(golden_set))
        self.fields["metrics"].widget.attrs["placeholder"] = defaults
        self.fields["metrics"].help_text += f" Defaults at k_first = {golden_set.k_first}, k_final = {golden_set.k_final}: {defaults}."

    @classmethod
    def initial_from(cls, settings: EvaluationSettings) -> dict:
        return {
            "metrics": ", ".join(settings.metrics),
            "run_depth_cap": settings.run_depth_cap,
            "alert_drop_points": settings.alert_drop_points,
            "alert_slice_floor": settings.alert_slice_floor,
            "alert_rerank_loss_points": settings.alert_rerank_loss_points,
            "alert_alpha": settings.alert_alpha,
            "alert_power": settings.alert_power,
            "age_buckets": ", ".join(map(str, settings.age_buckets)),
            "completeness_depth": settings.completeness_depth,
            "judged_floor": settings.judged_floor,
            "min_queries_per_slice": settings.min_queries_per_slice,
            "alert_emails": "\n".join(settings.alert_emails),
            "webhook_url": settings.webhook_url,
            "failing_share": settings.failing_share,
            "series_rescore_nights": settings.series_rescore_nights,
            "series_keep_days": settings.series_keep_days,
            "partial_share": settings.partial_share,
        }

    def _checked(self, field: str, value):
        try:
            return settings_field_clean(golden_set=self.golden_set, field=field, value=value)
        except GoldsetError as exc:
            raise forms.ValidationError([exc.message, *exc.problems]) from None

    def clean_metrics(self):
        return self._checked("metrics", _items(self.cleaned_data["metrics"]))

    def clean_run_depth_cap(self):
        return self._checked("run_depth_cap", self.cleaned_data["run_depth_cap"])

    def clean_alert_drop_points(self):
        return self._checked("alert_drop_points", self.cleaned_data["alert_drop_points"])

    def _checked_or_kept(self, field: str):
        value = self.cleaned_data[field]
        return getattr(evaluation_settings(self.golden_set), field) if value is None else self._checked(field, value)

    def clean_alert_alpha(self):
        return self._checked_or_kept("alert_alpha")

    def clean_alert_power(self):
        return self._checked_or_kept("alert_power")

    def clean_alert_slice_floor(self):
        return self._checked("alert_slice_floor", self.cleaned_data["alert_slice_floor"])

    def clean_alert_rerank_loss_points(self):
        return self._checked("alert_rerank_loss_points", self.cleaned_data["alert_rerank_loss_points"])

    def clean_age_buckets(self):
        days = []
        for item in _items(self.cleaned_data["age_buckets"]):
            if not (item.isascii() and item.isdigit()):
                raise forms.ValidationError(f"{item!r} is not a whole number of days")
            days.append(int(item))
        return self._checked("age_buckets", days)

    def clean_completeness_depth(self):
        value = self.cleaned_data["completeness_depth"]
        return self._checked("completeness_depth", _DEFAULT_DEPTH if value is None else value)

    def clean_judged_floor(self):
        value = self.cleaned_data["judged_floor"]
        return self._checked("judged_floor", _DEFAULT_FLOOR if value is None else value)

    def clean_min_queries_per_slice(self):
        value = self.cleaned_data["min_queries_per_slice"]
        return self._checked("min_queries_per_slice", _DEFAULT_MIN_QUERIES if value is None else value)

    def clean_alert_emails(self):
        return self._checked("alert_emails", _items(self.cleaned_data["alert_emails"]))

    def clean_webhook_url(self):
        return self._checked("webhook_url", self.cleaned_data["webhook_url"])

    def clean_failing_share(self):
        value = self.cleaned_data["failing_share"]
        return self._checked("failing_share", EvaluationSettings._meta.get_field("failing_share").default if value is None else value)

    def clean_series_rescore_nights(self):
        value = self.cleaned_data["series_rescore_nights"]
        return self._checked(
            "series_rescore_nights", EvaluationSettings._meta.get_field("series_rescore_nights").default if value is None else value
        )

    def clean_partial_share(self):
        value = self.cleaned_data["partial_share"]
        return self._checked("partial_share", EvaluationSettings._meta.get_field("partial_share").default if value is None else value)

    def clean_series_keep_days(self):
        value = self.cleaned_data["series_keep_days"]
        return self._checked("series_keep_days", EvaluationSettings._meta.get_field("series_keep_days").default if value is None else value)


class RunUploadForm(forms.Form):
    file = forms.FileField(
        label="Run file",
        help_text="TREC (query_id Q0 doc_id rank score tag), MS MARCO TSV, ranx or BEIR JSON, JSONL, parquet or ranx LZ4; gzip too",
    )
    format = forms.ChoiceField(
        choices=[(name, "found from the content" if name == "auto" else name) for name in RUN_FORMATS],
        initial="auto",
        required=False,
        help_text=FORMAT_HELP,
    )
    system = forms.CharField(max_length=200, help_text="the retrieval system; its first-stage and reranked runs form one funnel")
    stage = forms.ChoiceField(choices=Run.Stage.choices, initial=Run.Stage.FIRST_STAGE)
    name = forms.CharField(max_length=200, required=False, help_text="unique in the set; empty means 'system stage'")
    chunking = forms.ChoiceField(
        required=False,
        help_text="what the run's ids are: documents (doc ids), or the chunk ids of one of the corpus's chunkings",
    )

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        names = list(Chunking.objects.filter(corpus_id=golden_set.corpus_id).order_by("name").values_list("name", flat=True))
        field = self.fields["chunking"]
        field.choices = [("", Chunking.DOCUMENTS), *((name, name) for name in names)]
        # The message of run_import's own check (goldenset.chunk_labels.chunking_named).
        known = ", ".join([Chunking.DOCUMENTS, *names]).replace("%", "%%")  # the message is %-formatted with the value
        field.error_messages["invalid_choice"] = f"unknown chunking %(value)r: the corpus has {known}"
        if not names:
            field.widget = forms.HiddenInput()  # nothing to choose: every run is of documents


def _run_choice_label(run: Run) -> str:
    """A run as the compare page's choices name it, with what its name alone does not say."""
    marks = [word for word, on in (("archived", run.archived_at is not None), ("partial", run.held_partial)) if on]
    return f"{run.name} ({', '.join(marks)})" if marks else run.name


class CompareForm(forms.Form):
    a = forms.ModelChoiceField(queryset=Run.objects.none(), label="Run a")
    b = forms.ModelChoiceField(queryset=Run.objects.none(), label="Run b")

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        # Archived runs are not offered, but a link naming one (from its run page) still
        # compares it: the choices are the live runs plus the ones the request names.
        named = [value for value in (self.data.get("a"), self.data.get("b")) if value and str(value).isdigit()]
        runs = Run.objects.filter(Q(archived_at=None) | Q(pk__in=named), golden_set=golden_set).order_by("system", "stage", "name")
        self.fields["a"].queryset = runs
        self.fields["b"].queryset = runs
        self.fields["a"].label_from_instance = self.fields["b"].label_from_instance = _run_choice_label

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("a") and cleaned.get("a") == cleaned.get("b"):
            raise forms.ValidationError("choose two different runs")
        return cleaned


class PromptCostForm(forms.Form):
    """The set's prompt-cost figures; their bounds are the service's
    (goldenset.prompt_cost), which names the field at fault."""

    monthly_queries = forms.IntegerField(label="Queries a month", min_value=0, help_text="The traffic the monthly dollars are for.")
    price_per_million_input = forms.DecimalField(
        label="$ per million input tokens", min_value=0, max_digits=12, decimal_places=4, help_text="The model's price of input tokens."
    )
    tokens_per_page = forms.IntegerField(
        label="Tokens a page", min_value=1, help_text="Tokens a page (or chunk) takes in the prompt: k pages take k times this."
    )
    context_token_budget = forms.IntegerField(
        required=False,
        min_value=1,
        label="Context budget (tokens)",
        help_text="Tokens of context a prompt may hold; the oracle experiment cuts its contexts to it. Empty means k_final whole pages.",
    )

    @classmethod
    def initial_from(cls, golden_set: GoldenSet) -> dict:
        return {name: getattr(golden_set, name) for name in cls.base_fields}
