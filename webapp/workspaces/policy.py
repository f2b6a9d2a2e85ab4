"""Who may do what in a workspace: the one policy the API, the pages, the admin and the CLI all ask.

A caller is a user, or a user through an API token. A user's role comes from their membership; a token belongs to
one workspace of its user and acts with that user's role there (never more: a demotion demotes the token too),
read-only tokens as viewers. Outside their workspaces a caller sees nothing: the answer is the same 404 as for an
object that does not exist. A member whose role does not allow an action is refused with 403 and a sentence that
names the role it takes (`require`).

`ACTIONS` is the table: each action by name, and the least role that may do it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from webapp.workspaces.models import Membership, Role, Workspace

ROLE_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.ADMIN: 3}

READ = "workspace.read"
EDIT = "workspace.edit"  # any change an editor may make that has no name of its own below
ACTIONS: dict[str, Role] = {
    READ: Role.VIEWER,
    "dead_letter.payload": Role.VIEWER,  # unless the workspace hides payloads from viewers (see `may`)
    "token.create": Role.VIEWER,  # a viewer's token reads only: a token never exceeds its user's role
    "token.revoke": Role.VIEWER,  # one's own tokens
    EDIT: Role.EDITOR,
    "connection.create": Role.EDITOR,
    "connection.edit": Role.EDITOR,
    "connection.delete": Role.EDITOR,
    "pipeline.create": Role.EDITOR,
    "pipeline.edit": Role.EDITOR,
    "pipeline.deploy": Role.EDITOR,
    "pipeline.stop": Role.EDITOR,
    "pipeline.resume": Role.EDITOR,
    "pipeline.delete": Role.EDITOR,
    "dead_letter.replay": Role.EDITOR,
    "alert.edit": Role.EDITOR,
    "audit.edit": Role.EDITOR,
    "connection.secret": Role.ADMIN,  # changing a saved connection's password, key or webhook URL
    "dead_letter.purge": Role.ADMIN,
    "pipeline.checkpoint_reset": Role.ADMIN,
    "member.manage": Role.ADMIN,
    "workspace.settings": Role.ADMIN,
    "activity.read": Role.VIEWER,
}

_BOUND_CREDENTIAL = "clearflow_api_token"


def bind_token(user: AbstractBaseUser, token: Any) -> None:
    """Remember on the request's user the API token it authenticated with (`webapp.api.tokens`): the policy then
    limits the user to the token's workspace and role."""
    setattr(user, _BOUND_CREDENTIAL, token)


def token_of(user: Any) -> Any:
    """The API token the request's user authenticated with; None for a browser session."""
    return getattr(user, _BOUND_CREDENTIAL, None)


def visible_workspaces(user: Any) -> QuerySet[Workspace]:
    """The workspaces the caller sees: those the user is a member of (the token's one only, through a token)."""
    if user is None or not user.is_authenticated:
        return Workspace.objects.none()
    workspaces = Workspace.objects.filter(memberships__user=user)
    token = token_of(user)
    if token is not None:
        workspaces = workspaces.filter(pk=token.workspace_id)
    return workspaces


def role_of(user: Any, workspace: Workspace | int) -> Role | None:
    """The caller's role in the workspace; None for an outsider."""
    if user is None or not user.is_authenticated:
        return None
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    token = token_of(user)
    if token is not None and token.workspace_id != workspace_id:
        return None
    role = Membership.objects.filter(workspace_id=workspace_id, user=user).values_list("role", flat=True).first()
    if role is None:
        return None
    if token is not None and token.read_only:
        return Role.VIEWER
    return Role(role)


def role_allows(role: Role | str | None, action: str) -> bool:
    return role is not None and ROLE_RANK[Role(role)] >= ROLE_RANK[ACTIONS[action]]


def may(user: Any, action: str, workspace: Workspace | int) -> bool:
    """Whether the caller may do `action` (a key of ACTIONS) in the workspace."""
    role = role_of(user, workspace)
    if action == "dead_letter.payload" and role == Role.VIEWER:
        hidden = Workspace.objects.filter(
            pk=workspace if isinstance(workspace, int) else workspace.pk, hide_dead_letter_payloads=True
        ).exists()
        return not hidden
    return role_allows(role, action)


def refusal(action: str) -> str:
    """The sentence a member gets when their role does not allow `action`."""
    needed = ACTIONS[action]
    return (
        f"Your role in this workspace does not allow this ({action}): it takes the {needed.label.lower()} role. "
        "Ask an admin of the workspace to change your role."
    )


def require(user: Any, action: str, workspace: Workspace | int) -> None:
    """Nothing when the caller may do `action` in the workspace; Http404 for an outsider (as if nothing were
    there), PermissionDenied (403, with the reason) for a member whose role does not allow it."""
    if action not in ACTIONS:
        raise KeyError(f"{action!r} is not an action of webapp.workspaces.policy.ACTIONS")
    role = role_of(user, workspace)
    if role is None:
        raise Http404("No such object.")
    if not may(user, action, workspace):
        token = token_of(user)
        if token is not None and token.read_only and role_allows(_membership_role(user, workspace), action):
            raise PermissionDenied(
                "This API token is read-only: it cannot change anything. Use a token created without 'read only'."
            )
        raise PermissionDenied(refusal(action))


def _membership_role(user: Any, workspace: Workspace | int) -> str | None:
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    return Membership.objects.filter(workspace_id=workspace_id, user=user).values_list("role", flat=True).first()
