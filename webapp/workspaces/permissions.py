"""The API's one check of workspace roles (Sentry's permission class per resource, healthchecks' 404 for outsiders).

Every API view is checked before it looks anything up:
- a view on one object (`workspace_model` names the model of the URL's `pk`, `workspace_field` the path to its
  workspace when it has none of its own) is checked against the object's workspace: an outsider gets 404, a
  member whose role does not allow the action 403;
- any other view is checked against the workspace the request names (`?workspace=`, or `"workspace"` in the
  body), or, for a change, the caller's default workspace; the workspace found is `request.workspace` (None for
  a read that names none: lists then span the caller's workspaces).

The action is the view's `workspace_actions[method]`, else reading (`policy.READ`) for GET, HEAD, OPTIONS and the
views that only read (`reads_only`), else `policy.EDIT`. What each action takes is `webapp.workspaces.policy`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import Http404
from rest_framework.permissions import SAFE_METHODS, BasePermission

from webapp.workspaces import policy, selectors
from webapp.workspaces.models import Workspace

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


def view_action(view: Any, method: str) -> str:
    declared = getattr(view, "workspace_actions", {}).get(method)
    if declared is not None:
        return declared
    if method in SAFE_METHODS or getattr(view, "reads_only", False):
        return policy.READ
    return policy.EDIT


def _id(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Http404("No such workspace.") from None
    if isinstance(value, bool) or number < 1:
        raise Http404("No such workspace.")
    return number


def named_workspace(request: Request) -> Workspace | None:
    """The workspace the request names (`?workspace=` or the body's `"workspace"`), checked to be the caller's
    (Http404 otherwise); None when it names none."""
    value = request.query_params.get("workspace")
    if value in (None, "") and isinstance(request.data, dict):
        value = request.data.get("workspace")
    if value in (None, ""):
        return None
    return selectors.workspace_get(user=request.user, pk=_id(value))


class WorkspaceRole(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user or not request.user.is_authenticated:
            return True  # IsAuthenticated answers 401
        if not hasattr(view, (request.method or "GET").lower()):
            return True  # a method the view does not have: DRF answers 405 (nothing is read or done)
        action = view_action(view, request.method or "GET")
        model = getattr(view, "workspace_model", None)
        pk = view.kwargs.get("pk") if model is not None else None
        request.workspace = None  # type: ignore[attr-defined]
        if pk is not None:
            if model is Workspace:
                workspace_id = Workspace.objects.filter(pk=pk).values_list("pk", flat=True).first()
            else:
                field = getattr(view, "workspace_field", "workspace")  # e.g. "pipeline__workspace" for an incident
                workspace_id = model.objects.filter(pk=pk).values_list(field, flat=True).first()
            if workspace_id is None:
                return True  # the view answers 404, as for an object of another workspace
            policy.require(request.user, action, workspace_id)
            request.workspace = Workspace.objects.get(pk=workspace_id)  # type: ignore[attr-defined]
            return True
        if getattr(view, "acts_in_no_workspace", False) and action != policy.READ:
            return True  # creating a workspace: its creator becomes its admin
        workspace = named_workspace(request)
        if workspace is None and action != policy.READ:
            workspace = selectors.workspace_default(user=request.user)
        if workspace is not None:
            policy.require(request.user, action, workspace)
        request.workspace = workspace  # type: ignore[attr-defined]
        return True
