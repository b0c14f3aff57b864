"""Forms of the completeness page: build or extend a pool, draw a completeness sample."""

from django import forms

from goldenset.model_labels import model_sources
from labeling.completeness.selectors import CompletenessReport
from labeling.completeness.services import MAX_SEED
from labeling.models import Pool

# Largest value a PositiveIntegerField holds on every database we run on.
_MAX_INT = (1 << 31) - 1


class PoolForm(forms.Form):
    """Build a new pool (no pool chosen) or extend one. Values are checked by the
    services, so the page and the build_pool command refuse the same things alike."""

    pool = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        label="Pool",
        help_text="a new pool, or an existing one to add the runs to (only their new unjudged pairs join it)",
    )
    runs = forms.TypedMultipleChoiceField(
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one run"},
    )
    depth = forms.IntegerField(
        required=False,
        max_value=_MAX_INT,
        label="Depth",
        help_text="pages taken from the top of each run, per query; for an existing pool, empty means its own depth",
    )
    strategy = forms.ChoiceField(
        choices=Pool.Strategy.choices,
        initial=Pool.Strategy.DEPTH,
        label="Strategy",
        help_text="judging order of a new pool (an existing pool keeps its own)",
    )
    budget = forms.IntegerField(
        required=False,
        max_value=_MAX_INT,
        label="Budget",
        help_text="most pairs judged in a new pool; empty means no cap (an existing pool keeps its own)",
    )
    # A choice's value is the prompt hash (64 characters), a space and the model's name,
    # which may itself hold spaces or colons.
    model_labels = forms.ChoiceField(
        required=False,
        label="Model labels (model first only)",
        help_text="the model and prompt whose labels order a model-first pool: the pairs it grades highest are judged first",
    )

    def __init__(self, *args, report: CompletenessReport, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model_labels"].choices = [("", "none")] + [
            (f"{source.prompt_hash} {source.model}", f"{source.model}, prompt {source.short_hash} ({source.label_count} model labels)")
            for source in model_sources(report.golden_set)
        ]
        self.runs = {row.run.pk: row.run for row in report.runs}
        self.pools = {row.pool.pk: row.pool for row in report.pools}
        self.fields["runs"].choices = [(pk, run.name) for pk, run in self.runs.items()]
        self.fields["pool"].choices = [("", "new pool")] + [
            (pk, f"pool {pk} ({pool.strategy}, depth {pool.depth})") for pk, pool in self.pools.items()
        ]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("pool") is None and "pool" not in self.errors:
            if cleaned.get("depth") is None and "depth" not in self.errors:
                self.add_error("depth", "a new pool needs a depth")
        elif cleaned.get("budget") is not None:
            self.add_error("budget", f"a budget is set when a pool is built; pool {cleaned['pool']} keeps its own")
        elif cleaned.get("model_labels"):
            self.add_error("model_labels", f"model labels are chosen when a pool is built; pool {cleaned['pool']} keeps its own")
        return cleaned

    def model_source(self) -> tuple[str | None, str | None]:
        """(model, prompt hash) of the chosen model labels, or (None, None)."""
        chosen = self.cleaned_data.get("model_labels")
        return (chosen[65:], chosen[:64]) if chosen else (None, None)


class SampleForm(forms.Form):
    pool = forms.TypedChoiceField(coerce=int, label="Pool", help_text="the sample is drawn below this pool's depth")
    size = forms.IntegerField(max_value=_MAX_INT, label="Size", help_text="pairs to draw and judge")
    depth_to = forms.IntegerField(
        required=False,
        max_value=_MAX_INT,
        label="Down to rank",
        help_text="deepest rank sampled; empty means the set's k_first",
    )
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_SEED,
        label="Seed",
        help_text="to draw the same pairs again; empty means a random one",
    )

    def __init__(self, *args, report: CompletenessReport, **kwargs):
        super().__init__(*args, **kwargs)
        self.pools = {row.pool.pk: row.pool for row in report.pools}
        self.fields["pool"].choices = [(pk, f"pool {pk} (depth {pool.depth})") for pk, pool in self.pools.items()]
