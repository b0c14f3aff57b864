"""Monitoring in the Django admin: read-only, since endpoints are written through
monitoring.endpoints.services (its checks, its series) from the Endpoints pages and
`endpoint_add`, and nights and probes are the record of what happened."""

from django.contrib import admin

from monitoring.models import Endpoint, IndexProbe, NightlyRun, ProbeRound


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Endpoint)
class EndpointAdmin(ReadOnlyAdmin):
    list_display = ["name", "golden_set", "system", "stage", "preset", "url", "run_schedule", "probe_schedule", "enabled"]
    list_filter = ["stage", "preset", "enabled"]
    search_fields = ["name", "system", "golden_set__slug"]


@admin.register(NightlyRun)
class NightlyRunAdmin(ReadOnlyAdmin):
    list_display = ["endpoint", "slot", "trigger", "status", "queries_done", "failed_count", "seconds", "run"]
    list_filter = ["status", "trigger"]
    list_select_related = ["endpoint", "run"]
    search_fields = ["endpoint__name", "endpoint__golden_set__slug"]


@admin.register(ProbeRound)
class ProbeRoundAdmin(ReadOnlyAdmin):
    list_display = ["endpoint", "slot", "trigger", "canaries", "missed", "finished_at"]
    list_select_related = ["endpoint"]
    search_fields = ["endpoint__name"]


@admin.register(IndexProbe)
class IndexProbeAdmin(ReadOnlyAdmin):
    list_display = ["endpoint", "slot", "trigger", "k", "ann_recall", "queries_compared", "errors", "finished_at"]
    list_select_related = ["endpoint"]
    search_fields = ["endpoint__name"]
