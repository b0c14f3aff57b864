"""Forms of the golden-set pages."""

from django import forms


class PublishForm(forms.Form):
    """Publish the set's labels as a new version (the set's publish page and the coverage page)."""

    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput, help_text="what changed since the last version")


def _lines(text: str) -> list[str]:
    """The non-blank lines of a text area, stripped: one alias or key fact a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


class ReferenceAnswerForm(forms.Form):
    """A manager's edit of a query's reference answer (the query page)."""

    answer = forms.CharField(
        max_length=20_000, widget=forms.Textarea(attrs={"rows": 3}), help_text="the answer a generated one is graded against"
    )
    aliases = forms.CharField(
        required=False, max_length=20_000, widget=forms.Textarea(attrs={"rows": 3}), help_text="other ways of saying it, one a line"
    )
    key_facts = forms.CharField(
        required=False, max_length=20_000, widget=forms.Textarea(attrs={"rows": 3}), help_text="facts a full answer holds, one a line"
    )

    def clean_answer(self) -> str:
        return self.cleaned_data["answer"].strip()

    def clean_aliases(self) -> list[str]:
        return _lines(self.cleaned_data["aliases"])

    def clean_key_facts(self) -> list[str]:
        return _lines(self.cleaned_data["key_facts"])
