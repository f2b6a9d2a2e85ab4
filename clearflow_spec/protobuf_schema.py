"""Protobuf schemas (.proto text, as a schema registry holds them) read as the pipeline's fields. No Spark.

The counterpart of `clearflow_spec.avro_schema` for `source.format: protobuf`: the web app (field list, spec checks)
and the engine (which fields each writer schema has) read a .proto the same way. The engine's decoder itself runs
in the JVM (spark_jobs/protobuf-jvm), with Apicurio's parser; this reader (its parser: `clearflow_spec.proto_parser`)
only needs names and types, so it is small: messages (nested), enums, `repeated`, `map<K, V>`, `oneof`, `optional`,
well-known types (`clearflow_spec.protobuf_types`). The wizard's sample reads a record with
`clearflow_spec.protobuf_record`.

The record's message is the file's first message (what a Confluent serializer writes as message index 0):
- a message-typed field nests (`customer.name`), like an Avro record; a field of a message type that recurses is
  `json`;
- `repeated` fields are `array<T>` and maps `map<string,T>` (a message inside them a `struct<...>` of its fields,
  an enum its name, a Timestamp a `datetime`), as Avro's arrays and maps are; one whose elements have no field type
  (a message inside itself, a wrapper or another well-known message) is `json`, its JSON text; enums are
  strings; bytes are `string` (base64 text);
- `google.protobuf.Timestamp` is `datetime` (`DateTime64(6, 'UTC')`); wrapper types (`StringValue`, ...) are their
  value, nullable; other well-known messages are `json`;
- proto3 scalars read their default when absent (never NULL); `optional` ones, and those under a message, may be.
"""

from __future__ import annotations

from clearflow_spec.avro_schema import SchemaField
from clearflow_spec.clickhouse_types import MAX_TYPE_NESTING
from clearflow_spec.field_types import default_clickhouse_type
from clearflow_spec.limits import FlattenBudget
from clearflow_spec.nested_types import FieldShape, array_of, map_of, scalar, struct_of
from clearflow_spec.proto_parser import (
    ProtobufSchemaLimitError,
    ProtoField,
    ProtoFile,
    ProtoMessage,
    parse_proto,
    resolve_type,
)
from clearflow_spec.protobuf_types import SCALARS, TIMESTAMP, WRAPPERS


def schema_fields(text: str) -> list[SchemaField]:
    """Every leaf field of the file's first message (the record's message), in the schema's order.
    ProtobufSchemaError naming the cap for a file that flattens to more than `limits.SCHEMA_FIELDS` fields or nests
    messages deeper than `limits.SCHEMA_DEPTH`."""
    proto = parse_proto(text)
    out: list[SchemaField] = []
    first = next(iter(proto.messages.values()))
    budget = FlattenBudget("the .proto file", ProtobufSchemaLimitError)
    _walk(proto, first, "", False, out, set(), budget, 1)
    return out


def fields_by_path(text: str) -> dict[str, SchemaField]:
    return {found.path: found for found in schema_fields(text)}


def registered_schema_fields(text: str) -> list[SchemaField]:
    """The fields of a registered writer schema of either kind: an Avro schema is JSON (it starts with `{`), a
    .proto never does. AvroSchemaError or ProtobufSchemaError when the text does not read."""
    from clearflow_spec import avro_schema

    return avro_schema.schema_fields(text) if text.lstrip().startswith("{") else schema_fields(text)


def is_protobuf(text: str) -> bool:
    return not text.lstrip().startswith("{")


def _walk(
    proto: ProtoFile,
    message: ProtoMessage,
    prefix: str,
    nullable: bool,
    out: list[SchemaField],
    seen: set[str],
    budget: FlattenBudget,
    depth: int,
) -> None:
    for item in message.fields:
        budget.visit(depth)
        path = prefix + item.name
        optional = nullable or item.label == "optional"
        if item.label == "repeated":
            label = item.type if item.type.startswith("map<") else f"repeated {item.type}"
            shape = _repeated_shape(proto, message.name, item, {*seen, message.name}, depth)
            if shape is None:  # a recursive message, a wrapper or another well-known message inside: JSON text
                out.append(SchemaField(path, "json", label, False, "String"))
            else:
                out.append(SchemaField(path, shape.ddl(), label, False, default_clickhouse_type(shape.ddl())))
            continue
        kind = resolve_type(proto, message.name, item.type)
        if kind in SCALARS:
            field_type, column = SCALARS[kind]
            out.append(SchemaField(path, field_type, kind, optional, _nullable(column, optional)))
        elif kind in proto.enums:
            column = _nullable("LowCardinality(String)", optional)
            out.append(SchemaField(path, "string", "enum", optional, column))
        elif kind == TIMESTAMP:
            out.append(SchemaField(path, "datetime", "Timestamp", True, "Nullable(DateTime64(6, 'UTC'))"))
        elif kind in WRAPPERS:
            field_type, column = SCALARS[WRAPPERS[kind]]
            out.append(SchemaField(path, field_type, kind.rsplit(".", 1)[1], True, _nullable(column, True)))
        elif kind in proto.messages and kind not in seen and kind != message.name:
            _walk(proto, proto.messages[kind], path + ".", True, out, {*seen, message.name}, budget, depth + 1)
        else:  # a recursive message, or a well-known message with no column of its own: its JSON text
            out.append(SchemaField(path, "json", kind.rsplit(".", 1)[-1], True, "String"))


def _repeated_shape(proto: ProtoFile, scope: str, item: ProtoField, seen: set[str], depth: int) -> FieldShape | None:
    """The field type of a repeated field (`array<T>`) or a map (`map<string,T>`: the decoder writes every key as
    text), as the decoder's JSON text of it reads; None when an element has no field type."""
    if item.type.startswith("map<"):
        value_type = item.type.removeprefix("map<").removesuffix(">").split(",", 1)[1].strip()
        element = _element_shape(proto, scope, value_type, seen, depth + 1)
        return None if element is None else map_of(element)
    element = _element_shape(proto, scope, item.type, seen, depth + 1)
    return None if element is None else array_of(element)


def _element_shape(proto: ProtoFile, scope: str, name: str, seen: set[str], depth: int) -> FieldShape | None:
    """The field type of a value inside a repeated field or a map: a scalar, an enum (its name), a Timestamp, or
    a message as `struct<...>` of its fields (the decoder writes the fields a message has set; an unset member
    is NULL). None for a wrapper or another well-known message, a message inside itself, or nesting past the
    limit (the field is then read as its JSON text)."""
    if depth > MAX_TYPE_NESTING:
        return None
    if name in SCALARS:
        return scalar(SCALARS[name][0])
    kind = resolve_type(proto, scope, name)
    if kind in proto.enums:
        return scalar("string")
    if kind == TIMESTAMP:
        return scalar("datetime")
    if kind not in proto.messages or kind in seen:
        return None
    members = []
    for member in proto.messages[kind].fields:
        if member.label == "repeated":
            shape = _repeated_shape(proto, kind, member, {*seen, kind}, depth)
        else:
            shape = _element_shape(proto, kind, member.type, {*seen, kind}, depth + 1)
        if shape is None:
            return None
        members.append((member.name, shape))
    return struct_of(members) if members else None


def _nullable(column: str, nullable: bool) -> str:
    if not nullable:
        return column
    if column.startswith("LowCardinality("):
        return f"LowCardinality(Nullable({column.removeprefix('LowCardinality(')})"
    return f"Nullable({column})"
