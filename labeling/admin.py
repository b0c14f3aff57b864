"""The Django admin for pools and judging tasks.

Pools and tasks are made by the pooling services (which compute the union, the order and
the counts), so the admin never adds them; it shows them, filters them, and may delete a
pool built by mistake (its tasks go with it; the judgments already made stay).
"""

from django.contrib import admin
from django.db.models import Count

from labeling.models import JudgingTask, Pool, PoolRun


class PoolRunInline(admin.TabularInline):
    model = PoolRun
    fields = ["ordinal", "run", "depth", "added_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["id", "golden_set", "strategy", "depth", "budget", "run_count", "created_by", "created_at"]
    list_filter = ["strategy", "golden_set"]
    list_select_related = ["golden_set", "created_by"]
    inlines = [PoolRunInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(run_total=Count("pool_runs"))

    @admin.display(description="runs", ordering="run_total")
    def run_count(self, pool: Pool) -> int:
        return pool.run_total

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JudgingTask)
class JudgingTaskAdmin(admin.ModelAdmin):
    list_display = ["id", "query", "page", "kind", "status", "pool", "position", "best_rank", "grade", "leased_to", "lease_expires_at", "done_at"]
    list_filter = ["kind", "status", "golden_set", "pool"]
    search_fields = ["query__query_id", "page__doc_id", "leased_to__username"]
    list_select_related = ["query", "page", "leased_to", "pool__golden_set"]
    # Pools write millions of tasks: skip the second COUNT over the whole table.
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
