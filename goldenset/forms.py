"""Forms of the golden-set pages."""

from django import forms


class PublishForm(forms.Form):
    """Publish the set's labels as a new version (the set's publish page and the coverage page)."""

    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput, help_text="what changed since the last version")
