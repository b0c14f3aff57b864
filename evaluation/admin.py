"""The Django admin for runs, evaluations, scores, alerts, settings and canaries.

Scores, completeness figures and alerts are computed: the admin shows them, never adds,
edits or deletes them. Runs are immutable once uploaded (the runs page uploads them);
a run uploaded by mistake may be deleted here, with its evaluations. Settings and
canaries are written through their services (evaluation.settings_service,
evaluation.canaries), so the admin checks exactly what the pages check.

Lists select their related rows in the same query and never load a run's entries or an
evaluation's per-query values, which are megabytes each.
"""

from functools import partial

from django import forms
from django.contrib import admin
from django.db.models.functions import Length

from evaluation.canaries import canary_add, canary_check_input
from evaluation.models import (
    Alert,
    Canary,
    Completeness,
    Evaluation,
    EvaluationSettings,
    Incident,
    IncidentMessage,
    Run,
    RunData,
    RunUploadJob,
    Score,
    SliceMute,
    WebhookDelivery,
)
from evaluation.settings_service import SETTINGS_FIELDS, evaluation_settings_update, settings_field_clean
from lib.errors import GoldsetError

# An evaluation's blobs: never read by a list or a page of related rows.
_EVALUATION_BLOBS = ("per_query", "recall_curve")


class ComputedAdmin(admin.ModelAdmin):
    """For figures the evaluation computes: visible and searchable, never made or changed here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class EvaluationSettingsForm(forms.ModelForm):
    class Meta:
        model = EvaluationSettings
        fields = ["golden_set", *SETTINGS_FIELDS]
        # A webhook typed without a scheme is taken as https (Django 6's default, chosen now).
        field_classes = {"webhook_url": partial(forms.URLField, assume_scheme="https")}

    def clean(self):
        cleaned = super().clean()
        golden_set = cleaned.get("golden_set") or getattr(self.instance, "golden_set", None)
        if golden_set is None:
            return cleaned
        for field in SETTINGS_FIELDS:
            if field in cleaned and field not in self.errors:
                try:
                    cleaned[field] = settings_field_clean(golden_set=golden_set, field=field, value=cleaned[field])
                except GoldsetError as exc:
                    self.add_error(field, [exc.message, *exc.problems])
        return cleaned


@admin.register(EvaluationSettings)
class EvaluationSettingsAdmin(admin.ModelAdmin):
    form = EvaluationSettingsForm
    list_display = [
        "golden_set",
        "min_queries_per_slice",
        "alert_slice_floor",
        "judged_floor",
        "age_buckets",
        "alert_drop_points",
        "alert_rerank_loss_points",
        "completeness_depth",
        "run_depth_cap",
    ]
    search_fields = ["golden_set__slug", "golden_set__name"]
    list_select_related = ["golden_set"]

    def get_readonly_fields(self, request, obj=None):
        return ["golden_set"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        # The settings page's write path, so a change is validated and logged the same way.
        fields = {field: form.cleaned_data[field] for field in SETTINGS_FIELDS if field in form.cleaned_data}
        saved = evaluation_settings_update(golden_set=obj.golden_set, user=request.user, **fields)
        obj.pk = saved.pk


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "system",
        "stage",
        "golden_set",
        "query_count",
        "entry_count",
        "external_doc_count",
        "uploaded_by",
        "created_at",
    ]
    list_filter = ["stage", "golden_set"]
    search_fields = ["name", "system", "source_name"]
    list_select_related = ["golden_set", "uploaded_by"]
    readonly_fields = [field.name for field in Run._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(RunData)
class RunDataAdmin(ComputedAdmin):
    """The stored entries of each run, by size; the bytes themselves are never loaded here."""

    list_display = ["run", "golden_set", "stored_bytes"]
    list_filter = ["run__golden_set"]
    search_fields = ["run__name"]
    list_select_related = ["run__golden_set"]
    fields = ["run", "stored_bytes"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("ranked").annotate(size=Length("ranked"))

    @admin.display(description="golden set", ordering="run__golden_set__slug")
    def golden_set(self, data: RunData):
        return data.run.golden_set

    @admin.display(description="stored bytes", ordering="size")
    def stored_bytes(self, data: RunData) -> int:
        return data.size


@admin.register(Evaluation)
class EvaluationAdmin(ComputedAdmin):
    list_display = [
        "run",
        "version",
        "status",
        "queries_in_version",
        "queries_averaged",
        "unanswered_count",
        "no_relevant_count",
        "finished_at",
    ]
    list_filter = ["status", "version__golden_set"]
    search_fields = ["run__name", "run__system", "error"]
    list_select_related = ["run", "version__golden_set"]
    exclude = list(_EVALUATION_BLOBS)
    show_full_result_count = False

    def get_queryset(self, request):
        return super().get_queryset(request).defer(*_EVALUATION_BLOBS)


class _OfEvaluation(ComputedAdmin):
    """Rows that belong to one evaluation: named by its run and version, which lists read in
    the same query, without the evaluation's blobs."""

    list_select_related = ["evaluation__run", "evaluation__version__golden_set"]
    show_full_result_count = False  # ten thousand scores a publish

    def get_queryset(self, request):
        return super().get_queryset(request).defer(*(f"evaluation__{blob}" for blob in _EVALUATION_BLOBS))

    @admin.display(description="run", ordering="evaluation__run__name")
    def run(self, row):
        return row.evaluation.run

    @admin.display(description="version", ordering="evaluation__version__number")
    def version(self, row):
        return row.evaluation.version


