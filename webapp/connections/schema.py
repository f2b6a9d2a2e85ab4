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
