"""API token services, selectors and authentication (django-rest-knox, hashed; see `webapp.api.models`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from knox.auth import TokenAuthentication

from webapp.activity.services import activity_record
from webapp.api.models import ApiToken
from webapp.workspaces import policy
from webapp.workspaces.models import Workspace
from webapp.workspaces.services import workspace_for_new_objects

# Writing `last_used` on every request would turn each read into a write; once a minute is precise enough.
LAST_USED_PRECISION = timedelta(minutes=1)
MAX_TOKENS_PER_USER = 50


def api_token_list(*, user: AbstractBaseUser, workspace: Workspace | None = None) -> QuerySet[ApiToken]:
    """The user's own tokens (of one workspace, when given)."""
    tokens = ApiToken.objects.filter(user=user).select_related("workspace")
    return tokens if workspace is None else tokens.filter(workspace=workspace)


def api_token_get(*, user: AbstractBaseUser, pk: int) -> ApiToken:
    """The user's token; ApiToken.DoesNotExist for someone else's (callers answer 404)."""
    return ApiToken.objects.get(user=user, pk=pk)


@transaction.atomic
def api_token_create(
    *,
    user: AbstractBaseUser,
    name: str,
    expires_in_days: int | None = None,
    read_only: bool = False,
    workspace: Workspace | None = None,
) -> tuple[ApiToken, str]:
    """A new token for `user` in `workspace` (the user's default one when None), acting there with the user's
    role (`read_only`: as a viewer); returns the model and the token text, which is never available again."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "Give the token a name, e.g. the script or machine that uses it."})
    if api_token_list(user=user).count() >= MAX_TOKENS_PER_USER:
        raise ValidationError({"name": f"You have {MAX_TOKENS_PER_USER} tokens; revoke one first."})
    expiry = timedelta(days=expires_in_days) if expires_in_days else None
    workspace = workspace_for_new_objects(user=user, workspace=workspace)
    token, text = ApiToken.objects.create(
        user=user, expiry=expiry, name=name[:100], read_only=read_only, workspace=workspace
    )
    activity_record(
        actor=user,
        action="token.create",
        workspace=workspace,
        target=token,
        after={"name": token.name, "read_only": read_only, "expiry": token.expiry},
    )
    return token, text


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: Any = None) -> None:
    activity_record(
        actor=actor,
        action="token.revoke",
        workspace=token.workspace,
        target=token,
        before={"name": token.name, "read_only": token.read_only},
    )
    token.delete()


class ApiTokenAuthentication(TokenAuthentication):
    """knox's `Authorization: Token <token>`, recording when each token was last used."""

    def validate_user(self, auth_token: ApiToken) -> tuple:
        user, token = super().validate_user(auth_token)
        policy.bind_token(user, token)  # the policy limits the request to the token's workspace and role
        now = timezone.now()
        if token.last_used is None or now - token.last_used > LAST_USED_PRECISION:
            ApiToken.objects.filter(pk=token.pk).update(last_used=now)
            token.last_used = now
        return user, token
