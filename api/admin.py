"""Tokens in the admin: listed and revocable, never made or edited here (a secret is shown
once, by the token page or create_api_token, and only its hash is stored)."""

from django.contrib import admin

from api.models import ApiToken
from api.services import api_token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "name", "owner", "scope", "golden_set", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("scope", "golden_set")
    search_fields = ("prefix", "name", "owner__username")
    list_select_related = ("owner", "golden_set")
    readonly_fields = [field.name for field in ApiToken._meta.fields]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Revoked, not deleted: the row says who held a key and when it stopped working.
        return False

    # Revoking is a change of the token, so it takes the permission a change would.
    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request, queryset):
        tokens = list(queryset)
        for token in tokens:
            api_token_revoke(token=token, user=request.user)
        self.message_user(request, f"{len(tokens)} token(s) revoked.")

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("api.change_apitoken")
