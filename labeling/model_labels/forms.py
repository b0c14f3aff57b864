"""The form a manager starts a judge job with (labeling.model_labels.jobs checks the rest)."""

from django import forms

from labeling.model_labels.local_judge import default_config
from labeling.models import JudgeJob
from lib import minilm
from lib.llm_judging import API_KEY_ENV_PREFIX, DEFAULT_PROMPT, MAX_BATCH


class JudgeForm(forms.Form):
    pairs = forms.ChoiceField(
        choices=JudgeJob.Pairs.choices,
        initial=JudgeJob.Pairs.POOL,
        widget=forms.RadioSelect,
        label="Pairs to grade",
        required=False,
        help_text="calibration compares the model with people on pairs both graded: to calibrate a model, grade the pairs "
        "people judged (a sample is enough)",
    )
    pool = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, help_text="the pool whose pairs the model grades (the pool's pairs only)"
    )
    kind = forms.ChoiceField(
        choices=JudgeJob.Kind.choices,
        initial=JudgeJob.Kind.CHAT,
        widget=forms.RadioSelect,
        label="Judge",
        required=False,
        help_text=f"local: {minilm.MODEL_NAME} from the optional model extra, offline and free; it reads the "
        "thresholds below and none of the chat fields",
    )
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Base URL",
        help_text="chat: of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1 (…/chat/completions is added)",
    )
    model = forms.CharField(max_length=200, required=False, help_text="chat: the model's name as the API knows it")
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key variable",
        help_text=f"the environment variable of the worker holding the key (starting with {API_KEY_ENV_PREFIX}); "
        "the key itself is never typed, stored or shown. Empty: no key is sent",
    )
    prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14}),
        initial=DEFAULT_PROMPT,
        strip=False,
        required=False,
        help_text="chat: {query} and {passage} are filled in per pair; each wording is kept under its own hash",
    )
    config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        strip=False,
        label="Local thresholds",
        help_text="local: the cosine of query and page (title and text, cut at 256 word pieces) from which each grade is "
        "given; each wording is kept under its own hash",
    )
    sample = forms.IntegerField(min_value=1, required=False, help_text="grade this many pairs drawn at random; empty: all of them")
    max_in_flight = forms.IntegerField(min_value=1, max_value=64, initial=4, label="Requests in flight")
    batch_size = forms.IntegerField(
        min_value=1,
        max_value=MAX_BATCH,
        initial=1,
        required=False,
        label="Passages per request",
        help_text=f"grade up to {MAX_BATCH} passages of one query in one request, numbered in the prompt; 1 or empty: a request "
        "per pair. A passage the answer leaves out or garbles fails alone",
    )
    price_in = forms.DecimalField(min_value=0, max_digits=12, decimal_places=4, required=False, label="Price per million input tokens")
    price_out = forms.DecimalField(min_value=0, max_digits=12, decimal_places=4, required=False, label="Price per million output tokens")

    def __init__(self, *args, pools=(), scale=(0, 1, 2, 3), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["config"].initial = default_config(scale)
        self.fields["pool"].choices = [
            (pool.pk, f"pool {pool.pk} · {pool.pair_count} pairs · {pool.get_strategy_display()}") for pool in pools
        ]

    def clean_pairs(self) -> str:
        return self.cleaned_data["pairs"] or JudgeJob.Pairs.POOL

    def clean_batch_size(self) -> int:
        return self.cleaned_data["batch_size"] or 1

    def clean_prompt(self) -> str:
        # Browsers send a textarea's lines ended by CRLF: the prefilled prompt sent back
        # unchanged must hash as the command's default does, not as a new wording.
        return self.cleaned_data["prompt"].replace("\r\n", "\n")

    def clean_kind(self) -> str:
        # A form from before there were two kinds (or a script) sends none: the chat judge.
        return self.cleaned_data["kind"] or JudgeJob.Kind.CHAT

    def clean_config(self) -> str:
        return self.cleaned_data["config"].replace("\r\n", "\n")
