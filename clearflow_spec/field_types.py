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
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator

from clearflow_spec.clickhouse_types import (
    DECIMAL_NAMES,
    ENUM_NAMES,
    FLOAT_NAMES,
    INTEGER_NAMES,
    STRING_NAMES,
    ClickHouseType,
    parse_clickhouse_type,
)
from clearflow_spec.nested_types import (
    FieldShape,
    infer_shape,
    merge_shapes,
    parse_shape,
    shape_clickhouse_type,
    shape_compatible,
    shape_spark_type,
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
    | ENUM_NAMES
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
_SCALARS = frozenset(FIELD_TYPES)


@lru_cache(maxsize=4096)
def field_type_shape(field_type: str) -> FieldShape:
    """A field type parsed: one of the table's names, or `array<T>`, `map<string,T>`, `struct<name:T,...>` over
    them (Spark's DDL spelling). ValueError in words for anything else."""
    return parse_shape(field_type, _SCALARS)


def field_type_text(value: str) -> str:
    """A field type in its one spelling (pydantic's check of the spec's `type`): `Array< int >` is `array<int>`."""
    if value in FIELD_TYPE_INFO:
        return value
    return field_type_shape(value).ddl()


# The spec's `type` of a field or computed field: a field type in its one spelling (pydantic checks it).
FieldType = Annotated[str, AfterValidator(field_type_text)]
# The column types the wizard offers for a new table: each type's, then the Nullable forms of those that have one.
_OFFERED = tuple(dict.fromkeys(c for t in FIELD_TYPE_TABLE for c in t.offered_columns))
NEW_TABLE_COLUMN_TYPES: tuple[str, ...] = (
    *_OFFERED,
    *(f"Nullable({c})" for c in _OFFERED if not c.startswith(("LowCardinality", "JSON"))),
)
# (value, label) pairs for form selects and templates.
FIELD_TYPE_CHOICES: tuple[tuple[str, str], ...] = tuple((name, FIELD_TYPE_INFO[name].label) for name in FIELD_TYPES)


def field_type_info(field_type: str) -> FieldTypeInfo:
    """A scalar type's entry in the table (a nested type has none: see `field_type_shape`)."""
    try:
        return FIELD_TYPE_INFO[field_type]
    except KeyError:
        raise ValueError(f"unknown field type {field_type!r}; expected one of {', '.join(FIELD_TYPES)}") from None


def is_nested(field_type: str) -> bool:
    return field_type not in FIELD_TYPE_INFO and field_type_shape(field_type).nested


def field_spark_type(field_type: str) -> str:
    """The Spark SQL type of a parsed value (and of a computed field's result): `array<bigint>` for `array<int>`."""
    info = FIELD_TYPE_INFO.get(field_type)
    if info is not None:
        return info.spark_type
    return shape_spark_type(field_type_shape(field_type), lambda name: FIELD_TYPE_INFO[name].spark_type)


def _parsed(clickhouse_type: str | ClickHouseType) -> ClickHouseType:
    return clickhouse_type if isinstance(clickhouse_type, ClickHouseType) else parse_clickhouse_type(clickhouse_type)


def _scalar_compatible(field_type: str, clickhouse_type: ClickHouseType) -> bool:
    return clickhouse_type.base().name in FIELD_TYPE_INFO[field_type].compatible


def field_type_compatible(field_type: str, clickhouse_type: str | ClickHouseType) -> bool:
    """Whether values of `field_type` can be written to a column of `clickhouse_type` (False if unknown).

    Values that do not fit at run time (an "abc" into UUID, 300 into UInt8, an array element too) go to the
    dead-letter table.
    """
    try:
        parsed = _parsed(clickhouse_type)
        shape = field_type_shape(field_type)
    except ValueError:
        return False
    return shape_compatible(shape, parsed, _scalar_compatible)


def default_clickhouse_type(field_type: str) -> str:
    """The column type the wizard proposes for a field type (Nullable is added when the field is optional)."""
    info = FIELD_TYPE_INFO.get(field_type)
    if info is not None:
        return info.default_clickhouse_type
    return shape_clickhouse_type(
        field_type_shape(field_type), lambda name: FIELD_TYPE_INFO[name].default_clickhouse_type
    )


def always_fits(field_type: str, clickhouse_type: str | ClickHouseType) -> bool:
    """Whether every parsed value of `field_type` fits the column as it is (no check, no conversion)."""
    info = FIELD_TYPE_INFO.get(field_type)
    return info is not None and _parsed(clickhouse_type).base().name in info.always_fits


def _scalar_type(value: Any) -> str:
    return next(t.name for t in FIELD_TYPE_TABLE if t.infer(value))


def value_type(value: Any) -> str | None:
    """The field type of one JSON value; None for null. A list is an `array<T>` of its elements' merged type
    (objects in it `struct<...>`); an object reaching here (empty, or nested past the depth limit) is `json`."""
    if value is None:
        return None
    if isinstance(value, list):
        shape = infer_shape(value, _scalar_type, _merge_scalars)
        text = shape.ddl() if shape is not None else "json"
        return text if len(text) <= TYPE_TEXT_LIMIT else "json"
    return _scalar_type(value)


TYPE_TEXT_LIMIT = 1_000  # an inferred type longer than this is `json` (the spec's field types are capped too)


def _merge_scalars(a: str | None, b: str | None) -> str | None:
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


def merge_types(a: str | None, b: str | None) -> str | None:
    """The narrowest type holding both (None is 'not seen yet'): int+float is float, string/uuid/datetime
    mixed are string, two arrays an array of their elements' merge, two structs their members' union, anything
    else mixed is json."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a in FIELD_TYPE_INFO and b in FIELD_TYPE_INFO:
        return _merge_scalars(a, b)
    merged = merge_shapes(field_type_shape(a), field_type_shape(b), _merge_scalars)
    text = merged.ddl() if merged is not None else "json"
    return text if len(text) <= TYPE_TEXT_LIMIT else "json"


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
    "field_spark_type",
    "field_type_compatible",
    "field_type_info",
    "field_type_shape",
    "field_type_text",
    "is_nested",
    "merge_types",
    "value_type",
]
