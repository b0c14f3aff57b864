"""Forms of the draw page (traffic.sampling_views): a draw from a log, a top-up of a stratum."""

from django import forms

from goldenset.models import GoldenSet
from traffic import designs
from traffic.models import QueryDraw, QueryLog
from traffic.sampling import TRAFFIC


class _LogForm(forms.Form):
    log = forms.ChoiceField(help_text="the set's query log to draw from")
    seed = forms.IntegerField(min_value=0, help_text="the same seed on the same log draws the same queries")

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        names = QueryLog.objects.filter(golden_set=golden_set).order_by("name").values_list("name", flat=True)
        self.fields["log"].choices = [(name, name) for name in names]


class DrawForm(_LogForm):
    design = forms.ChoiceField(choices=QueryDraw.Design.choices, initial=QueryDraw.Design.STRATIFIED)
    size = forms.IntegerField(min_value=1, help_text="distinct queries to draw")
    strata = forms.CharField(
        required=False, max_length=100, help_text=f"stratified only: a slice field of the log, or {TRAFFIC!r} for head, torso and tail"
    )
    allocation = forms.ChoiceField(
        choices=[
            (designs.BY_QUERIES, "in proportion to each stratum's queries"),
            (designs.BY_EVENTS, "in proportion to each stratum's events"),
        ],
        initial=designs.BY_QUERIES,
        help_text="stratified only: how the size is split among the strata",
    )
    field_order = ["log", "design", "size", "strata", "allocation", "seed"]


class TopUpForm(_LogForm):
    stratum = forms.CharField(
        max_length=200, required=False, help_text="a stratum of the log's latest draw (empty: a simple random draw's one)"
    )
    to = forms.IntegerField(min_value=1, required=False, help_text="the drawn queries the stratum should hold")
    to_detect = forms.FloatField(min_value=0.01, required=False, help_text="or: a drop in points the stratum should detect")
    field_order = ["log", "stratum", "to", "to_detect", "seed"]
