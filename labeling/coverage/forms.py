"""Forms of the coverage page: publish a version, pool the flagged slices."""

from django import forms

from goldenset.models import GoldenSet
from labeling.coverage.services import DEFAULT_FLAGGED_POOL_DEPTH
from labeling.models import Pool
from labeling.pools import strategies


class FlaggedPoolForm(forms.Form):
    pool = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        help_text="a new pool, or an existing one to extend with the flagged slices' pairs (it keeps its strategy and budget)",
    )
    depth = forms.IntegerField(
        min_value=1,
        max_value=strategies.MAX_DEPTH,
        initial=DEFAULT_FLAGGED_POOL_DEPTH,
        help_text="pages taken from the top of each run, per query",
    )
    # Model first needs a model's labels chosen: it is offered where a pool is built from
    # the completeness page and build_pool, not here.
    strategy = forms.ChoiceField(
        choices=[(name, cls.description) for name, cls in strategies.STRATEGIES.items() if not cls.uses_model_labels],
        initial="depth",
    )
    budget = forms.IntegerField(min_value=1, required=False, help_text="most pairs judged in a new pool; empty means no cap")

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        pools = Pool.objects.filter(golden_set=golden_set).order_by("-id").values_list("id", "strategy", "depth")
        self.fields["pool"].choices = [("", "new pool")] + [(pk, f"pool {pk} ({strategy}, depth {depth})") for pk, strategy, depth in pools]
