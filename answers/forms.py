"""Forms of the answers pages. They turn text into values; what a value may be is the
services' business (answers.human_grades and the generator, judge and experiment services),
which name the field at fault."""

from django import forms

from answers.models import AnswerGrade

_YES_NO = [("yes", "yes"), ("no", "no")]


class HumanGradeForm(forms.Form):
    grade = forms.ChoiceField(choices=AnswerGrade.Grade.choices, widget=forms.RadioSelect)
    supported = forms.TypedChoiceField(
        choices=_YES_NO, coerce=lambda value: value == "yes", widget=forms.RadioSelect, label="Supported by its context"
    )
