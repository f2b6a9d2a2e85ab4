"""The data step of the migrations that gave connections, pipelines, alert channels, audited tables and API tokens
a workspace: each owner's objects move into a workspace of their own, with the owner as its admin.

Each app's migration runs `move_into_owners_workspaces` for its models; the first one to meet an owner creates
their workspace, the next ones find it (the owner's oldest admin membership), so an owner gets one workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def owners_workspace(apps: Any, user_id: int) -> Any:
    Membership = apps.get_model("workspaces", "Membership")
    Workspace = apps.get_model("workspaces", "Workspace")
    membership = Membership.objects.filter(user_id=user_id, role="admin").order_by("id").first()
    if membership is not None:
        return membership.workspace
    username = apps.get_model("auth", "User").objects.get(pk=user_id).username
    workspace = Workspace.objects.create(name=f"{username}'s workspace"[:100])
    Membership.objects.create(workspace=workspace, user_id=user_id, role="admin")
    return workspace


def move_into_owners_workspaces(app_label: str, model_name: str, owner_field: str = "owner") -> Callable:
    """A RunPython function: every object of the model without a workspace goes to its owner's workspace."""

    def forwards(apps: Any, schema_editor: Any) -> None:
        model = apps.get_model(app_label, model_name)
        pending = model.objects.filter(workspace__isnull=True)
        for user_id in pending.values_list(f"{owner_field}_id", flat=True).distinct().order_by(f"{owner_field}_id"):
            workspace = owners_workspace(apps, user_id)
            pending.filter(**{f"{owner_field}_id": user_id}).update(workspace=workspace)

    return forwards
