"""The Django admin for golden sets. Published versions and judgments are read-only here,
as everywhere: the admin can look, never edit or delete.

A golden set's page links to its slice coverage page (labeling.coverage.views) and to the
qrels export of its latest version; its action starts a publish job through the same
service as the pages (labeling/admin.py adds the one that pools flagged slices).
"""

from django.contrib import admin, messages
from django.db import models
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from goldenset.audit import audit_record
from goldenset.models import (
    AuditRecord,
    Corpus,
    GoldenSet,
    Judgment,
    Membership,
    ModelJudgment,
    ModelPrompt,
    Page,
    PublishJob,
    Query,
    Version,
    VersionLabel,
    VersionPage,
    VersionQuery,
)
from goldenset.publishing import version_publish_request
from goldenset.tasks import publish_job_task
from lib.admin_widgets import LabelledInlineFormSet, LabelledSplitDateTime
from lib.errors import GoldsetError
from lib.formats import QREL_FORMATS


def _golden_set_of(obj) -> GoldenSet | None:
    return obj if isinstance(obj, GoldenSet) else getattr(obj, "golden_set", None)


def _audit_form(request, form, obj, change: bool) -> None:
    """Record an admin's add or change of `obj` through `form`: the fields it changed."""
    changed = form.changed_data
    if change and not changed:
        return
    before = {name: form.initial.get(name) for name in changed} if change else {}
    after = {name: form.cleaned_data.get(name) for name in changed}
    action = f"{obj._meta.model_name}.{'change' if change else 'add'}"
    audit_record(user=request.user, action=action, obj=obj, golden_set=_golden_set_of(obj), before=before, after=after)


def _audit_delete(request, obj) -> None:
    action = f"{obj._meta.model_name}.delete"
    audit_record(user=request.user, action=action, obj=obj, golden_set=_golden_set_of(obj), before={"label": str(obj)})


class AuditedAdmin(admin.ModelAdmin):
    """An admin whose adds, changes and deletes (its inlines' too) go to the audit trail, in
    the admin's own transaction: the admin writes these models without a service."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        _audit_form(request, form, obj, change)

    def delete_model(self, request, obj):
        _audit_delete(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            _audit_delete(request, obj)
        super().delete_queryset(request, queryset)

    def save_formset(self, request, form, formset, change):
        for inline_form in formset.forms:
            instance = inline_form.instance
            if instance.pk is not None and inline_form in formset.deleted_forms:
                _audit_delete(request, instance)
        super().save_formset(request, form, formset, change)
        for inline_form in formset.forms:
            if inline_form not in formset.deleted_forms and inline_form.has_changed() and inline_form.instance.pk is not None:
                _audit_form(request, inline_form, inline_form.instance, change=bool(inline_form.initial))


class ReadOnlyAdmin(admin.ModelAdmin):
    """For append-only history: visible and searchable, never added, changed or deleted here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# Every admin whose model has a URLField takes these: a URL typed without a scheme is taken as
# https (Django 6's default, chosen now; the suite makes Django 6's deprecations errors).
HTTPS_URL_FIELDS = {models.URLField: {"assume_scheme": "https"}}


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ["doc_id", "title", "corpus", "has_text", "published_at", "modified_at"]
    formfield_overrides = {**HTTPS_URL_FIELDS, models.DateTimeField: {"widget": LabelledSplitDateTime}}
    list_filter = ["corpus", "has_text"]
    search_fields = ["doc_id", "title"]
    list_select_related = ["corpus"]
    readonly_fields = ["content_hash", "created_at"]
    show_full_result_count = False  # corpora hold 100,000s of pages: skip the second COUNT

    def get_readonly_fields(self, request, obj=None):
        # A published version's exports read doc_id through the page: frozen once it is in
        # one (a database trigger refuses the change on every other path too).
        if obj is not None and VersionPage.objects.filter(page=obj).exists():
            return [*self.readonly_fields, "doc_id", "corpus"]
        return self.readonly_fields


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = LabelledInlineFormSet
    extra = 0
    autocomplete_fields = ["user"]


def _export_links(version: Version) -> str:
    return format_html_join(
        " · ",
        '<a href="{}">{}</a>',
        (
            (reverse("version_export", kwargs={"slug": version.golden_set.slug, "number": version.number, "fmt": fmt}), fmt)
            for fmt in QREL_FORMATS
        ),
    )


@admin.register(GoldenSet)
class GoldenSetAdmin(AuditedAdmin):
    list_display = ["slug", "name", "corpus", "relevance_threshold", "k_first", "k_final", "created_at", "coverage"]
    search_fields = ["slug", "name"]
    list_select_related = ["corpus"]
    readonly_fields = ["coverage", "latest_version_export"]
    inlines = [MembershipInline]
    # labeling/admin.py adds the pooling action: pools are a floor above golden sets.
    actions = ["publish_versions"]

    @admin.display(description="slice coverage")
    def coverage(self, golden_set: GoldenSet) -> str:
        if golden_set.pk is None:
            return "-"
        return format_html('<a href="{}">slice coverage</a>', reverse("coverage", kwargs={"slug": golden_set.slug}))

    @admin.display(description="qrels of the latest version")
    def latest_version_export(self, golden_set: GoldenSet) -> str:
        version = golden_set.latest_version() if golden_set.pk else None
        if version is None:
            return "no version yet"
        return format_html("v{}: {}", version.number, _export_links(version))

    @admin.action(description="Publish a new version of the selected golden sets", permissions=["change"])
    def publish_versions(self, request, queryset):
        for golden_set in queryset:
            try:
                job = version_publish_request(
                    golden_set=golden_set,
                    user=request.user,
                    note=f"published from the admin by {request.user}",
                    job_task=publish_job_task,
                )
            except GoldsetError as exc:
                self.message_user(request, f"{golden_set.slug}: not published: {exc.message}", messages.WARNING)
            else:
                url = reverse("publish_job", kwargs={"slug": golden_set.slug, "job_id": job.pk})
                self.message_user(
                    request,
                    format_html(
                        '{}: publishing in the background as <a href="{}">job {}</a>, which shows its progress and the new version.',
                        golden_set.slug,
                        url,
                        job.pk,
                    ),
                )