@admin.register(Score)
class ScoreAdmin(_OfEvaluation):
    list_display = ["run", "version", "slice", "metric", "value", "queries_averaged", "no_relevant_count"]
    list_filter = ["metric", "evaluation__version__golden_set"]
    search_fields = ["slice", "metric", "evaluation__run__name"]


@admin.register(Completeness)
class CompletenessAdmin(_OfEvaluation):
    list_display = ["run", "version", "slice", "queries", "judged_at_k_final", "judged_at_k_first", "loro_recall_change_points"]
    list_filter = ["evaluation__version__golden_set"]
    search_fields = ["slice", "evaluation__run__name"]


@admin.register(Alert)
class AlertAdmin(ComputedAdmin):
    list_display = [
        "created_at",
        "kind",
        "golden_set",
        "version",
        "run",
        "metric",
        "slice",
        "value",
        "reference",
        "within_noise",
        "incident",
    ]
    list_filter = ["kind", "golden_set"]
    search_fields = ["message", "run__name", "slice"]
    list_select_related = ["golden_set", "version__golden_set", "run", "incident"]
    date_hierarchy = "created_at"


@admin.register(Incident)
class IncidentAdmin(ComputedAdmin):
    """Read here; triage goes through the alerts page and the API (evaluation.alerts.incidents)."""

    list_display = ["id", "golden_set", "kind", "subject", "state", "owner", "opened_at", "title"]
    list_filter = ["state", "kind", "golden_set"]
    search_fields = ["title", "subject"]
    list_select_related = ["golden_set", "owner"]


@admin.register(IncidentMessage)
class IncidentMessageAdmin(ComputedAdmin):
    list_display = [
        "incident",
        "number",
        "closed_at",
        "emailed_at",
        "webhook_delivered_at",
        "webhook_attempts",
        "next_attempt_at",
        "gave_up_at",
    ]
    list_select_related = ["incident"]
    list_filter = ["incident__golden_set"]
    search_fields = ["incident__title", "webhook_error"]


@admin.register(SliceMute)
class SliceMuteAdmin(ComputedAdmin):
    list_display = ["golden_set", "slice", "until", "created_by"]
    list_filter = ["golden_set"]
    search_fields = ["slice"]
    list_select_related = ["golden_set", "created_by"]


class CanaryForm(forms.ModelForm):
    class Meta:
        model = Canary
        fields = ["golden_set", "query", "page", "note"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("golden_set") and "query" not in self.errors and "page" not in self.errors:
            try:
                canary_check_input(golden_set=cleaned["golden_set"], query=cleaned.get("query"), page=cleaned.get("page"))
            except GoldsetError as exc:
                self.add_error(exc.field if exc.field in self.fields else None, exc.message)
        return cleaned


@admin.register(Canary)
class CanaryAdmin(admin.ModelAdmin):
    """Canaries are added (through canary_add) and removed here; a changed canary is a new one."""

    form = CanaryForm
    list_display = ["golden_set", "query", "page", "note", "created_at"]
    list_filter = ["golden_set"]
    search_fields = ["query__query_id", "page__doc_id", "page__title", "note"]
    list_select_related = ["golden_set", "query", "page"]
    autocomplete_fields = ["query", "page"]

    def has_change_permission(self, request, obj=None):
        # The change page stays readable (view permission); only adding and deleting write.
        return False

    def save_model(self, request, obj, form, change):
        created = canary_add(golden_set=obj.golden_set, query=obj.query, page=obj.page, note=obj.note, user=request.user)
        obj.pk, obj.created_at = created.pk, created.created_at


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ComputedAdmin):
    """Every webhook attempt, with the exact error class the alerts page words as "unreachable"."""

    list_display = ["sent_at", "golden_set", "message_id", "attempt", "host", "status", "error", "duration_ms"]
    list_filter = ["golden_set"]
    search_fields = ["message_id", "host"]
    list_select_related = ["golden_set"]


@admin.register(RunUploadJob)
class RunUploadJobAdmin(admin.ModelAdmin):
    """Large run uploads a worker reads (evaluation.run_uploads): records of what was asked
    and what came of it, read-only; a stuck one is failed by the sweeper, never edited."""

    list_display = ["id", "golden_set", "source_name", "status", "run", "created_by", "created_at", "finished_at", "error"]
    list_filter = ["status", "golden_set"]
    search_fields = ["golden_set__slug", "source_name", "system", "error"]
    list_select_related = ["golden_set", "created_by", "run"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
