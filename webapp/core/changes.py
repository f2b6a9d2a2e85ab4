"""What differs between two JSON values, path by path: the answer of the API's "diff" operations.

Paths are written as everywhere in the API (`spec.sink.columns[2].type`): dots between object keys, `[i]` for
list items. A key present on one side only is a change from or to None (`null`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    path: str
    current: Any  # None: not set now
    proposed: Any  # None: would be removed
    secret: bool = False  # a secret's change: both values are None, never the secret


def _key_path(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def json_changes(current: Any, proposed: Any, prefix: str = "") -> list[Change]:
    """Leaf-level differences between two JSON values (objects by key, lists by position), in document order."""
    if isinstance(current, dict) and isinstance(proposed, dict):
        changes: list[Change] = []
        for key in [*current, *(k for k in proposed if k not in current)]:
            changes += json_changes(current.get(key), proposed.get(key), _key_path(prefix, str(key)))
        return changes
    if isinstance(current, list) and isinstance(proposed, list):
        changes = []
        for index in range(max(len(current), len(proposed))):
            old = current[index] if index < len(current) else None
            new = proposed[index] if index < len(proposed) else None
            changes += json_changes(old, new, f"{prefix}[{index}]")
        return changes
    if current == proposed and type(current) is type(proposed):
        return []
    return [Change(prefix, current, proposed)]
