"""Admin for duplicate audits: audited tables with their latest results; results are read-only (the beat
writes them)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from webapp.audits.models import AuditedTable, AuditResult
from webapp.workspaces.admin import WorkspaceScopedAdmin


class AuditResultInline(admin.TabularInline):
    model = AuditResult
    fields = ("checked_at", "window_seconds", "duplicate_keys", "duplicate_rows", "elapsed_ms", "error")
    readonly_fields = fields
    ordering = ("-checked_at", "-id")
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).order_by("-checked_at", "-id")


@admin.register(AuditedTable)
class AuditedTableAdmin(WorkspaceScopedAdmin):
    change_action = "audit.edit"
    list_display = (
        "__str__",
        "workspace",
        "owner",
        "connection",
        "key_columns",
        "time_column",
        "pipeline",
        "created_at",
    )
    list_filter = ("connection", "workspace")
    search_fields = ("database", "table", "owner__username", "pipeline__name", "workspace__name")
    raw_id_fields = ("workspace", "owner", "connection", "pipeline")
    inlines = [AuditResultInline]


@admin.register(AuditResult)
class AuditResultAdmin(admin.ModelAdmin):
    list_display = ("audited_table", "checked_at", "window_seconds", "duplicate_keys", "duplicate_rows", "elapsed_ms")
    list_filter = ("window_seconds",)
    date_hierarchy = "checked_at"
    readonly_fields = [f.name for f in AuditResult._meta.fields]
    list_select_related = ("audited_table",)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
