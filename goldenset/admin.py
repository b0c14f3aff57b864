"""The Django admin for golden sets. Published versions and judgments are read-only here,
as everywhere: the admin can look, never edit or delete."""

from django.contrib import admin

from goldenset.models import Corpus, GoldenSet, Judgment, Membership, Page, Query, Version, VersionLabel, VersionPage, VersionQuery


class ReadOnlyAdmin(admin.ModelAdmin):
    """For append-only history: visible and searchable, never added, changed or deleted here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ["doc_id", "title", "corpus", "has_text", "published_at", "modified_at"]
    list_filter = ["corpus", "has_text"]
    search_fields = ["doc_id", "title"]
    list_select_related = ["corpus"]
    readonly_fields = ["content_hash", "created_at"]
    show_full_result_count = False  # corpora hold 100,000s of pages: skip the second COUNT


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(GoldenSet)
class GoldenSetAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "corpus", "relevance_threshold", "k_first", "k_final", "created_at"]
    search_fields = ["slug", "name"]
    list_select_related = ["corpus"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
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


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["query", "page", "grade", "annotator", "source", "created_at"]
    list_filter = ["source", "query__golden_set"]
    search_fields = ["query__query_id", "page__doc_id", "annotator__username"]
    list_select_related = ["query", "page", "annotator"]
    show_full_result_count = False


@admin.register(Version)
class VersionAdmin(ReadOnlyAdmin):
    list_display = ["golden_set", "number", "short_hash", "query_count", "label_count", "relevant_count", "author", "created_at"]
    list_filter = ["golden_set"]
    list_select_related = ["golden_set", "author"]


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
    list_select_related = ["version__golden_set", "query"]


@admin.register(VersionPage)
class VersionPageAdmin(ReadOnlyAdmin):
    list_display = ["version", "page", "metadata", "published_at"]
    list_select_related = ["version__golden_set", "page"]
