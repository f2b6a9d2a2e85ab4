"""Writing the activity log (`activity_record`, called by each service beside its change) and keeping it for
`CLEARFLOW_ACTIVITY_DAYS` days (`activity_prune`, run hourly by the beat)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from webapp.activity.models import ActivityEntry
from webapp.workspaces import policy

MASK = "********"  # a secret that is set; "" stays "" (not set), so a reader sees that it changed, never what to


def _plain(value: Any) -> Any:
    """A value as JSON keeps it (related objects by id, times as ISO text)."""
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str | int | float | bool | list | dict) or value is None:
        return value
    return str(value)


def snapshot(instance: models.Model, fields: Iterable[str], secret_fields: Iterable[str] = ()) -> dict[str, Any]:
    """The instance's `fields` as JSON, each secret replaced by MASK when set."""
    secrets = set(secret_fields)
    out: dict[str, Any] = {}
    for name in fields:
        value = getattr(instance, name, None)
        if name in secrets:
            out[name] = MASK if value else ""
        else:
            out[name] = _plain(value)
    return out


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the fields whose values differ, before and after (a secret replaced by another shows as MASK on both
    sides: the services that change secrets name them with `secret_changes`)."""
    keys = [key for key in after if before.get(key) != after.get(key)]
    return {key: before.get(key) for key in keys}, {key: after.get(key) for key in keys}


def secret_changes(names: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Before and after for secrets that were replaced: that they changed, never their values."""
    names = list(names)
    return {name: MASK for name in names}, {name: f"{MASK} (replaced)" for name in names}


def activity_record(
    *,
    actor: Any,
    action: str,
    workspace: Any = None,
    target: models.Model | None = None,
    object_type: str = "",
    object_name: str = "",
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> ActivityEntry:
    """One entry: `actor` is the request's user (carrying its API token, `policy.token_of`), or None for the
    system; `target` the object changed (its type, id and name are kept, so the entry outlives it)."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    token = policy.token_of(user) if user is not None else None
    if workspace is None and target is not None:
        workspace = getattr(target, "workspace", None)
    return ActivityEntry.objects.create(
        workspace=workspace,
        actor=user,
        actor_name=user.get_username() if user is not None else "",
        token=token,
        token_name=token.name if token is not None else "",
        action=action,
        object_type=object_type or (target._meta.model_name if target is not None else ""),
        object_id=target.pk if target is not None else None,
        object_name=object_name or (str(target) if target is not None else ""),
        before=_as_json(before),
        after=_as_json(after),
    )


def _as_json(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A change's values as the JSON column stores them: times and decimals as Django's encoder writes them (a
    token's expiry is a datetime)."""
    if values is None:
        return None
    return json.loads(json.dumps(dict(values), cls=DjangoJSONEncoder))


def activity_prune(*, now: datetime | None = None) -> int:
    """Delete the entries older than `CLEARFLOW_ACTIVITY_DAYS`; returns how many went."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.ACTIVITY_RETENTION_DAYS)
    deleted, _ = ActivityEntry.objects.filter(at__lt=cutoff).delete()
    return deleted
