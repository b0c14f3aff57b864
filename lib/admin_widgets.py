"""Admin form parts that name what they ask for: Django's admin lays an inline's fields out in
a table whose column headers are not labels of the cells, and its split date-time widget
prints "Date:" and "Time:" as text beside inputs no label names. A screen reader then reads
"select, combo box" or "edit text" with no word of what it is (axe: select-name, label).
"""

from django import forms
from django.contrib.admin.widgets import AdminSplitDateTime


class LabelledSplitDateTime(AdminSplitDateTime):
    """AdminSplitDateTime whose two inputs are named "<field> date" and "<field> time"."""

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        field = name.rsplit("-", 1)[-1].replace("_", " ")
        for subwidget, part in zip(context["widget"]["subwidgets"], ("date", "time")):
            subwidget["attrs"]["aria-label"] = f"{field} {part}"
        return context


class LabelledInlineFormSet(forms.BaseInlineFormSet):
    """An inline formset whose every field, the delete box among them, carries an aria-label
    naming the field and the row ("role, row 2"): the tabular inline shows no label per cell."""

    def add_fields(self, form, index):
        super().add_fields(form, index)
        row = "new row" if index is None else f"row {index + 1}"
        for name, field in form.fields.items():
            label = "delete" if name == "DELETE" else str(field.label or name).lower()
            field.widget.attrs.setdefault("aria-label", f"{label}, {row}")
