"""Writes of workspaces and memberships. Each change is recorded in the activity log in its transaction.

The callers (API, pages) have asked the policy first (`member.manage`, `workspace.settings`); the rule that a
workspace keeps at least one admin is kept here, for every caller.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from webapp.activity.services import activity_record
from webapp.core.exceptions import ConflictError
from webapp.workspaces import selectors
from webapp.workspaces.models import Membership, Role, Workspace

MAX_WORKSPACES_PER_USER = 100


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "Give the workspace a name, e.g. the team's."})
    if len(name) > 100:
        raise ValidationError({"name": "At most 100 characters."})
    return name


@transaction.atomic
def workspace_create(*, user: Any, name: str) -> Workspace:
    """A new workspace with `user` as its admin."""
    name = _clean_name(name)
    if Membership.objects.filter(user=user).count() >= MAX_WORKSPACES_PER_USER:
        raise ValidationError({"name": f"You are in {MAX_WORKSPACES_PER_USER} workspaces; leave one first."})
    workspace = Workspace.objects.create(name=name)
    Membership.objects.create(workspace=workspace, user=user, role=Role.ADMIN)
    activity_record(actor=user, action="workspace.create", workspace=workspace, target=workspace, after={"name": name})
    return workspace


@transaction.atomic
def workspace_update(*, workspace: Workspace, actor: Any, data: dict[str, Any]) -> Workspace:
    """The workspace's name and settings (`hide_dead_letter_payloads`)."""
    before = {"name": workspace.name, "hide_dead_letter_payloads": workspace.hide_dead_letter_payloads}
    if "name" in data:
        workspace.name = _clean_name(data["name"])
    if "hide_dead_letter_payloads" in data:
        workspace.hide_dead_letter_payloads = bool(data["hide_dead_letter_payloads"])
    workspace.save()
    after = {"name": workspace.name, "hide_dead_letter_payloads": workspace.hide_dead_letter_payloads}
    if before != after:
        activity_record(actor=actor, action="workspace.settings", target=workspace, before=before, after=after)
    return workspace


def workspace_for_new_objects(*, user: Any, workspace: Workspace | None = None) -> Workspace:
    """Where a new object of `user` goes: `workspace` when given (the caller checked the policy), else the user's
    default workspace; a user in no workspace yet (made in the admin, or by `createsuperuser`) gets one of their
    own, as every owner did when workspaces came."""
    if workspace is not None:
        return workspace
    found = selectors.workspace_default(user=user)
    if found is not None:
        return found
    return workspace_personal_create(user=user)


@transaction.atomic
def workspace_personal_create(*, user: Any) -> Workspace:
    workspace = Workspace.objects.create(name=f"{user.get_username()}'s workspace"[:100])
    Membership.objects.create(workspace=workspace, user=user, role=Role.ADMIN)
    return workspace


def _find_user(username_or_email: str) -> Any:
    text = (username_or_email or "").strip()
    User = get_user_model()
    users = list(User.objects.filter(Q(username=text) | Q(email__iexact=text), is_active=True)[:2]) if text else []
    if len(users) != 1:
        reason = "several users have that email; give the username" if users else "no active user has that name"
        raise ValidationError({"username": f"{text!r}: {reason}. An operator creates users in the admin."})
    return users[0]


def _admins(workspace: Workspace) -> int:
    return Membership.objects.filter(workspace=workspace, role=Role.ADMIN).count()


@transaction.atomic
def member_add(*, workspace: Workspace, actor: Any, username: str, role: str) -> Membership:
    """Add the user of that username (or email) with `role`."""
    if role not in Role.values:
        raise ValidationError({"role": f"{role!r} is not a role: use viewer, editor or admin."})
    user = _find_user(username)
    if Membership.objects.filter(workspace=workspace, user=user).exists():
        raise ConflictError(f"{user.get_username()} is already a member; change their role instead.")
    membership = Membership.objects.create(workspace=workspace, user=user, role=role)
    activity_record(
        actor=actor,
        action="member.add",
        workspace=workspace,
        target=membership,
        object_name=user.get_username(),
        after={"role": role},
    )
    return membership


@transaction.atomic
def member_role_change(*, membership: Membership, actor: Any, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"{role!r} is not a role: use viewer, editor or admin."})
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    old = membership.role
    if old == role:
        return membership
    Workspace.objects.select_for_update().filter(pk=membership.workspace_id).first()  # one change of admins at once
    if old == Role.ADMIN and _admins(membership.workspace) == 1:
        raise ConflictError(
            f"{membership.user.get_username()} is the workspace's last admin: make another member admin first."
        )
    membership.role = role
    membership.save(update_fields=["role"])
    activity_record(
        actor=actor,
        action="member.role_change",
        workspace=membership.workspace,
        target=membership,
        object_name=membership.user.get_username(),
        before={"role": old},
        after={"role": role},
    )
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, actor: Any) -> None:
    Workspace.objects.select_for_update().filter(pk=membership.workspace_id).first()
    membership = Membership.objects.select_related("user", "workspace").get(pk=membership.pk)
    if membership.role == Role.ADMIN and _admins(membership.workspace) == 1:
        raise ConflictError(
            f"{membership.user.get_username()} is the workspace's last admin and cannot be removed: "
            "make another member admin first."
        )
    activity_record(
        actor=actor,
        action="member.remove",
        workspace=membership.workspace,
        target=membership,
        object_name=membership.user.get_username(),
        before={"role": membership.role},
    )
    membership.delete()
