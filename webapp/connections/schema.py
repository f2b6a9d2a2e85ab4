"""Infer a flat field list from sampled JSON events: nested paths joined with dots, one type per path.

The types, and how one JSON value's type is recognised and two are merged, are the engine's field-type table
(`spark_jobs.field_types`): strings that all parse as ISO-8601 date-times are `datetime`, canonical UUIDs
`uuid`; lists and values whose type varies beyond int/float become `json`. A path missing from some events,
or null in some, is `nullable`. Pure functions, no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.field_types import FIELD_TYPES, merge_types, value_type

__all__ = ["FIELD_TYPES", "InferredField", "flatten", "infer_schema", "merge_types", "value_type"]

MAX_EXAMPLES = 3


@dataclass
class InferredField:
    path: str
    type: str
    nullable: bool
    present: int  # in how many of the sampled objects the path had a non-null value
    examples: list[Any] = field(default_factory=list)


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
