"""The engine's conversion rules in plain Python (no pyspark): does a JSON value reach its ClickHouse column?

The job converts in two steps (`spark_jobs.transforms`): `parse_events` reads every field of the event as
JSON text with `from_json` and converts the text to the field's type (`convert_text`); `check_columns` /
`map_columns` then cast the typed value to the sink column's type (`to_clickhouse`). A value that fails
either step sends its event to the dead-letter table. This module follows the same rules, value by value,
so that the wizard and the API can tell from a sample which values would become dead letters, and why,
before a job runs. `tests/spark_jobs/test_conversion_parity.py` runs a battery of values through the real
Spark job and through this module: the two must agree on every value. Change both together.

Spark's rules followed here (Spark 4, `spark.sql.ansi.enabled=false`, session time zone UTC):
- `from_json` reads a leaf as text: a JSON string as its value, anything else re-written by Jackson
  (numbers as Java prints doubles: `1.50` -> `1.5`, `1e3` -> `1000.0`; objects compact; NaN -> `"NaN"`).
- `try_cast(string AS bigint)` is ANSI: digits only after trimming (no `1.0`, no `1e3`), within 64 bits.
- `try_cast(string AS double | decimal | date | timestamp)` is the legacy cast: Java's `parseDouble`
  (`1d`, `0x1p3`, `inf`, `nan`), Java's `BigDecimal` rounded HALF_UP, Spark's own date and timestamp parsers.
- A NULL or missing value is not an error: a non-Nullable column gets its default.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from clearflow_spec.casts import (
    LONG_MAX,
    LONG_MIN,
    fits_decimal,
    java_decimal,
    java_double,
    parse_timestamp,
    timestamp_text,
    to_bool,
    to_date,
    to_double,
    to_long_exact,
)
from clearflow_spec.clickhouse_types import (
    DECIMAL_NAMES,
    FLOAT_NAMES,
    INT_RANGES,
    INTEGER_NAMES,
    IPV4_PATTERN,
    IPV6_PATTERN,
    STRING_NAMES,
    ClickHouseType,
    decimal_precision_scale,
    parse_clickhouse_type,
)
from clearflow_spec.field_types import (
    EPOCH_NUMBER_PATTERN,
    FIELD_TYPES,
    UUID_PATTERN,
    always_fits,
    field_type_compatible,
    field_type_shape,
    is_nested,
)
from clearflow_spec.nested_types import ARRAY, MAP, SCALAR, FieldShape, tuple_members

if TYPE_CHECKING:
    from clearflow_spec.spec import PipelineSpec

__all__ = [
    "MISSING",
    "Outcome",
    "convert",
    "event_time_outcome",
    "field_value",
    "key_outcome",
    "lookup",
    "parse_timestamp",
    "record_outcome",
    "supported",
    "to_field_type",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # the path is not in the event
_NOT_OBJECT: Any = type("_NotObject", (), {"__repr__": lambda self: "NOT_OBJECT"})()

PARENT_REASON = "unexpected JSON structure: an object was expected at a field's parent"
# Java's `$` (no MULTILINE) also matches before one final line terminator; Python's only before "\n".
_JAVA_END = r"(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z"


def _java_regex(pattern: str) -> re.Pattern[str]:
    """The engine's `^...$` pattern (Java syntax, for Spark's rlike) as Python matches it: `$` as in Java, and
    ASCII classes (Java's whitespace class is space, tab, newline, vertical tab, form feed and carriage return,
    as Python's under re.ASCII)."""
    if not (pattern.startswith("^") and pattern.endswith("$")):
        raise ValueError(f"expected an anchored pattern, not {pattern!r}")
    return re.compile(pattern[1:-1] + _JAVA_END, re.ASCII)


# The same patterns the job's `rlike` checks use (`clearflow_spec.field_types`, `clearflow_spec.clickhouse_types`).
_UUID_RE = _java_regex(UUID_PATTERN)
_IPV4_RE = _java_regex(IPV4_PATTERN)
_IPV6_RE = _java_regex(IPV6_PATTERN)
_NUMBER_RE = _java_regex(EPOCH_NUMBER_PATTERN)


@dataclass(frozen=True)
class Outcome:
    """Whether a value reaches its column; else the dead-letter reason the job would write and the step
    that fails: "record" (the event's JSON shape), "field" (JSON text -> field type) or "column"."""

    ok: bool
    reason: str = ""
    stage: str = ""


OK = Outcome(True)


# --- reading the event -------------------------------------------------------------------------------------


def lookup(event: Any, path: str) -> Any:
    """The value at a dotted path of a parsed JSON object; MISSING when absent; `_NOT_OBJECT` when a parent
    holds something other than an object or null (Spark then rejects the whole record)."""
    node = event
    for part in path.split("."):
        if node is None:
            return MISSING
        if not isinstance(node, dict):
            return _NOT_OBJECT
        if part not in node:
            return MISSING
        node = node[part]
    return node


def _jackson(value: Any) -> str:
    """JSON text as Jackson re-writes a parsed value (compact, doubles as Java prints them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f'"{java_double(value)}"' if math.isnan(value) or math.isinf(value) else java_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_jackson(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_jackson(v) for v in value) + "]"
    return "null"


def json_text(value: Any) -> str | None:
    """What `from_json` gives for a leaf read as a string: a JSON string's value, else Jackson's text."""
    if value is None or value is MISSING:
        return None
    return value if isinstance(value, str) else _jackson(value)


# --- the two steps -----------------------------------------------------------------------------------------


def to_field_type(text: str, field_type: str) -> Any:
    """`transforms.convert_text`: the field type's value for a leaf's JSON text, None when it does not convert.
    Values: str (string, json, uuid), int, float, bool, and datetime as microseconds since the epoch."""
    if field_type in ("string", "json"):
        return text
    if field_type == "int":
        return to_long_exact(text.strip(" "))
    if field_type == "float":
        return to_double(text)
    if field_type == "bool":
        return to_bool(text)
    if field_type == "datetime":
        if _NUMBER_RE.match(text):
            number = to_double(text)
            if number is None or math.isnan(number) or math.isinf(number):
                return None
            seconds = number / 1000.0 if abs(number) >= 1e11 else number
            return max(LONG_MIN, min(LONG_MAX, int(seconds * 1_000_000)))
        return parse_timestamp(text)
    if field_type == "uuid":
        return text.lower() if _UUID_RE.match(text) else None
    raise ValueError(f"unknown field type {field_type!r}")


def _as_string(value: Any, field_type: str) -> str:
    """`value.cast("string")` for a field type's value (timestamps as Spark prints them in UTC)."""
    if field_type == "datetime":
        return timestamp_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _nested_value(value: Any, shape: FieldShape, path: str, *, top: bool = False) -> tuple[Any, Outcome]:
    """`nested_columns.typed` and `convert_reason`: the typed value of a nested field's JSON value, or the reason
    naming the first element that does not convert (`field 'items[1].qty': cannot convert 'x' to int`)."""
    if value is None:
        return None, OK
    if shape.kind == SCALAR:
        text = json_text(value) or ""
        typed = to_field_type(text, shape.name)
        if typed is None and shape.name not in ("string", "json"):
            return None, Outcome(False, f"field '{path}': cannot convert '{text[:200]}' to {shape.name}", "field")
        return typed, OK
    wanted = list if shape.kind == ARRAY else dict
    if not isinstance(value, wanted):
        if not top:  # Spark reads a misshapen element as NULL
            return None, OK
        what = "an array" if shape.kind == ARRAY else "an object"
        text = (json_text(value) or "")[:200]
        return None, Outcome(False, f"field '{path}': cannot convert '{text}' to {shape.ddl()}: not {what}", "field")
    if shape.kind == ARRAY:
        items = [(f"{path}[{i}]", item, shape.elem) for i, item in enumerate(value)]
    elif shape.kind == MAP:
        items = [(f"{path}.{key}", item, shape.elem) for key, item in value.items()]
    else:
        items = [(f"{path}.{name}", value.get(name), member) for name, member in shape.members]
    typed_items = []
    for item_path, item, item_shape in items:
        typed, outcome = _nested_value(item, item_shape, item_path)
        if not outcome.ok:
            return None, outcome
        typed_items.append(typed)
    if shape.kind == ARRAY:
        return typed_items, OK
    keys = list(value) if shape.kind == MAP else [name for name, _ in shape.members]
    return dict(zip(keys, typed_items, strict=True)), OK


def _nested_fits(typed: Any, shape: FieldShape, column: ClickHouseType, path: str) -> Outcome:
    """`nested_columns.write_reason`: OK, or the reason naming the first element its column does not take."""
    base = column.base()
    if typed is None:
        return OK
    if shape.kind == SCALAR:
        if column_accepts(typed, shape.name, column):
            return OK
        shown = _as_string(typed, shape.name)[:200]
        return Outcome(False, f"field '{path}': cannot write '{shown}' to {column.sql()}", "column")
    if base.name in ("String", "JSON"):
        return OK
    if base.name in ("Array", "Nested"):
        element = base.args[0] if base.name == "Array" else ClickHouseType("Tuple", base.args)
        parts = [(f"{path}[{i}]", item, shape.elem, element) for i, item in enumerate(typed)]
    elif base.name == "Map":
        parts = [(f"{path}.{key}", item, shape.elem, base.args[1]) for key, item in typed.items()]
    else:
        parts = [
            (f"{path}.{name}", typed.get(str(name)), shape.member(str(name)), element)
            for name, element in tuple_members(base)
        ]
    for part_path, item, item_shape, item_column in parts:
        if item_shape is None:
            continue
        outcome = _nested_fits(item, item_shape, item_column, part_path)
        if not outcome.ok:
            return outcome
    return OK


def column_accepts(value: Any, field_type: str, column: ClickHouseType) -> bool:
    """`column_mapping.to_clickhouse`'s validity for a non-NULL value of `field_type`."""
    base = column.base()
    name = base.name
    if always_fits(field_type, base):  # the job writes these without a check
        return True
    if name in ("String", "FixedString", "JSON"):
        text = timestamp_text(value, iso=True) if field_type == "datetime" else _as_string(value, field_type)
        if name == "FixedString":
            return len(text.encode()) <= int(base.args[0])
        if name == "JSON":
            return text.lstrip(" ").startswith("{") and _is_json(text)
        return True
    if name in ("Enum8", "Enum16"):
        return _as_string(value, field_type) in {label for label, _number in base.args}
    if name in ("UUID", "IPv4", "IPv6"):
        pattern = {"UUID": _UUID_RE, "IPv4": _IPV4_RE, "IPv6": _IPV6_RE}[name]
        return bool(pattern.match(_as_string(value, field_type)))
    if name in INT_RANGES:
        if field_type == "bool":
            number: int | None = int(value)
        elif field_type == "float":
            number = int(value) if math.isfinite(value) and LONG_MIN <= math.floor(value) <= LONG_MAX else None
        elif field_type == "int":
            number = value
        elif field_type == "datetime":
            number = math.floor(value / 1_000_000)
        else:
            number = to_long_exact(value.strip(" ") if field_type == "string" else value)
        low, high = INT_RANGES[name]
        return number is not None and (low is None or number >= low) and (high is None or number <= high)
    if name in ("Float32", "Float64", "BFloat16"):
        return field_type != "string" or to_double(value) is not None
    if name.startswith("Decimal"):
        precision, scale = decimal_precision_scale(base)
        precision = min(precision, 38)
        scale = min(scale, precision)
        number = _decimal_of(value, field_type)
        return number is not None and fits_decimal(number, precision, scale)
    if name == "Bool":
        if field_type == "int":
            return value in (0, 1)
        return to_bool(_as_string(value, field_type)) is not None
    if name in ("Date", "Date32"):
        return field_type == "datetime" or to_date(_as_string(value, field_type)) is not None
    if name in ("DateTime", "DateTime64"):
        return field_type == "datetime" or to_field_type(_as_string(value, field_type), "datetime") is not None
    raise ValueError(f"ClickHouse type {column.sql()} is not supported for writing")


def _decimal_of(value: Any, field_type: str) -> Decimal | None:
    if field_type in ("int", "bool"):
        return Decimal(int(value))
    if field_type == "float":
        return Decimal(java_double(value)) if math.isfinite(value) else None
    return java_decimal(_as_string(value, field_type))


def _is_json(text: str) -> bool:
    """Spark's `try_parse_json`: strict JSON, no NaN/Infinity, no duplicate keys."""

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate key")
        return dict(pairs)

    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        json.loads(text, object_pairs_hook=no_duplicates, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


# The column base types `column_mapping.to_clickhouse` writes.
_WRITABLE = (
    STRING_NAMES
    | INTEGER_NAMES
    | FLOAT_NAMES
    | DECIMAL_NAMES
    | {"JSON", "UUID", "IPv4", "IPv6", "Bool", "Date", "Date32", "DateTime", "DateTime64", "Enum8", "Enum16"}
)


def supported(field_type: str, column_type: str | ClickHouseType) -> bool:
    """Whether these rules cover a field type and a column type (others are refused by the spec check)."""
    try:
        ch_type = column_type if isinstance(column_type, ClickHouseType) else parse_clickhouse_type(column_type)
    except ValueError:
        return False
    if field_type in FIELD_TYPES:
        return ch_type.base().name in _WRITABLE
    try:
        return is_nested(field_type) and field_type_compatible(field_type, ch_type)
    except ValueError:
        return False


def field_value(value: Any, field_type: str, *, field: str = "value") -> tuple[Any, Outcome]:
    """(the field type's value or None, outcome) for the value found at a field's path."""
    if value is _NOT_OBJECT:
        return None, Outcome(False, PARENT_REASON, "record")
    if field_type not in FIELD_TYPES:
        return _nested_value(None if value is MISSING else value, field_type_shape(field_type), field, top=True)
    text = json_text(value)
    if text is None:
        return None, OK
    typed = to_field_type(text, field_type)
    if typed is None and field_type not in ("string", "json"):
        return None, Outcome(False, f"field '{field}': cannot convert '{text[:200]}' to {field_type}", "field")
    return typed, OK


def convert(
    value: Any, *, field_type: str, column_type: str | ClickHouseType, field: str = "value", column: str = "column"
) -> Outcome:
    """Whether the job writes `value` (a parsed JSON value, None for null, MISSING when absent) of a field of
    `field_type` into a column of `column_type`; else the dead-letter reason it gives."""
    ch_type = column_type if isinstance(column_type, ClickHouseType) else parse_clickhouse_type(column_type)
    typed, outcome = field_value(value, field_type, field=field)
    if not outcome.ok or typed is None:
        return outcome
    if field_type not in FIELD_TYPES:
        return _nested_fits(typed, field_type_shape(field_type), ch_type, field)
    if column_accepts(typed, field_type, ch_type):
        return OK
    shown = _as_string(typed, field_type)[:200]
    return Outcome(False, f"column '{column}': cannot write '{shown}' to {ch_type.sql()}", "column")


def key_outcome(event: Any, path: str, field_type: str) -> Outcome:
    """Whether a dedup key is usable in `event` (`dedup.require_keys`, after the field's conversion)."""
    typed, outcome = field_value(lookup(event, path), field_type, field=path)
    if outcome.ok and typed is None:
        return Outcome(False, f"dedup key '{path}' is missing or null", "key")
    return outcome


def event_time_outcome(event: Any, path: str) -> Outcome:
    """Whether the event-time field is usable in `event` (`dedup.dedup_time`; a datetime field)."""
    typed, outcome = field_value(lookup(event, path), "datetime", field=path)
    if outcome.ok and typed is None:
        return Outcome(False, f"event time '{path}' is missing or null", "time")
    return outcome


def record_outcome(raw: bytes | None, spec: PipelineSpec) -> Outcome:
    """Whether a Kafka record's value passes the checks of `spec` that come before its filter and computed fields,
    else the first dead-letter reason the job gives it, in the job's order (`pipeline.build_stream`): the record
    (UTF-8, JSON, an object), each field's conversion, the dedup keys, each column filled from a field, the event
    time. The filter, the computed fields and their columns are Spark expressions: not checked here."""
    if raw is None:
        return Outcome(False, "empty record value (NULL)", "record")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome(False, "invalid UTF-8", "record")
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        event = _NOT_OBJECT
    fields = spec.source.fields
    if not isinstance(event, dict) or any(lookup(event, f.path) is _NOT_OBJECT for f in fields):
        if not _is_json(text):
            return Outcome(False, "invalid JSON", "record")
        if not text.lstrip(" ").startswith("{"):
            return Outcome(False, "not a JSON object", "record")
        return Outcome(False, PARENT_REASON, "record")
    types = {f.path: f.type for f in fields}
    for f in fields:
        _typed, outcome = field_value(lookup(event, f.path), f.type, field=f.path)
        if not outcome.ok:
            return outcome
    dedup = spec.dedup
    for key in dedup.keys if dedup else ():
        outcome = key_outcome(event, key, types[key])
        if not outcome.ok:
            return outcome
    for column in spec.sink.columns:
        if column.field in types:
            outcome = convert(
                lookup(event, column.field),
                field_type=types[column.field],
                column_type=column.type,
                field=column.field,
                column=column.column,
            )
            if not outcome.ok:
                return outcome
    if dedup and dedup.time == "event" and dedup.event_time_field:
        outcome = event_time_outcome(event, dedup.event_time_field)
        if not outcome.ok:
            return outcome
    return OK
