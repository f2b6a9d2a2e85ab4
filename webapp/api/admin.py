"""API tokens in the admin: who has which, when used; never the token or its digest."""

from __future__ import annotations

from django.contrib import admin

from webapp.api.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "workspace", "read_only", "created", "last_used", "expiry")
    list_filter = ("read_only", "created")
    search_fields = ("name", "user__username", "workspace__name")
    fields = ("name", "user", "workspace", "read_only", "created", "last_used", "expiry")
    readonly_fields = ("name", "user", "workspace", "read_only", "created", "last_used")

    def has_add_permission(self, request) -> bool:
        return False  # tokens are created by their owner, who sees the token once