@admin.register(Membership)
class MembershipAdmin(AuditedAdmin):
    list_display = ["user", "golden_set", "role", "created_at"]
    list_filter = ["role", "golden_set"]
    search_fields = ["user__username", "golden_set__slug"]
    list_select_related = ["user", "golden_set"]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["query_id", "text", "golden_set", "has_text", "retired_at"]
    list_filter = ["golden_set", "has_text"]
    search_fields = ["query_id", "text"]
    list_select_related = ["golden_set"]

    def get_readonly_fields(self, request, obj=None):
        # As for pages: a query in a published version keeps its id and its set.
        if obj is not None and VersionQuery.objects.filter(query=obj).exists():
            return [*self.readonly_fields, "query_id", "golden_set"]
        return self.readonly_fields


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["query", "page", "grade", "annotator", "source", "stale", "created_at"]
    list_filter = ["source", "grade", "query__golden_set"]
    search_fields = ["query__query_id", "page__doc_id", "annotator__username"]
    list_select_related = ["query", "page", "annotator"]
    show_full_result_count = False

    @admin.display(description="stale", boolean=True)
    def stale(self, judgment: Judgment) -> bool | None:
        """The page changed after it was judged (None: no hash was recorded)."""
        return judgment.page_hash != judgment.page.content_hash if judgment.page_hash else None


@admin.register(ModelJudgment)
class ModelJudgmentAdmin(ReadOnlyAdmin):
    """Model labels come in through their import only (goldenset.model_labels), so that each
    row names the model and prompt that made it."""

    list_display = ["golden_set", "query", "page", "model", "short_prompt", "grade", "score", "created_at"]
    list_filter = ["golden_set", "model", "grade"]
    search_fields = ["query__query_id", "page__doc_id", "model", "prompt_hash"]
    list_select_related = ["golden_set", "query", "page"]
    show_full_result_count = False

    @admin.display(description="prompt")
    def short_prompt(self, label: ModelJudgment) -> str:
        return label.prompt_hash[:12]


@admin.register(ModelPrompt)
class ModelPromptAdmin(ReadOnlyAdmin):
    """A prompt's text is what its hash names: changing it would make the hash lie."""

    list_display = ["prompt_hash", "created_at"]
    search_fields = ["prompt_hash", "text"]


@admin.register(Version)
class VersionAdmin(ReadOnlyAdmin):
    list_display = [
        "golden_set",
        "number",
        "short_hash",
        "query_count",
        "label_count",
        "relevant_count",
        "queries_without_relevant",
        "author",
        "created_at",
        "links",
    ]
    list_filter = ["golden_set"]
    search_fields = ["golden_set__slug", "note", "content_hash"]
    list_select_related = ["golden_set", "author"]

    @admin.display(description="qrels · coverage")
    def links(self, version: Version) -> str:
        coverage = reverse("coverage", kwargs={"slug": version.golden_set.slug}) + f"?version={version.number}"
        return format_html('{} · <a href="{}">coverage</a>', _export_links(version), coverage)


@admin.register(VersionLabel)
class VersionLabelAdmin(ReadOnlyAdmin):
    list_display = ["version", "query", "page", "grade"]
    list_filter = ["version__golden_set"]
    search_fields = ["query__query_id", "page__doc_id"]
    list_select_related = ["version__golden_set", "query", "page"]
    show_full_result_count = False


@admin.register(VersionQuery)
class VersionQueryAdmin(ReadOnlyAdmin):
    list_display = ["version", "query", "metadata"]
    list_filter = ["version__golden_set"]
    search_fields = ["query__query_id"]
    list_select_related = ["version__golden_set", "query"]
    show_full_result_count = False


@admin.register(VersionPage)
class VersionPageAdmin(ReadOnlyAdmin):
    list_display = ["version", "page", "metadata", "published_at", "content_hash"]
    list_filter = ["version__golden_set"]
    search_fields = ["page__doc_id"]
    list_select_related = ["version__golden_set", "page"]
    show_full_result_count = False


@admin.register(PublishJob)
class PublishJobAdmin(admin.ModelAdmin):
    """Publish jobs are records of what was asked and what came of it (goldenset.publishing):
    read-only; a stuck one is failed by the sweeper, never edited by hand."""

    list_display = ["id", "golden_set", "status", "version", "created_by", "created_at", "finished_at", "error"]
    list_filter = ["status", "golden_set"]
    search_fields = ["golden_set__slug", "note", "error"]
    list_select_related = ["golden_set", "created_by", "version__golden_set"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AuditRecord)
class AuditRecordAdmin(ReadOnlyAdmin):
    """The audit trail: read here, never written (goldenset.audit.audit_record writes it)."""

    list_display = ("at", "username", "action", "object_label", "golden_set_slug")
    list_filter = ("action",)
    search_fields = ("username", "action", "object_label", "golden_set_slug")
    date_hierarchy = "at"
    readonly_fields = [field.name for field in AuditRecord._meta.fields]
    actions = None
