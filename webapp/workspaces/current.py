"""The current workspace of a browser session: the one the header shows and switches, where the pages list
objects and create new ones. Kept in the session; a workspace the user has left falls back to their default."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from webapp.workspaces import policy
from webapp.workspaces.models import Role, Workspace
from webapp.workspaces.services import workspace_for_new_objects

SESSION_KEY = "clearflow_workspace"


def current_workspace(request: HttpRequest) -> Workspace:
    """The session's workspace, if the user is still a member; else the default one (a user in none gets one of
    their own)."""
    cached = getattr(request, "_current_workspace", None)
    if cached is not None:
        return cached
    workspace_id = request.session.get(SESSION_KEY)
    workspace = None
    if workspace_id is not None:
        workspace = policy.visible_workspaces(request.user).filter(pk=workspace_id).first()
    if workspace is None:
        workspace = workspace_for_new_objects(user=request.user)
        request.session[SESSION_KEY] = workspace.pk
    request._current_workspace = workspace  # type: ignore[attr-defined]
    return workspace


def current_workspace_switch(request: HttpRequest, workspace: Workspace) -> None:
    """Make `workspace` (one the caller was found to be in) the session's current workspace."""
    request.session[SESSION_KEY] = workspace.pk
    request._current_workspace = workspace  # type: ignore[attr-defined]


def header(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the header's workspace switcher (the current workspace, the caller's role there, and the
    caller's other workspaces)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not hasattr(request, "session"):
        return {}
    workspace = current_workspace(request)
    role = policy.role_of(user, workspace)
    return {
        "current_workspace": workspace,
        "current_role": role,
        "current_is_admin": role == Role.ADMIN,
        "my_workspaces": list(policy.visible_workspaces(user).order_by("name", "id")),
    }
