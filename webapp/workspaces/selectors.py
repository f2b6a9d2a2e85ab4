"""Reads of workspaces and their members. `*_get` raise Http404 for a workspace the caller is not in."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.workspaces import policy
from webapp.workspaces.models import Membership, Workspace


def _pk(value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Http404(f"No such {what}.") from None


def workspace_list(*, user: Any) -> QuerySet[Workspace]:
    """The caller's workspaces by name (through an API token: the token's one)."""
    return policy.visible_workspaces(user).order_by("name", "id")


def workspace_get(*, user: Any, pk: Any) -> Workspace:
    return get_object_or_404(workspace_list(user=user), pk=_pk(pk, "workspace"))


def workspace_default(*, user: Any) -> Workspace | None:
    """Where the caller's new objects go when no workspace is named: the token's workspace, else the first the user
    joined (their own, since each user's objects moved into a workspace of their own)."""
    token = policy.token_of(user)
    if token is not None:
        return Workspace.objects.get(pk=token.workspace_id)
    membership = Membership.objects.filter(user=user).select_related("workspace").order_by("created_at", "id").first()
    return None if membership is None else membership.workspace


def membership_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username", "id")


def membership_get(*, workspace: Workspace, pk: Any) -> Membership:
    return get_object_or_404(membership_list(workspace=workspace), pk=_pk(pk, "member"))


def role_by_workspace(*, user: Any) -> dict[int, str]:
    """workspace id -> the user's role there, for lists that show each workspace with the caller's role."""
    return dict(Membership.objects.filter(user=user).values_list("workspace_id", "role"))
