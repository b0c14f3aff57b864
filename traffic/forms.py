from django import forms

from traffic.logs import LOG_FORMATS
from traffic.models import QueryLog


class QueryLogUploadForm(forms.Form):
    file = forms.FileField(
        label="Log file",
        help_text='JSON lines {"query", "count", "timestamp", slice fields...} or CSV/TSV with a header (a query column); gzip too',
    )
    name = forms.CharField(max_length=QueryLog._meta.get_field("name").max_length, help_text="the log's name in this set, e.g. 2026-11")
    format = forms.ChoiceField(
        choices=[(name, "found from the first line" if name == "auto" else name) for name in LOG_FORMATS],
        initial="auto",
        required=False,
    )
    replace = forms.BooleanField(required=False, help_text="replace the log of this name (refused once queries were drawn from it)")
