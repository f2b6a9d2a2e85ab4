"""Infer a flat field list from sampled JSON events: nested paths joined with dots, one type per path.

Types: string, int, float, bool, datetime, uuid, json. Strings that all parse as ISO-8601 date-times
(with a date and a time) are `datetime`; strings that all are canonical UUIDs are `uuid`. Lists and
values whose type varies beyond int/float become `json`. A path missing from some events, or null in
some, is `nullable`. Pure functions, no Django.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FIELD_TYPES = ("string", "int", "float", "bool", "datetime", "uuid", "json")

_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?\s*(Z|[+-]\d{2}(:?\d{2})?|UTC)?$", re.IGNORECASE
)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
MAX_EXAMPLES = 3


@dataclass
class InferredField:
    path: str
    type: str
    nullable: bool
    present: int  # in how many of the sampled objects the path had a non-null value
    examples: list[Any] = field(default_factory=list)


def value_type(value: Any) -> str | None:
    """The field type of one JSON value; None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        if _UUID.match(value):
            try:
                uuid.UUID(value)
                return "uuid"
            except ValueError:
                return "string"
        if _DATETIME.match(value.strip()):
            try:
                datetime.fromisoformat(
                    value.strip().replace("Z", "+00:00").replace("z", "+00:00").replace("UTC", "+00:00")
                )
                return "datetime"
            except ValueError:
                return "string"
        return "string"
    return "json"


def merge_types(a: str | None, b: str | None) -> str | None:
    """The narrowest type holding both (None is 'not seen yet')."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if {a, b} == {"int", "float"}:
        return "float"
    if {a, b} <= {"string", "datetime", "uuid"}:
        return "string"
    return "json"


MAX_DEPTH = 16


def flatten(value: dict[str, Any], prefix: str = "", depth: int = 1) -> Iterable[tuple[str, Any]]:
    """(dotted path, leaf value) pairs; an empty object is a `json` leaf, lists are leaves, and objects
    nested deeper than MAX_DEPTH levels are `json` leaves too."""
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, dict) and item and depth < MAX_DEPTH:
            yield from flatten(item, prefix=f"{path}.", depth=depth + 1)
        else:
            yield path, item


def infer_schema(values: Sequence[Any]) -> list[InferredField]:
    """Fields in first-seen order. Non-object values (plain text, numbers, arrays) are skipped."""
    objects = [v for v in values if isinstance(v, dict)]
    fields: dict[str, InferredField] = {}
    seen_types: dict[str, str | None] = {}
    for obj in objects:
        for path, leaf in flatten(obj):
            entry = fields.get(path)
            if entry is None:
                entry = fields[path] = InferredField(path=path, type="string", nullable=False, present=0)
                seen_types[path] = None
            if leaf is None:
                entry.nullable = True
                continue
            entry.present += 1
            seen_types[path] = merge_types(seen_types[path], value_type(leaf))
            if len(entry.examples) < MAX_EXAMPLES and leaf not in entry.examples:
                entry.examples.append(leaf)
    for path, entry in fields.items():
        entry.type = seen_types[path] or "string"
        if entry.present < len(objects):
            entry.nullable = True
    # A path that is both a leaf and a parent (e.g. {"a": 1} then {"a": {"b": 2}}) keeps both entries.
    return list(fields.values())


@dataclass(frozen=True)
class KeyStats:
    total: int  # sampled values
    missing: int  # values where any key path is absent or null (or the value is not an object)
    duplicates: int  # values whose key was already seen earlier in the sample
    distinct: int  # distinct keys


_MISSING = object()


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted path, or `_MISSING`."""
    current = value
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current


def key_stats(values: Sequence[Any], key_paths: Sequence[str]) -> KeyStats:
    seen: set[str] = set()
    missing = duplicates = 0
    for value in values:
        parts = [lookup(value, path) for path in key_paths]
        if not key_paths or any(p is _MISSING or p is None for p in parts):
            missing += 1
            continue
        key = repr(parts)
        if key in seen:
            duplicates += 1
        else:
            seen.add(key)
    return KeyStats(total=len(values), missing=missing, duplicates=duplicates, distinct=len(seen))
