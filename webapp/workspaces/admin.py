"""Workspaces and members in the admin, and the policy for the other apps' admin pages (`WorkspaceScopedAdmin`).

Superusers are the operators: they see and change everything. Other staff see the objects of their workspaces,
and change or delete them as their role there allows (webapp.workspaces.policy), as in the product."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from webapp.workspaces import policy
from webapp.workspaces.models import Membership, Workspace


class WorkspaceScopedAdmin(admin.ModelAdmin):
    workspace_field = "workspace"  # the path from the model to its workspace, e.g. "pipeline__workspace"
    change_action = policy.EDIT

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        objects = super().get_queryset(request)
        if request.user.is_superuser:
            return objects
        return objects.filter(**{f"{self.workspace_field}__in": policy.visible_workspaces(request.user)})

    def _workspace_id(self, obj: Any) -> int | None:
        for part in self.workspace_field.split("__"):
            obj = getattr(obj, part, None)
        return getattr(obj, "pk", None)

    def _may(self, request: HttpRequest, obj: Any, action: str) -> bool:
        if obj is None or request.user.is_superuser:
            return True
        workspace_id = self._workspace_id(obj)
        return workspace_id is not None and policy.may(request.user, action, workspace_id)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._may(request, obj, self.change_action)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._may(request, obj, self.change_action)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    raw_id_fields = ("user",)
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Workspace)
class WorkspaceAdmin(WorkspaceScopedAdmin):
    workspace_field = "pk"
    change_action = "member.manage"
    list_display = ("name", "hide_dead_letter_payloads", "created_at")
    search_fields = ("name", "memberships__user__username")
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        objects = admin.ModelAdmin.get_queryset(self, request)
        return objects if request.user.is_superuser else objects.filter(pk__in=policy.visible_workspaces(request.user))

    def _workspace_id(self, obj: Any) -> int | None:
        return obj.pk


@admin.register(Membership)
class MembershipAdmin(WorkspaceScopedAdmin):
    change_action = "member.manage"
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__username", "user__email", "workspace__name")
    raw_id_fields = ("user", "workspace")
