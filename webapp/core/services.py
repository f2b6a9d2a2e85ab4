"""Helpers shared by the services of every app."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.db import models

M = TypeVar("M", bound=models.Model)


def model_update(*, instance: M, fields: Iterable[str], data: Mapping[str, Any]) -> tuple[M, bool]:
    """Set the `fields` present in `data` on `instance`, `full_clean()` and save only what changed.

    Returns the instance and whether anything changed (HackSoft's `model_update`).
    """
    changed: list[str] = []
    for name in fields:
        if name not in data:
            continue
        if getattr(instance, name) != data[name]:
            setattr(instance, name, data[name])
            changed.append(name)
    if not changed:
        return instance, False
    instance.full_clean()
    if any(f.name == "updated_at" for f in instance._meta.get_fields()):
        changed.append("updated_at")
    instance.save(update_fields=changed)
    return instance, True
