"""Forms of the answers pages. They turn text into values; what a value may be is the
services' business (answers.human_grades and the generator, judge and experiment services),
which name the field at fault."""

from django import forms

from answers.models import AnswerGrade, AnswerJudge, Generator
from evaluation.models import Run
from monitoring.models import Endpoint

_YES_NO = [("yes", "yes"), ("no", "no")]


class HumanGradeForm(forms.Form):
    grade = forms.ChoiceField(choices=AnswerGrade.Grade.choices, widget=forms.RadioSelect)
    supported = forms.TypedChoiceField(
        choices=_YES_NO, coerce=lambda value: value == "yes", widget=forms.RadioSelect, label="Supported by its context"
    )


def problems_to_fields(form: forms.Form, error) -> None:
    """Put each of a GoldsetError's problems ("field: why") beside its field, the others
    (and the message) above the form."""
    placed = False
    for problem in error.problems:
        name, _, why = problem.partition(": ")
        target = {"sample": "sample_size", "budget": "budget_dollars"}.get(name, name)
        if why and target in form.fields:
            form.add_error(target, why)
            placed = True
        else:
            form.add_error(None, problem)
    if not placed or not error.problems:
        form.add_error(error.field if error.field in form.fields else None, error.message)


class GeneratorForm(forms.Form):
    """An OpenAI-compatible chat generator (a team's own answer endpoint: EndpointGeneratorForm)."""

    name = forms.CharField(max_length=100)
    base_url = forms.CharField(label="Base URL", max_length=500, help_text="The API's base URL, ending in /v1 (as OpenAI clients take it).")
    model = forms.CharField(max_length=200)
    prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        help_text="{{question}} and {{context}} are filled in; the context is numbered passages with their ids.",
    )
    temperature = forms.FloatField(initial=0.0, min_value=0)
    api_key_env = forms.CharField(
        required=False,
        label="Key variable",
        max_length=100,
        help_text="The environment variable the worker reads the key from (it starts with JUDGE_). Never the key itself.",
    )
    max_in_flight = forms.IntegerField(initial=4, min_value=1, label="Requests in flight")
    price_in = forms.DecimalField(required=False, min_value=0, decimal_places=4, max_digits=12, label="$ per million input tokens")
    price_out = forms.DecimalField(required=False, min_value=0, decimal_places=4, max_digits=12, label="$ per million output tokens")


class EndpointGeneratorForm(forms.Form):
    """A team's own RAG answer endpoint as a generator: a POST whose JSON body holds the
    question and the context, and where the answer's text is in what it sends back."""

    name = forms.CharField(max_length=100)
    url = forms.CharField(label="URL", max_length=2000, help_text="The endpoint's URL; it is asked with POST.")
    body_template = forms.CharField(
        label="Body template",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        initial='{"question": {{query}}, "passages": {{context}}}',
        help_text="JSON with {{query}} (the question, a JSON string) and {{context}} (the passages, a JSON list of {id, text}).",
    )
    answer_path = forms.CharField(
        label="Answer path", max_length=500, help_text="Where the answer's text is in the JSON it sends back, like data.answer."
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        help_text="One 'Name: value' a line; a secret as ${SEARCH_TOKEN}, read by the worker, never stored.",
    )
    max_in_flight = forms.IntegerField(initial=4, min_value=1, label="Requests in flight")

    def clean_headers(self) -> list[list[str]]:
        pairs = []
        for number, line in enumerate(self.cleaned_data["headers"].splitlines(), start=1):
            if not line.strip():
                continue
            name, separator, value = line.partition(":")
            if not separator or not name.strip():
                raise forms.ValidationError(f"line {number}: {line.strip()!r} is not 'Name: value'")
            pairs.append([name.strip(), value.strip()])
        return pairs

    def service_fields(self) -> dict:
        """The cleaned values as generator_add takes them for an endpoint."""
        data = self.cleaned_data
        request = {"url": data["url"], "method": "POST", "body_template": data["body_template"], "headers": data["headers"]}
        return {"name": data["name"], "request": request, "answer_path": data["answer_path"], "max_in_flight": data["max_in_flight"]}


class AnswerJudgeForm(forms.Form):
    name = forms.CharField(max_length=100)
    base_url = forms.CharField(label="Base URL", max_length=500, help_text="The API's base URL, ending in /v1.")
    model = forms.CharField(max_length=200)
    rubric = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}),
        help_text="{{question}}, {{reference}}, {{answer}} and {{context}} are filled in; the judge answers 'grade:' and 'supported:' lines.",
    )
    api_key_env = forms.CharField(
        required=False, label="Key variable", max_length=100, help_text="The variable holding the key (JUDGE_...)."
    )
    max_in_flight = forms.IntegerField(initial=4, min_value=1, label="Requests in flight")
    price_in = forms.DecimalField(required=False, min_value=0, decimal_places=4, max_digits=12, label="$ per million input tokens")
    price_out = forms.DecimalField(required=False, min_value=0, decimal_places=4, max_digits=12, label="$ per million output tokens")


class ExperimentForm(forms.Form):
    run = forms.ModelChoiceField(queryset=None, help_text="Its top k_final is the retrieved context.")
    generator = forms.ModelChoiceField(queryset=None)
    judge = forms.ModelChoiceField(queryset=None, required=False, empty_label="none: exact match and token F1 only")
    sample_size = forms.IntegerField(
        required=False, min_value=1, label="Sample (queries)", help_text="Answer this many queries drawn at random. Empty: all of them."
    )
    closed_book = forms.BooleanField(required=False, label="Also answer with no context")
    budget_dollars = forms.DecimalField(
        required=False, min_value=0, decimal_places=4, max_digits=12, label="Budget ($)", help_text="Stop, resumable, before spending more."
    )
    max_requests = forms.IntegerField(required=False, min_value=1, label="At most this many requests")
    k_sweep = forms.CharField(
        required=False,
        max_length=200,
        label="Also at k (a sweep)",
        help_text="Like 1,2,4,16: the retrieved context is answered again at each k, for the run's depth-and-cost sweep. Empty: k_final only.",
    )

    def clean_k_sweep(self) -> list[int]:
        parts = [part.strip() for part in self.cleaned_data["k_sweep"].split(",") if part.strip()]
        if not all(part.isdigit() for part in parts):
            raise forms.ValidationError("whole numbers separated by commas, like 1,2,4,16")
        return [int(part) for part in parts]

    def __init__(self, *args, golden_set, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = Run.objects.filter(golden_set=golden_set, archived_at=None).order_by("system", "stage", "name")
        self.fields["generator"].queryset = Generator.objects.filter(golden_set=golden_set).order_by("name")
        self.fields["judge"].queryset = AnswerJudge.objects.filter(golden_set=golden_set).order_by("name")


class ContinueForm(forms.Form):
    budget_dollars = forms.DecimalField(
        required=False, min_value=0, decimal_places=4, max_digits=12, label="New budget ($)", help_text="Empty: no bound."
    )
    max_requests = forms.IntegerField(required=False, min_value=1, label="At most this many requests")


class EndpointDepthForm(forms.Form):
    """Ask a live endpoint once at a depth, for the sweep (answers.endpoint_depth)."""

    endpoint = forms.ModelChoiceField(queryset=None, help_text="Asked every query of the latest version, once.")
    depth = forms.IntegerField(min_value=1, label="Depth K", help_text="Pages to ask for, up to the version's k_first.")

    def __init__(self, *args, golden_set, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].queryset = Endpoint.objects.filter(golden_set=golden_set).order_by("name")
