"""The Django admin for pools, judging tasks, queue settings, gold answers, completeness
samples and pool jobs, and the golden set action that pools the slices the coverage page
flags (as a job, labeling.jobs).

Pools and tasks are made by the pooling services (which compute the union, the order and
the counts), so the admin never adds them; it shows them, filters them, and may delete a
pool built by mistake (its tasks go with it; the judgments already made stay). Queue
settings are written by the labeling pages' services; gold answers and completeness
samples are records of what happened: all three are read-only here.
"""

from django.contrib import admin, messages
from django.db.models import Count

from goldenset.admin import HTTPS_URL_FIELDS, GoldenSetAdmin
from goldenset.models import GoldenSet
from labeling.coverage.services import DEFAULT_FLAGGED_POOL_DEPTH
from labeling.jobs.services import pool_job_submit
from labeling.models import CompletenessSample, GoldAnswer, JudgeJob, JudgingTask, Pool, PoolJob, PoolRun, QueueSettings
from labeling.tasks import pool_job_task
from lib.errors import GoldsetError


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
    list_display = ["id", "golden_set", "strategy", "depth", "budget", "pair_count", "run_count", "created_by", "created_at"]
    list_filter = ["strategy", "golden_set"]
    search_fields = ["golden_set__slug", "pool_runs__run__name"]
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
    list_display = [
        "id",
        "query",
        "page",
        "kind",
        "status",
        "pool",
        "position",
        "best_rank",
        "grade",
        "leased_to",
        "lease_expires_at",
        "done_at",
    ]
    list_filter = ["kind", "status", "golden_set", "pool"]
    search_fields = ["query__query_id", "page__doc_id", "leased_to__username"]
    list_select_related = ["query", "page", "leased_to", "pool__golden_set"]
    # Pools write millions of tasks: skip the second COUNT over the whole table.
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(QueueSettings)
class QueueSettingsAdmin(admin.ModelAdmin):
    """Shown, not edited: the labeling pages' services (gold_share_set, query_order_set, ...) are
    their write path; both are on the set's quality page."""

    list_display = ["golden_set", "query_order", "overlap_share", "overlap_annotators", "gold_share", "lease_seconds"]
    list_filter = ["query_order"]
    search_fields = ["golden_set__slug", "golden_set__name"]
    list_select_related = ["golden_set"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GoldAnswer)
class GoldAnswerAdmin(admin.ModelAdmin):
    list_display = ["id", "annotator", "task", "grade", "expected_grade", "correct", "seconds_spent", "created_at"]
    list_filter = ["task__golden_set"]
    search_fields = ["annotator__username", "task__query__query_id", "task__page__doc_id"]
    list_select_related = ["annotator", "task"]
    show_full_result_count = False

    @admin.display(description="correct", boolean=True)
    def correct(self, answer: GoldAnswer) -> bool:
        return answer.grade == answer.expected_grade

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CompletenessSample)
class CompletenessSampleAdmin(admin.ModelAdmin):
    list_display = ["id", "golden_set", "pool", "depth_from", "depth_to", "population", "size", "seed", "created_by", "created_at"]
    list_filter = ["golden_set"]
    search_fields = ["golden_set__slug"]
    list_select_related = ["golden_set", "pool__golden_set", "created_by"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JudgeJob)
class JudgeJobAdmin(admin.ModelAdmin):
    """Judge jobs are records of what a model was asked and what it cost (labeling.model_labels):
    read-only. The API key is not among the fields: only the variable's name is stored."""

    list_display = ["id", "golden_set", "model", "status", "pairs_total", "pairs_done", "pairs_failed", "requests", "created_at"]
    list_filter = ["status", "golden_set"]
    search_fields = ["golden_set__slug", "model", "prompt_hash"]
    list_select_related = ["golden_set"]
    formfield_overrides = HTTPS_URL_FIELDS  # the read-only change page still builds base_url's field

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PoolJob)
class PoolJobAdmin(admin.ModelAdmin):
    """Jobs are records of what was asked and what came of it (labeling.jobs): read-only."""

    list_display = ["id", "golden_set", "kind", "status", "created_by", "created_at", "finished_at", "error"]
    list_filter = ["kind", "status", "golden_set"]
    search_fields = ["golden_set__slug", "error"]
    list_select_related = ["golden_set", "created_by"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# The golden set's admin, with the action that needs this floor: pooling the slices the
# coverage page flags. Registered again here rather than imported into goldenset/admin.py,
# which must not reach up a floor.
admin.site.unregister(GoldenSet)


@admin.register(GoldenSet)
class GoldenSetCoverageAdmin(GoldenSetAdmin):
    actions = [*GoldenSetAdmin.actions, "pool_flagged_slices"]

    @admin.action(
        description=f"Pool the flagged slices of the selected golden sets (latest runs, depth {DEFAULT_FLAGGED_POOL_DEPTH})",
        permissions=["change"],
    )
    def pool_flagged_slices(self, request, queryset):
        for golden_set in queryset:
            version = golden_set.latest_version()
            if version is None:
                self.message_user(request, f"{golden_set.slug}: not pooled: no version yet.", messages.WARNING)
                continue
            arguments = {"version": version.number, "depth": DEFAULT_FLAGGED_POOL_DEPTH, "strategy": "depth", "budget": None}
            try:
                job = pool_job_submit(
                    golden_set=golden_set,
                    kind=PoolJob.Kind.FLAGGED,
                    arguments=arguments,
                    job_task=pool_job_task,
                    user=request.user,
                )
            except GoldsetError as exc:
                self.message_user(request, f"{golden_set.slug}: not pooled: {exc}", messages.WARNING)
            else:
                self.message_user(
                    request,
                    f"{golden_set.slug}: pooling the flagged slices of v{version.number} in the background "
                    f"(job {job.pk}); its result shows on the set's completeness page and under pool jobs here",
                )
