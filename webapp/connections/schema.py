"""Infer a flat field list from sampled JSON events: nested paths joined with dots, one type per path.

The types, and how one JSON value's type is recognised and two are merged, are the engine's field-type table
(`clearflow_spec.field_types`): strings that all parse as ISO-8601 date-times are `datetime`, canonical UUIDs
`uuid`; a list is an `array<T>` of its elements' merged type (objects in it `struct<...>`); values whose type
varies beyond int/float become `json`. A path missing from some events,
or null in some, is `nullable`. Pure functions, no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clearflow_spec.field_types import FIELD_TYPES, merge_types, value_type
from clearflow_spec.limits import JSON_DEPTH, SCHEMA_DEPTH, SCHEMA_FIELDS, LimitError
from clearflow_spec.protobuf_schema import registered_schema_fields

__all__ = [
    "FIELD_TYPES",
    "InferredField",
    "flatten",
    "infer_from_avro_schema",
    "infer_schema",
    "merge_types",
    "value_type",
]

MAX_EXAMPLES = 3


@dataclass
class InferredField:
    path: str
    type: str
    nullable: bool
    present: int  # in how many of the sampled objects the path had a non-null value
    examples: list[Any] = field(default_factory=list)
    # From an Avro schema: what it says ("decimal(10, 2)", "enum", "long or null") and the column proposed.
    schema_type: str | None = None
    clickhouse_type: str | None = None


def flatten(value: dict[str, Any], prefix: str = "", depth: int = 1) -> Iterable[tuple[str, Any]]:
    """(dotted path, leaf value) pairs; an empty object is a `json` leaf, lists are leaves, and objects
    nested deeper than `limits.JSON_DEPTH` levels are `json` leaves too."""
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, dict) and item and depth < JSON_DEPTH.maximum:
            yield from flatten(item, prefix=f"{path}.", depth=depth + 1)
        else:
            yield path, item


def infer_schema(values: Sequence[Any]) -> list[InferredField]:
    """Fields in first-seen order. Non-object values (plain text, numbers, arrays) are skipped. LimitError when
    the events hold more than `limits.SCHEMA_FIELDS` different paths."""
    objects = [v for v in values if isinstance(v, dict)]
    fields: dict[str, InferredField] = {}
    seen_types: dict[str, str | None] = {}
    for obj in objects:
        for path, leaf in flatten(obj):
            entry = fields.get(path)
            if entry is None:
                if len(fields) >= SCHEMA_FIELDS.maximum:
                    raise LimitError(f"the sampled events: {SCHEMA_FIELDS.exceeded()}")
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


def infer_from_avro_schema(schema: str, values: Sequence[Any]) -> list[InferredField]:
    """Fields from an Avro record schema (`clearflow_spec.avro_schema`: names, field types, nullability in the
    schema's order); the sampled, decoded `values` fill in the counts and examples only."""
    leaves: dict[str, list[Any]] = {}
    for obj in values:
        if isinstance(obj, dict):
            for path, leaf in _schema_leaves(obj):
                leaves.setdefault(path, []).append(leaf)
    fields = []
    for schema_field in registered_schema_fields(schema):
        seen = [v for v in leaves.get(schema_field.path, []) if v is not None]
        examples: list[Any] = []
        for value in seen:
            if len(examples) >= MAX_EXAMPLES:
                break
            if value not in examples:
                examples.append(value)
        fields.append(
            InferredField(
                path=schema_field.path,
                type=schema_field.type,
                nullable=schema_field.nullable,
                present=len(seen),
                examples=examples,
                schema_type=schema_field.avro_type,
                clickhouse_type=schema_field.clickhouse_type,
            )
        )
    return fields


def _schema_leaves(value: dict[str, Any], prefix: str = "", depth: int = 1) -> Iterable[tuple[str, Any]]:
    """(dotted path, value) for every key of nested objects, the objects themselves included (a record
    field read whole, e.g. a map, is a leaf of the schema). No schema field lies deeper than
    `limits.SCHEMA_DEPTH` levels, so a value nested deeper (a recursive record's data) is not looked into."""
    for key, item in value.items():
        path = f"{prefix}{key}"
        yield path, item
        if isinstance(item, dict) and depth <= SCHEMA_DEPTH.maximum:
            yield from _schema_leaves(item, prefix=f"{path}.", depth=depth + 1)
