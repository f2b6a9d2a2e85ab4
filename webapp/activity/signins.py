"""Sign-ins in the activity log, from Django's auth signals (django-axes counts failures from the same signal).

A sign-in belongs to no workspace: a workspace's log shows its members' sign-ins to its admins
(`webapp.activity.selectors.activity_list`). A failed sign-in names the user tried; when that user exists the
entry is theirs, so they (and their admins) see attempts on their account.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver

from webapp.activity.models import ActivityEntry
from webapp.core.logins import client_address


@receiver(user_logged_in, dispatch_uid="activity_sign_in")
def record_sign_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    ActivityEntry.objects.create(
        actor=user,
        actor_name=user.get_username(),
        action="sign_in",
        object_type="user",
        object_id=user.pk,
        object_name=user.get_username(),
        after={"address": client_address(request) if request is not None else ""},
    )


@receiver(user_login_failed, dispatch_uid="activity_sign_in_failed")
def record_failed_sign_in(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    name = str(credentials.get("username") or "")[:150]
    user = get_user_model().objects.filter(username=name).first() if name else None
    ActivityEntry.objects.create(
        actor=user,
        actor_name=name,
        action="sign_in.failed",
        object_type="user",
        object_id=user.pk if user is not None else None,
        object_name=name,
        after={"address": client_address(request) if request is not None else ""},
    )
