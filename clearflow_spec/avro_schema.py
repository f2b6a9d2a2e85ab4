"""Avro schemas read as the pipeline's fields: names, field types and proposed ClickHouse columns. No Spark.

One reading of a schema serves the web app (the wizard's field list, the spec's checks, the schema-change
report) and the engine (which fields each writer schema has, and with which Avro type):

- records nest: a field `user` of record type gives the paths `user.id`, `user.name`;
- a union with null is its other branch, optional (Nullable column); a union of several types is `json`;
- arrays and maps are `array<T>` and `map<string,T>`, a record inside them a `struct<...>` (a union of several
  types inside them: the whole is `json`, its JSON text); enums are strings;
- logical types: `decimal` is `string` (its exact text) written to `Decimal(P, S)`; `timestamp-millis/micros`
  and `local-timestamp-*` are `datetime` (`DateTime64(3|6, 'UTC')`); `date` is `datetime` written to `Date`;
  `uuid` is `uuid`; bytes and fixed are `string` (base64 text).

Also the Confluent wire format's framing (magic byte 0, a 4-byte big-endian schema id, then the Avro body).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from clearflow_spec.clickhouse_types import MAX_TYPE_NESTING
from clearflow_spec.field_types import default_clickhouse_type
from clearflow_spec.limits import SCHEMA_DEPTH, FlattenBudget, LimitError
from clearflow_spec.nested_types import FieldShape, array_of, map_of, scalar, struct_of

# Confluent wire format: 1 magic byte (0) + a 4-byte big-endian schema id, then the body.
MAGIC_BYTE = 0
WIRE_HEADER_BYTES = 5

_PRIMITIVES: dict[str, tuple[str, str]] = {  # Avro type -> (field type, proposed ClickHouse type)
    "boolean": ("bool", "Bool"),
    "int": ("int", "Int32"),
    "long": ("int", "Int64"),
    "float": ("float", "Float32"),
    "double": ("float", "Float64"),
    "string": ("string", "String"),
    "bytes": ("string", "String"),
}
_LOGICAL: dict[str, tuple[str, str]] = {
    "uuid": ("uuid", "UUID"),
    "date": ("datetime", "Date"),
    "timestamp-millis": ("datetime", "DateTime64(3, 'UTC')"),
    "timestamp-micros": ("datetime", "DateTime64(6, 'UTC')"),
    "local-timestamp-millis": ("datetime", "DateTime64(3, 'UTC')"),
    "local-timestamp-micros": ("datetime", "DateTime64(6, 'UTC')"),
    "time-millis": ("int", "Int32"),
    "time-micros": ("int", "Int64"),
}


@dataclass(frozen=True)
class WriterSchemas:
    """The Avro schemas a run decodes with: writer schema text by id (Confluent wire format), or the one plain
    schema (`confluent=False`, id 0); and ids it cannot read, with why ("is not in the schema registry")."""

    by_id: Mapping[int, str]
    confluent: bool = True
    unreadable: Mapping[int, str] = dataclass_field(default_factory=dict)


class AvroSchemaError(ValueError):
    """Text that is not an Avro record schema; the message says what is wrong."""


class AvroSchemaLimitError(AvroSchemaError, LimitError):
    """An Avro schema over a cap (`limits.SCHEMA_FIELDS`, `SCHEMA_DEPTH`); the message names it."""


@dataclass(frozen=True)
class SchemaField:
    """One leaf of a record schema, as the pipeline reads it."""

    path: str  # dotted, e.g. "user.id"
    type: str  # a field type (clearflow_spec.field_types)
    avro_type: str  # what the schema says, for people: "long", "decimal(10, 2)", "array<string>", "enum"
    nullable: bool
    clickhouse_type: str  # the column type proposed for it (Nullable when the schema allows null)

    def describe(self) -> str:
        return f"{self.avro_type}{' or null' if self.nullable else ''}"


def parse_schema(text: str | dict[str, Any]) -> dict[str, Any]:
    """The schema as JSON data; AvroSchemaError unless it is a JSON record schema."""
    if isinstance(text, dict):
        data: Any = text
    else:
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise AvroSchemaError(f"the Avro schema is not valid JSON: {exc}") from None
        except RecursionError:  # json recurses once per bracket; far deeper than the depth cap allows
            raise AvroSchemaLimitError(f"the Avro schema nests too deep to read: {SCHEMA_DEPTH.exceeded()}") from None
    if not isinstance(data, dict) or data.get("type") != "record" or not isinstance(data.get("fields"), list):
        raise AvroSchemaError('the Avro schema must be a record: {"type": "record", "name": ..., "fields": [...]}')
    return data


def schema_fields(schema: str | dict[str, Any]) -> list[SchemaField]:
    """Every leaf field of a record schema, in the schema's order. AvroSchemaError naming the cap for a schema
    that flattens to more than `limits.SCHEMA_FIELDS` fields or nests records deeper than `limits.SCHEMA_DEPTH`."""
    record = parse_schema(schema)
    named: dict[str, Any] = {}
    out: list[SchemaField] = []
    _walk_record(record, "", False, _Walk(named, out, FlattenBudget("the Avro schema", AvroSchemaLimitError)), set(), 1)
    return out


def fields_by_path(schema: str | dict[str, Any]) -> dict[str, SchemaField]:
    return {field.path: field for field in schema_fields(schema)}


def _full_name(schema: dict[str, Any], namespace: str | None) -> str:
    name = str(schema.get("name", ""))
    space = schema.get("namespace", namespace)
    return name if "." in name or not space else f"{space}.{name}"


@dataclass
class _Walk:
    """What one reading of a schema gathers: the named types met so far, the fields, the fields visited."""

    named: dict[str, Any]
    out: list[SchemaField]
    budget: FlattenBudget


def _walk_record(
    record: dict[str, Any],
    prefix: str,
    nullable: bool,
    walk: _Walk,
    seen: set[str],
    depth: int,
    namespace: str | None = None,
) -> None:
    full = _full_name(record, namespace)
    walk.named[full] = record
    walk.named.setdefault(str(record.get("name", "")), record)
    if full in seen:  # a recursive record: what lies below is JSON
        walk.out.append(SchemaField(prefix.rstrip("."), "json", "record", nullable, "String"))
        return
    for field in record.get("fields", []):
        if not isinstance(field, dict) or "name" not in field:
            raise AvroSchemaError(f"a field of record {full!r} has no name")
        walk.budget.visit(depth)
        _walk_type(
            field["type"],
            prefix + str(field["name"]),
            nullable,
            walk,
            {*seen, full},
            depth,
            record.get("namespace", namespace),
        )


def _walk_type(
    avro: Any,
    path: str,
    nullable: bool,
    walk: _Walk,
    seen: set[str],
    depth: int,
    namespace: str | None,
) -> None:
    named, out = walk.named, walk.out
    if isinstance(avro, list):  # a union
        others = [member for member in avro if member != "null"]
        nullable = nullable or len(others) < len(avro)
        if len(others) == 1 and isinstance(others[0], list):
            raise AvroSchemaError(f"field {path!r}: a union holds a union, which Avro does not allow")
        if len(others) == 1:
            _walk_type(others[0], path, nullable, walk, seen, depth, namespace)
        else:
            out.append(SchemaField(path, "json", "union", nullable, _nullable("String", nullable)))
        return
    if isinstance(avro, str) and avro not in _PRIMITIVES and avro != "null":
        reference = named.get(avro) or named.get(f"{namespace}.{avro}")
        if reference is None:
            raise AvroSchemaError(f"field {path!r}: unknown type {avro!r}")
        avro = reference
    if isinstance(avro, str):
        avro = {"type": avro}
    if not isinstance(avro, dict):
        raise AvroSchemaError(f"field {path!r}: unreadable type {avro!r}")
    kind = avro.get("type")
    if isinstance(kind, dict | list):  # {"type": {"type": "array", ...}}: a level too (it nests the JSON)
        walk.budget.visit(depth + 1)
        _walk_type(kind, path, nullable, walk, seen, depth + 1, namespace)
        return
    logical = avro.get("logicalType")
    if kind == "record":
        _walk_record(avro, path + ".", nullable, walk, seen, depth + 1, namespace)
        return
    if kind in ("enum", "fixed"):
        named[_full_name(avro, namespace)] = avro
        named.setdefault(str(avro.get("name", "")), avro)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(avro.get("precision", 38)), int(avro.get("scale", 0))
        label = f"decimal({precision}, {scale})"
        out.append(SchemaField(path, "string", label, nullable, _nullable(f"Decimal({precision}, {scale})", nullable)))
        return
    if logical in _LOGICAL and kind in ("int", "long", "string"):
        field_type, column = _LOGICAL[logical]
        out.append(SchemaField(path, field_type, logical, nullable, _nullable(column, nullable)))
        return
    if kind == "enum":
        out.append(SchemaField(path, "string", "enum", nullable, _nullable("LowCardinality(String)", nullable)))
    elif kind == "fixed":
        out.append(SchemaField(path, "string", "fixed", nullable, _nullable("String", nullable)))
    elif kind in ("array", "map"):
        inner = avro.get("items" if kind == "array" else "values")
        label = f"{kind}<{inner if isinstance(inner, str) else _type_name(inner)}>"
        shape = _nested_shape(avro, named, namespace, set(seen), depth)
        if shape is None:  # a union of several types, a recursive record inside: its JSON text
            out.append(SchemaField(path, "json", label, nullable, "String"))
        else:
            out.append(SchemaField(path, shape.ddl(), label, nullable, default_clickhouse_type(shape.ddl())))
    elif kind in _PRIMITIVES:
        field_type, column = _PRIMITIVES[kind]
        out.append(SchemaField(path, field_type, kind, nullable, _nullable(column, nullable)))
    elif kind == "null":
        return
    else:
        raise AvroSchemaError(f"field {path!r}: unknown type {kind!r}")


def _nested_shape(
    avro: Any, named: dict[str, Any], namespace: str | None, seen: set[str], depth: int
) -> FieldShape | None:
    """The field type of an array, a map or a record met inside one (their elements are read whole, not as paths):
    None for what has no field type (a union of several types, a record inside itself, nesting past the limit)."""
    if depth > MAX_TYPE_NESTING:
        return None
    if isinstance(avro, list):
        others = [member for member in avro if member != "null"]
        return _nested_shape(others[0], named, namespace, seen, depth) if len(others) == 1 else None
    if isinstance(avro, str) and avro not in _PRIMITIVES:
        avro = named.get(avro) or named.get(f"{namespace}.{avro}") or avro
    if isinstance(avro, str):
        avro = {"type": avro}
    if not isinstance(avro, dict):
        return None
    kind, logical = avro.get("type"), avro.get("logicalType")
    if isinstance(kind, dict | list):
        return _nested_shape(kind, named, namespace, seen, depth + 1)
    if kind in ("array", "map"):
        element = _nested_shape(avro.get("items" if kind == "array" else "values"), named, namespace, seen, depth + 1)
        if element is None:
            return None
        return array_of(element) if kind == "array" else map_of(element)
    if kind == "record":
        full = _full_name(avro, namespace)
        if full in seen:
            return None
        named[full] = avro
        members = []
        for field in avro.get("fields", []):
            member = _nested_shape(field.get("type"), named, avro.get("namespace", namespace), {*seen, full}, depth + 1)
            if member is None:
                return None
            members.append((str(field.get("name")), member))
        return struct_of(members)
    if kind in ("enum", "fixed"):
        named[_full_name(avro, namespace)] = avro
        return scalar("string")
    if logical in _LOGICAL and kind in ("int", "long", "string"):
        return scalar(_LOGICAL[logical][0])
    if kind in _PRIMITIVES:
        return scalar("string" if logical == "decimal" else _PRIMITIVES[kind][0])
    return None


def _type_name(avro: Any) -> str:
    if isinstance(avro, dict):
        return str(avro.get("logicalType") or avro.get("type"))
    if isinstance(avro, list):
        return "union"
    return str(avro)


def _nullable(column: str, nullable: bool) -> str:
    if not nullable or column.startswith(("Nullable(", "JSON")):
        return column
    if column.startswith("LowCardinality("):
        return f"LowCardinality(Nullable({column.removeprefix('LowCardinality(')})"
    return f"Nullable({column})"


def split_wire_format(value: bytes | None) -> tuple[int, bytes]:
    """(schema id, body) of a record in the Confluent wire format; ValueError naming what is wrong, in the words
    of the job's dead-letter reason (`spark_jobs.avro_decode`): the same edges, so a record the web app reads as
    framed is one the job reads as framed. A 5-byte record is framed, with an empty body."""
    value = value or b""  # a record without a value (a tombstone) has no header either
    if len(value) < WIRE_HEADER_BYTES:
        raise ValueError(f"record too short for the Confluent wire format ({len(value)} bytes)")
    if value[0] != MAGIC_BYTE:
        raise ValueError(f"not in the Confluent wire format: the first byte is 0x{value[0]:02X}, expected 0x00")
    (schema_id,) = struct.unpack(">I", value[1:WIRE_HEADER_BYTES])
    return schema_id, value[WIRE_HEADER_BYTES:]


def wire_schema_id(value: bytes | None) -> int | None:
    """The schema id of a record in the Confluent wire format; None when it is not framed so (`split_wire_format`
    says why)."""
    try:
        return split_wire_format(value)[0]
    except ValueError:
        return None


def wire_format(schema_id: int, body: bytes) -> bytes:
    """A record in the Confluent wire format (what a Confluent serializer produces)."""
    return bytes([MAGIC_BYTE]) + struct.pack(">I", schema_id) + body
