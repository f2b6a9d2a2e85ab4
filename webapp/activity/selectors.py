"""Reads of the activity log: the entries of the caller's workspaces, and sign-ins (which belong to no workspace):
the caller's own, and, for a workspace's admins, those of its members."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from webapp.activity.models import ActivityEntry
from webapp.workspaces.models import Membership, Role, Workspace
from webapp.workspaces.policy import visible_workspaces

SIGN_IN_ACTIONS = ("sign_in", "sign_in.failed")


def activity_list(
    *,
    user: Any,
    workspace: Workspace | None = None,
    action: str | None = None,
    object_type: str | None = None,
    object_id: int | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[ActivityEntry]:
    """Newest first, narrowed by each filter given (`actor`: a username; `action`: exact, or a prefix ending in
    '.', e.g. "pipeline.")."""
    workspaces = visible_workspaces(user)
    if workspace is not None:
        workspaces = workspaces.filter(pk=workspace.pk)
    admin_of = Membership.objects.filter(workspace__in=workspaces, role=Role.ADMIN, user=user).values("workspace")
    members = Membership.objects.filter(workspace__in=admin_of).values("user")
    sign_ins = Q(workspace__isnull=True, action__in=SIGN_IN_ACTIONS) & (Q(actor=user) | Q(actor__in=members))
    entries = ActivityEntry.objects.filter(Q(workspace__in=workspaces) | sign_ins)
    if action:
        entries = entries.filter(action__startswith=action) if action.endswith(".") else entries.filter(action=action)
    if object_type:
        entries = entries.filter(object_type=object_type)
    if object_id is not None:
        entries = entries.filter(object_id=object_id)
    if actor:
        entries = entries.filter(actor_name=actor)
    if since is not None:
        entries = entries.filter(at__gte=since)
    if until is not None:
        entries = entries.filter(at__lt=until)
    return entries.select_related("workspace").order_by("-at", "-id")
