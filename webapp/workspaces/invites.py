"""Invites: a workspace admin makes a one-time link (`invite_create`) for a new local user, who opens it, picks a
user name and password and lands in the workspace with the invite's role (`invite_accept`). A link expires
(`INVITE_DAYS` by default), works once, and only its digest is stored. Both steps are in the activity log."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from webapp.activity.services import activity_record
from webapp.core.exceptions import ApplicationError
from webapp.workspaces.models import Invite, Membership, Role, Workspace

INVITE_DAYS = 7
MAX_INVITE_DAYS = 30
MAX_PENDING_INVITES = 50


class InviteGone(ApplicationError):
    """The link was used, has expired or never existed: 410 with what to do."""

    status_code = 410
    code = "invite_gone"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def invite_pending_list(*, workspace: Workspace) -> QuerySet[Invite]:
    return Invite.objects.filter(workspace=workspace, used_at__isnull=True, expires_at__gt=timezone.now())


@transaction.atomic
def invite_create(
    *, workspace: Workspace, actor: Any, role: str, email: str = "", expires_in_days: int = INVITE_DAYS
) -> tuple[Invite, str]:
    """A new invite and its link's secret (the path `/invites/<secret>/`), which is never available again."""
    if role not in Role.values:
        raise ValidationError({"role": f"{role!r} is not a role: use viewer, editor or admin."})
    if not 1 <= expires_in_days <= MAX_INVITE_DAYS:
        raise ValidationError({"expires_in_days": f"Between 1 and {MAX_INVITE_DAYS} days."})
    if invite_pending_list(workspace=workspace).count() >= MAX_PENDING_INVITES:
        raise ValidationError(
            {"role": f"The workspace has {MAX_PENDING_INVITES} open invites; wait for some to expire."}
        )
    secret = secrets.token_urlsafe(32)
    invite = Invite(
        workspace=workspace,
        role=role,
        email=(email or "").strip(),
        digest=_digest(secret),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        expires_at=timezone.now() + timedelta(days=expires_in_days),
    )
    invite.full_clean()
    invite.save()
    activity_record(
        actor=actor,
        action="invite.create",
        workspace=workspace,
        target=invite,
        after={"role": role, "email": invite.email, "expires_at": invite.expires_at},
    )
    return invite, secret


def invite_for_link(*, secret: str) -> Invite:
    """The open invite of a link; InviteGone (in words) for a used, expired or unknown one."""
    invite = Invite.objects.select_related("workspace").filter(digest=_digest(secret or "")).first()
    if invite is None:
        raise InviteGone("This invite link is not valid: ask the workspace's admin for a new one.")
    if invite.used_at is not None:
        raise InviteGone("This invite link was used already: log in, or ask the workspace's admin for a new one.")
    if invite.expires_at <= timezone.now():
        raise InviteGone("This invite link has expired: ask the workspace's admin for a new one.")
    return invite


@transaction.atomic
def invite_accept(*, secret: str, username: str, password: str, email: str = "") -> Any:
    """Make the new user and their membership; the invite is spent (compare-and-set: one use, even at once)."""
    invite = invite_for_link(secret=secret)
    User = get_user_model()
    username = (username or "").strip()
    if not username:
        raise ValidationError({"username": "Choose a user name."})
    if User.objects.filter(username=username).exists():
        raise ValidationError({"username": f"{username!r} is taken: choose another user name."})
    user = User(username=username, email=(email or invite.email).strip())
    user.full_clean(exclude=["password"])
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ValidationError({"password": error.messages}) from error
    now = timezone.now()
    if Invite.objects.filter(pk=invite.pk, used_at__isnull=True, expires_at__gt=now).update(used_at=now) != 1:
        raise InviteGone("This invite link was used already: log in, or ask the workspace's admin for a new one.")
    user.set_password(password)
    user.save()
    Invite.objects.filter(pk=invite.pk).update(used_by=user)
    membership = Membership.objects.create(workspace=invite.workspace, user=user, role=invite.role)
    activity_record(
        actor=user,
        action="invite.accept",
        workspace=invite.workspace,
        target=invite,
        after={"username": username, "role": invite.role},
    )
    activity_record(
        actor=user,
        action="member.add",
        workspace=invite.workspace,
        target=membership,
        object_name=username,
        after={"role": invite.role, "by": "invite"},
    )
    return user
