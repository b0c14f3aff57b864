"""Forms of the quality pages: an adjudicator's decision, gold checks to add, the share of
gold checks in the queue, the order in which annotators go through queries."""

from django import forms

from goldenset.models import GoldenSet
from labeling.models import QueueSettings
from labeling.quality.services import GOLD_CHECKS_MAX_ADD


class AdjudicateForm(forms.Form):
    grade = forms.TypedChoiceField(coerce=int, widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="why, for the annotators and for later")

    def __init__(self, *args, golden_set: GoldenSet, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["grade"].choices = [(g["value"], f"{g['value']} {g['label']}") for g in golden_set.grade_scale]


class GoldChecksForm(forms.Form):
    count = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=GOLD_CHECKS_MAX_ADD,
        label="Draw at random",
        help_text="labelled pairs of active queries, not gold checks yet",
    )
    pairs = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Or these pairs",
        help_text="one pair a line: query_id, whitespace, doc_id",
    )

    def clean_pairs(self) -> list[tuple[str, str]] | None:
        text = self.cleaned_data.get("pairs") or ""
        pairs = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise forms.ValidationError(f"line {number}: expected 'query_id doc_id', got {line.strip()!r}")
            pairs.append((parts[0], parts[1]))
        return pairs or None

    def clean(self):
        cleaned = super().clean()
        if not self.errors and (cleaned.get("count") is None) == (cleaned.get("pairs") is None):
            raise forms.ValidationError("give a number of pairs to draw or a list of pairs: one of the two")
        return cleaned


class GoldShareForm(forms.Form):
    gold_share = forms.FloatField(
        min_value=0,
        max_value=0.5,
        label="Share of gold checks",
        help_text="fraction of the tasks served to an annotator that are hidden gold checks (0 to 0.5)",
    )


class OverlapForm(forms.Form):
    overlap_share = forms.FloatField(
        min_value=0,
        max_value=1,
        label="Share of pairs judged twice or more",
        help_text="fraction of the pairs that go to more than one annotator, so that agreement can be measured (0 to 1)",
    )
    overlap_annotators = forms.TypedChoiceField(
        choices=[(2, "2 annotators"), (3, "3 annotators")],
        coerce=int,
        label="Annotators of such a pair",
    )


class QueryOrderForm(forms.Form):
    query_order = forms.ChoiceField(
        choices=QueueSettings.QueryOrder.choices,
        widget=forms.RadioSelect,
        label="Order of queries",
        help_text=(
            "one query at a time: an annotator stays on a query until it has no pair left for them, as TREC assessors "
            "judge a query's pages together; a budget then goes to the first queries judged. Interleaved: queries take "
            "turns, the least advanced first, so a budget spreads evenly over them."
        ),
    )
