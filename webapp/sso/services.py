"""Users and memberships from the provider's claims: the one place a single sign-on user is made and given roles.

A user is found by the provider's (issuer, subject); a new one gets the provider's user name when it is free
(else the name with a number), no usable password, and the provider's email and names. In each workspace the
group mapping names (`config.group_roles`), the provider decides the user's role: the highest role of their
groups there, and no membership when none of their groups maps to it. Other workspaces are left as their admins
set them. A workspace the mapping names that does not exist yet is created on the first sign-in that needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction

from webapp.activity.services import activity_record
from webapp.sso import config
from webapp.sso.models import OidcIdentity
from webapp.workspaces.models import Membership, Role, Workspace
from webapp.workspaces.policy import ROLE_RANK

logger = logging.getLogger(__name__)
USERNAME_CLAIMS = ("preferred_username", "email", "sub")


def claim_groups(claims: Mapping[str, Any]) -> list[str]:
    """The groups the configured claim carries (a list, or one string), without Keycloak's leading slash."""
    value = claims.get(settings.CLEARFLOW_OIDC_GROUPS_CLAIM) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return []
    return sorted({str(group).lstrip("/") for group in value if str(group).strip()})


def _free_username(wanted: str) -> str:
    User = get_user_model()
    base = (wanted or "user")[:140]
    name, number = base, 1
    while User.objects.filter(username=name).exists():
        number += 1
        name = f"{base}-{number}"
    return name


@transaction.atomic
def sso_user_for_claims(*, claims: Mapping[str, Any], groups: Sequence[str] | None = None) -> Any:
    """The user the claims describe (made on first sight), their memberships synced to their groups."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise PermissionDenied("The provider's answer has no subject (sub): it cannot be matched to a user.")
    issuer = config.issuer()
    groups = sorted(groups) if groups is not None else claim_groups(claims)
    identity = OidcIdentity.objects.select_for_update().select_related("user").filter(issuer=issuer, subject=subject)
    found = identity.first()
    if found is None:
        wanted = next((str(claims[name]) for name in USERNAME_CLAIMS if claims.get(name)), subject)
        user = get_user_model().objects.create_user(
            _free_username(wanted.split("@")[0] if wanted == claims.get("email") else wanted),
            email=str(claims.get("email") or ""),
            first_name=str(claims.get("given_name") or "")[:150],
            last_name=str(claims.get("family_name") or "")[:150],
        )
        user.set_unusable_password()
        user.save(update_fields=["password"])
        found = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject, groups=groups)
        sso_memberships_sync(user=user, groups=groups)
        return user
    if not found.user.is_active:
        raise PermissionDenied(f"{found.user.get_username()} is deactivated in ClearFlow.")
    if found.groups != groups:
        found.groups = groups
        found.save(update_fields=["groups", "last_seen"])
        sso_memberships_sync(user=found.user, groups=groups)
    return found.user


def _workspace_named(name: str) -> Workspace:
    workspace = Workspace.objects.filter(name=name).order_by("id").first()
    if workspace is None:
        workspace = Workspace.objects.create(name=name)
        activity_record(
            actor=None, action="workspace.create", workspace=workspace, target=workspace, after={"name": name}
        )
    return workspace


@transaction.atomic
def sso_memberships_sync(*, user: Any, groups: Sequence[str]) -> None:
    """Give `user` in each mapped workspace the highest role their groups map to there (none: not a member).
    A workspace's last admin keeps the role (a workspace always has an admin): the log says so."""
    wanted: dict[str, Role | None] = {}
    for entry in config.group_roles():
        current = wanted.get(entry.workspace)
        if entry.group in groups and (current is None or ROLE_RANK[entry.role] > ROLE_RANK[current]):
            wanted[entry.workspace] = entry.role
        else:
            wanted.setdefault(entry.workspace, None)
    for name, role in wanted.items():
        workspace = _workspace_named(name)
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()  # one change of admins at once
        membership = Membership.objects.filter(workspace=workspace, user=user).first()
        old = membership.role if membership is not None else None
        if old == role:
            continue
        sole_admin = old == Role.ADMIN and Membership.objects.filter(workspace=workspace, role=Role.ADMIN).count() == 1
        if sole_admin:
            logger.warning("%s stays admin of %s: it has no other admin", user.get_username(), name)
            continue
        if role is None and membership is not None:
            activity_record(
                actor=None,
                action="member.remove",
                workspace=workspace,
                target=membership,
                object_name=user.get_username(),
                before={"role": old},
                after={"by": "single sign-on"},
            )
            membership.delete()
        elif membership is None:
            membership = Membership.objects.create(workspace=workspace, user=user, role=role)
            activity_record(
                actor=None,
                action="member.add",
                workspace=workspace,
                target=membership,
                object_name=user.get_username(),
                after={"role": role, "by": "single sign-on"},
            )
        else:
            membership.role = role
            membership.save(update_fields=["role"])
            activity_record(
                actor=None,
                action="member.role_change",
                workspace=workspace,
                target=membership,
                object_name=user.get_username(),
                before={"role": old},
                after={"role": role, "by": "single sign-on"},
            )
