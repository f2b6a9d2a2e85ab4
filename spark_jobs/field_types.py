"""The field types, each described once: the one table the spec, the engine, the web app's schema inference,
the wizard's type lists and the API's choices read. No Spark, no Django.

A new field type is one `FieldTypeInfo` entry here, plus its conversion from JSON text in
`spark_jobs.transforms.convert_text` (Spark code, which cannot live in a module the web app imports; the engine
refuses to start when a type has no conversion).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from spark_jobs.clickhouse_types import (
    DECIMAL_NAMES,
    FLOAT_NAMES,
    INTEGER_NAMES,
    STRING_NAMES,
    ClickHouseType,
    parse_clickhouse_type,
)

# The one UUID pattern (canonical 8-4-4-4-12 hex): schema inference, the engine's parsing and its UUID columns.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
UUID_RE = re.compile(UUID_PATTERN)
# A datetime field's text that is a number: epoch seconds, or milliseconds from 1e11 on (Java regex syntax too).
EPOCH_NUMBER_PATTERN = r"^\s*-?[0-9]+(\.[0-9]+)?\s*$"
# ISO-8601 date-times with a date and a time (what inference calls `datetime`; Spark's cast accepts them).
DATETIME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?\s*(Z|[+-]\d{2}(:?\d{2})?|UTC)?$", re.IGNORECASE
)


def _is_uuid_text(value: Any) -> bool:
    if not isinstance(value, str) or not UUID_RE.match(value):
        return False
    try:
        uuid.UUID(value)
    except ValueError:  # pragma: no cover - the pattern only lets valid UUIDs through
        return False
    return True


def _is_datetime_text(value: Any) -> bool:
    if not isinstance(value, str) or not DATETIME_RE.match(value.strip()):
        return False
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00").replace("UTC", "+00:00")
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class FieldTypeInfo:
    name: str
    label: str  # what the wizard shows next to the name
    spark_type: str  # Spark SQL type of a parsed value (and of a computed field's result)
    default_clickhouse_type: str  # the column type proposed for a new table (Nullable added when optional)
    compatible: frozenset[str]  # ClickHouse base types (no Nullable/LowCardinality) its values can be written to
    always_fits: frozenset[str]  # base types every parsed value fits: the engine does not check them again
    infer: Callable[[Any], bool]  # does this JSON value (not null) look like this type? Tried in table order
    offered_columns: tuple[str, ...]  # column types the wizard offers for a new table (with Nullable forms)
    widens_to: str | None = None  # mixed with its `widens_to` (or a type with the same one) infers as that


_TEXT_TARGETS = (
    STRING_NAMES
    | {"UUID", "IPv4", "IPv6", "Date", "Date32", "DateTime", "DateTime64", "JSON", "Bool"}
    | INTEGER_NAMES
    | FLOAT_NAMES
    | DECIMAL_NAMES
)

# In the order users see them. Exactly one `infer` accepts a JSON value (json, last, takes what no other does).
FIELD_TYPE_TABLE: tuple[FieldTypeInfo, ...] = (
    FieldTypeInfo(
        name="string",
        label="string",
        spark_type="string",
        default_clickhouse_type="String",
        compatible=frozenset(_TEXT_TARGETS),
        always_fits=frozenset({"String"}),
        infer=lambda v: isinstance(v, str) and not _is_uuid_text(v) and not _is_datetime_text(v),
        offered_columns=("String", "LowCardinality(String)"),
    ),
    FieldTypeInfo(
        name="int",
        label="int (whole number)",
        spark_type="bigint",
        default_clickhouse_type="Int64",
        compatible=frozenset(
            INTEGER_NAMES | FLOAT_NAMES | DECIMAL_NAMES | STRING_NAMES | {"Bool", "DateTime", "DateTime64"}
        ),
        always_fits=frozenset({"Int64"}),
        infer=lambda v: isinstance(v, int) and not isinstance(v, bool),
        offered_columns=("Int32", "Int64", "UInt32", "UInt64"),
        widens_to="float",
    ),
    FieldTypeInfo(
        name="float",
        label="float (decimal number)",
        spark_type="double",
        default_clickhouse_type="Float64",
        compatible=frozenset(FLOAT_NAMES | DECIMAL_NAMES | STRING_NAMES),
        always_fits=frozenset({"Float64"}),
        infer=lambda v: isinstance(v, float),
        offered_columns=("Float32", "Float64"),
    ),
    FieldTypeInfo(
        name="bool",
        label="bool (true/false)",
        spark_type="boolean",
        default_clickhouse_type="Bool",
        compatible=frozenset({"Bool", "UInt8", "Int8"} | STRING_NAMES),
        always_fits=frozenset({"Bool"}),
        infer=lambda v: isinstance(v, bool),
        offered_columns=("Bool",),
    ),
    FieldTypeInfo(
        name="datetime",
        label="datetime (ISO-8601 or epoch)",
        spark_type="timestamp",
        default_clickhouse_type="DateTime64(3, 'UTC')",
        compatible=frozenset({"DateTime", "DateTime64", "Date", "Date32"} | STRING_NAMES),
        always_fits=frozenset({"DateTime64"}),
        infer=_is_datetime_text,
        offered_columns=("Date", "DateTime", "DateTime64(3, 'UTC')"),
        widens_to="string",
    ),
    FieldTypeInfo(
        name="uuid",
        label="uuid",
        spark_type="string",
        default_clickhouse_type="UUID",
        compatible=frozenset({"UUID"} | STRING_NAMES),
        always_fits=frozenset({"UUID", "String"}),
        infer=_is_uuid_text,
        offered_columns=("UUID",),
        widens_to="string",
    ),
    FieldTypeInfo(
        name="json",
        label="json (object, list or mixed)",
        spark_type="string",
        default_clickhouse_type="String",
        compatible=frozenset({"JSON", "String"}),
        always_fits=frozenset({"String"}),
        infer=lambda v: True,
        offered_columns=("JSON",),
    ),
)
FIELD_TYPE_INFO: dict[str, FieldTypeInfo] = {t.name: t for t in FIELD_TYPE_TABLE}

FIELD_TYPES: tuple[str, ...] = tuple(FIELD_TYPE_INFO)
# The spec's `type` of a field or computed field: one of the table's names (pydantic checks it).
FieldType = Literal[FIELD_TYPES]  # type: ignore[valid-type]
# The column types the wizard offers for a new table: each type's, then the Nullable forms of those that have one.
_OFFERED = tuple(dict.fromkeys(c for t in FIELD_TYPE_TABLE for c in t.offered_columns))
NEW_TABLE_COLUMN_TYPES: tuple[str, ...] = (
    *_OFFERED,
    *(f"Nullable({c})" for c in _OFFERED if not c.startswith(("LowCardinality", "JSON"))),
)
# (value, label) pairs for form selects and templates.
FIELD_TYPE_CHOICES: tuple[tuple[str, str], ...] = tuple((name, FIELD_TYPE_INFO[name].label) for name in FIELD_TYPES)


def field_type_info(field_type: str) -> FieldTypeInfo:
    try:
        return FIELD_TYPE_INFO[field_type]
    except KeyError:
        raise ValueError(f"unknown field type {field_type!r}; expected one of {', '.join(FIELD_TYPES)}") from None


def field_type_compatible(field_type: str, clickhouse_type: str | ClickHouseType) -> bool:
    """Whether values of `field_type` can be written to a column of `clickhouse_type` (False if unknown).

    Values that do not fit at run time (an "abc" into UUID, 300 into UInt8) go to the dead-letter table.
    """
    info = FIELD_TYPE_INFO.get(field_type)
    if info is None:
        return False
    try:
        parsed = (
            clickhouse_type if isinstance(clickhouse_type, ClickHouseType) else parse_clickhouse_type(clickhouse_type)
        )
    except ValueError:
        return False
    return parsed.base().name in info.compatible


def default_clickhouse_type(field_type: str) -> str:
    """The column type the wizard proposes for a field type (Nullable is added when the field is optional)."""
    return field_type_info(field_type).default_clickhouse_type


def always_fits(field_type: str, clickhouse_type: str | ClickHouseType) -> bool:
    """Whether every parsed value of `field_type` fits the column as it is (no check, no conversion)."""
    parsed = clickhouse_type if isinstance(clickhouse_type, ClickHouseType) else parse_clickhouse_type(clickhouse_type)
    return parsed.base().name in field_type_info(field_type).always_fits


def value_type(value: Any) -> str | None:
    """The field type of one JSON value; None for null."""
    if value is None:
        return None
    return next(t.name for t in FIELD_TYPE_TABLE if t.infer(value))


def merge_types(a: str | None, b: str | None) -> str | None:
    """The narrowest type holding both (None is 'not seen yet'): int+float is float, string/uuid/datetime
    mixed are string, anything else mixed is json."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    wide_a, wide_b = FIELD_TYPE_INFO[a].widens_to, FIELD_TYPE_INFO[b].widens_to
    if wide_a == b:
        return b
    if wide_b == a:
        return a
    if wide_a is not None and wide_a == wide_b:
        return wide_a
    return "json"


__all__ = [
    "DATETIME_RE",
    "EPOCH_NUMBER_PATTERN",
    "FIELD_TYPES",
    "FIELD_TYPE_CHOICES",
    "FIELD_TYPE_INFO",
    "FIELD_TYPE_TABLE",
    "NEW_TABLE_COLUMN_TYPES",
    "UUID_PATTERN",
    "UUID_RE",
    "FieldType",
    "FieldTypeInfo",
    "always_fits",
    "default_clickhouse_type",
    "field_type_compatible",
    "field_type_info",
    "merge_types",
    "value_type",
]
