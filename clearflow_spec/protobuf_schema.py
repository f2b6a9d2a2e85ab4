"""Protobuf schemas (.proto text, as a schema registry holds them) read as the pipeline's fields. No Spark.

The counterpart of `clearflow_spec.avro_schema` for `source.format: protobuf`: the web app (field list, spec checks)
and the engine (which fields each writer schema has) read a .proto the same way. The engine's decoder itself runs
in the JVM (spark_jobs/protobuf-jvm), with Apicurio's parser; this reader only needs names and types, so it is
small: messages (nested), enums, `repeated`, `map<K, V>`, `oneof`, `optional`, well-known types.

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

import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from clearflow_spec.avro_schema import SchemaField
from clearflow_spec.clickhouse_types import MAX_TYPE_NESTING
from clearflow_spec.field_types import default_clickhouse_type
from clearflow_spec.limits import SCHEMA_DEPTH, FlattenBudget, LimitError
from clearflow_spec.nested_types import FieldShape, array_of, map_of, scalar, struct_of

_SCALARS: dict[str, tuple[str, str]] = {  # protobuf type -> (field type, proposed ClickHouse type)
    "double": ("float", "Float64"),
    "float": ("float", "Float32"),
    "int32": ("int", "Int32"),
    "sint32": ("int", "Int32"),
    "sfixed32": ("int", "Int32"),
    "int64": ("int", "Int64"),
    "sint64": ("int", "Int64"),
    "sfixed64": ("int", "Int64"),
    "uint32": ("int", "UInt32"),
    "fixed32": ("int", "UInt32"),
    "uint64": ("int", "UInt64"),
    "fixed64": ("int", "UInt64"),
    "bool": ("bool", "Bool"),
    "string": ("string", "String"),
    "bytes": ("string", "String"),
}
_WRAPPERS = {
    "google.protobuf.DoubleValue": "double",
    "google.protobuf.FloatValue": "float",
    "google.protobuf.Int64Value": "int64",
    "google.protobuf.UInt64Value": "uint64",
    "google.protobuf.Int32Value": "int32",
    "google.protobuf.UInt32Value": "uint32",
    "google.protobuf.BoolValue": "bool",
    "google.protobuf.StringValue": "string",
    "google.protobuf.BytesValue": "bytes",
}
TIMESTAMP = "google.protobuf.Timestamp"
_TOKEN_RE = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[A-Za-z_][\w.]*|-?\d[\w.+-]*|\S', re.S
)


class ProtobufSchemaError(ValueError):
    """Text that is not a .proto file with a message; the message says what is wrong."""


class ProtobufSchemaLimitError(ProtobufSchemaError, LimitError):
    """A .proto file over a cap (`limits.SCHEMA_FIELDS`, `SCHEMA_DEPTH`); the message names it."""


@dataclass
class ProtoField:
    name: str
    type: str  # as written: "int64", "Customer", "google.protobuf.Timestamp", "map<string, int64>"
    label: str = ""  # "repeated", "optional" or ""
    number: int = 0
    oneof: str | None = None


@dataclass
class ProtoMessage:
    name: str  # full name, with the package: "shop.Order", "shop.Order.Line"
    fields: list[ProtoField] = dataclass_field(default_factory=list)


@dataclass
class ProtoFile:
    package: str
    messages: dict[str, ProtoMessage]  # by full name, in the file's order
    enums: dict[str, dict[str, int]]  # full name -> {value name: number}
    imports: list[str] = dataclass_field(default_factory=list)


def parse_proto(text: str) -> ProtoFile:
    """The messages and enums of a .proto file; ProtobufSchemaError when it is not one."""
    tokens = [t for t in _TOKEN_RE.findall(text or "") if t.strip() and not t.startswith(("//", "/*"))]
    reader = _Reader(tokens)
    package = ""
    messages: dict[str, ProtoMessage] = {}
    enums: dict[str, dict[str, int]] = {}
    imports: list[str] = []
    while not reader.done():
        word = reader.next()
        if word == "package":
            package = reader.next()
            reader.skip_statement()
        elif word == "message":
            _read_message(reader, package, messages, enums, 1)
        elif word == "enum":
            _read_enum(reader, package, enums)
        elif word in ("service", "extend"):
            reader.next()
            reader.skip_block()
        elif word == "import":
            path = reader.next()
            path = reader.next() if path in ("public", "weak") else path
            imports.append(path.strip("\"'"))
            reader.skip_statement()
        elif word in ("syntax", "edition", "option"):
            reader.skip_statement()
        elif word != ";":
            raise ProtobufSchemaError(f"unexpected {word!r} at the top level of the .proto file")
    if not messages:
        raise ProtobufSchemaError("the .proto file has no message")
    return ProtoFile(package, messages, enums, imports)


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


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at = tokens, 0

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def next(self) -> str:
        if self.done():
            raise ProtobufSchemaError("the .proto file ends in the middle of a definition")
        self.at += 1
        return self.tokens[self.at - 1]

    def peek(self) -> str:
        return "" if self.done() else self.tokens[self.at]

    def skip_statement(self) -> None:
        while self.next() != ";":
            pass

    def skip_block(self) -> None:
        depth = 0
        while True:
            word = self.next()
            if word == "{":
                depth += 1
            elif word == "}":
                depth -= 1
                if depth == 0:
                    return


def _qualify(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _read_enum(reader: _Reader, scope: str, enums: dict[str, dict[str, int]]) -> None:
    values: dict[str, int] = {}
    enums[_qualify(scope, reader.next())] = values
    reader.next()  # {
    while (word := reader.next()) != "}":
        if word in ("option", "reserved"):
            reader.skip_statement()
        elif word != ";":
            reader.next()  # =
            values[word] = int(reader.next(), 0)
            reader.skip_statement()


def _read_message(
    reader: _Reader, scope: str, messages: dict[str, ProtoMessage], enums: dict[str, dict[str, int]], depth: int
) -> None:
    if depth > SCHEMA_DEPTH.maximum:
        raise ProtobufSchemaLimitError(f"the .proto file nests messages too deep: {SCHEMA_DEPTH.exceeded()}")
    message = ProtoMessage(_qualify(scope, reader.next()))
    messages[message.name] = message
    if reader.next() != "{":
        raise ProtobufSchemaError(f"message {message.name}: '{{' expected")
    while (word := reader.next()) != "}":
        if word == "message":
            _read_message(reader, message.name, messages, enums, depth + 1)
        elif word == "enum":
            _read_enum(reader, message.name, enums)
        elif word in ("reserved", "option", "extensions"):
            reader.skip_statement()
        elif word == "extend":
            reader.next()
            reader.skip_block()
        elif word == "oneof":
            oneof = reader.next()
            reader.next()  # {
            while reader.peek() != "}":
                if reader.peek() == "option":
                    reader.skip_statement()
                    continue
                member = _read_field(reader, reader.next(), "optional")
                member.oneof = oneof
                message.fields.append(member)
            reader.next()
        elif word != ";":
            label = word if word in ("repeated", "optional", "required") else ""
            message.fields.append(_read_field(reader, reader.next() if label else word, label))


def _read_field(reader: _Reader, kind: str, label: str) -> ProtoField:
    if kind == "map":  # map < K , V > name = N ;
        parts = [reader.next() for _ in range(5)]
        kind = f"map<{parts[1]}, {parts[3]}>"
        label = "repeated"
    name = reader.next()
    if not re.fullmatch(r"[A-Za-z_]\w*", name) or reader.next() != "=":
        raise ProtobufSchemaError(f"unexpected {name!r} where a field name was expected")
    number = int(reader.next(), 0)
    reader.skip_statement()
    return ProtoField(name, kind.lstrip("."), label, number)


def _resolve(proto: ProtoFile, scope: str, name: str) -> str:
    """The full name `name` refers to from inside message `scope` (protobuf's scoping: innermost first)."""
    if name in _SCALARS or name.startswith("google.protobuf."):
        return name
    parts = scope.split(".")
    for depth in range(len(parts), -1, -1):
        candidate = ".".join([*parts[:depth], name]) if depth else name
        if candidate in proto.messages or candidate in proto.enums:
            return candidate
    raise ProtobufSchemaError(f"message {scope}: unknown type {name!r}")


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
        kind = _resolve(proto, message.name, item.type)
        if kind in _SCALARS:
            field_type, column = _SCALARS[kind]
            out.append(SchemaField(path, field_type, kind, optional, _nullable(column, optional)))
        elif kind in proto.enums:
            column = _nullable("LowCardinality(String)", optional)
            out.append(SchemaField(path, "string", "enum", optional, column))
        elif kind == TIMESTAMP:
            out.append(SchemaField(path, "datetime", "Timestamp", True, "Nullable(DateTime64(6, 'UTC'))"))
        elif kind in _WRAPPERS:
            field_type, column = _SCALARS[_WRAPPERS[kind]]
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
    if name in _SCALARS:
        return scalar(_SCALARS[name][0])
    kind = _resolve(proto, scope, name)
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


# -- reading one record (the wizard's sample; the engine decodes in the JVM) ---------------------------------

_WELL_KNOWN_MODULES = {
    "google/protobuf/timestamp.proto": "timestamp_pb2",
    "google/protobuf/wrappers.proto": "wrappers_pb2",
    "google/protobuf/duration.proto": "duration_pb2",
    "google/protobuf/struct.proto": "struct_pb2",
    "google/protobuf/any.proto": "any_pb2",
    "google/protobuf/empty.proto": "empty_pb2",
    "google/protobuf/field_mask.proto": "field_mask_pb2",
}


def decode_record(text: str, body: bytes) -> dict[str, Any]:
    """The JSON-able value of one Confluent-framed record's body (after the 5-byte header: the message indexes,
    then the message), read with its writer schema `text`. ValueError naming what is wrong."""
    message_type = _message_types(text)
    count, at = _zigzag(body, 0)
    if count == 0:
        path = [0]
    else:
        path = []
        for _ in range(count):
            index, at = _zigzag(body, at)
            path.append(index)
    types = message_type["top"]
    name = None
    for index in path:
        if not 0 <= index < len(types):
            raise ValueError(f"the record names message index {index}, which the schema does not have")
        name = types[index]
        types = message_type["nested"].get(name, [])
    message = message_type["classes"](name)()
    try:
        message.ParseFromString(body[at:])
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ValueError(f"the message does not parse: {exc}") from None
    return _to_python(message)


def _zigzag(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if at >= len(data):
            raise ValueError("the record ends inside its message indexes")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at


def _message_types(text: str) -> dict[str, Any]:
    """The file's message classes (built from its descriptor) and the order of its messages, for the indexes."""
    import importlib

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = parse_proto(text)
    pool = descriptor_pool.DescriptorPool()
    file = descriptor_pb2.FileDescriptorProto(name="schema.proto", package=proto.package, syntax="proto3")
    for path in proto.imports:
        module = _WELL_KNOWN_MODULES.get(path)
        if module is None:
            raise ValueError(f"imports {path}: only the well-known google/protobuf types can be imported")
        pool.AddSerializedFile(importlib.import_module(f"google.protobuf.{module}").DESCRIPTOR.serialized_pb)
        file.dependency.append(path)
    builders: dict[str, Any] = {}
    top: list[str] = []
    nested: dict[str, list[str]] = {}
    for name, message in proto.messages.items():
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        if parent in proto.messages:
            builders[name] = builders[parent].nested_type.add(name=name.rsplit(".", 1)[1])
            nested.setdefault(parent, []).append(name)
        else:
            builders[name] = file.message_type.add(name=name.rsplit(".", 1)[-1])
            top.append(name)
        _add_fields(proto, message, builders[name])
    for name, values in proto.enums.items():
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        target = builders[parent].enum_type if parent in builders else file.enum_type
        enum = target.add(name=name.rsplit(".", 1)[-1])
        for value, number in values.items():
            enum.value.add(name=value, number=number)
    pool.Add(file)
    return {
        "top": top,
        "nested": nested,
        "classes": lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name)),
    }


def _add_fields(proto: ProtoFile, message: ProtoMessage, builder: Any) -> None:
    from google.protobuf import descriptor_pb2

    kinds = descriptor_pb2.FieldDescriptorProto
    oneofs: dict[str, int] = {}
    for item in message.fields:
        field = builder.field.add(name=item.name, number=item.number, label=kinds.LABEL_OPTIONAL)
        kind = item.type
        if kind.startswith("map<"):
            key, value = (part.strip() for part in kind[4:-1].split(","))
            entry = builder.nested_type.add(name="".join(p.title() for p in item.name.split("_")) + "Entry")
            entry.options.map_entry = True
            for number, (name, part) in enumerate((("key", key), ("value", value)), start=1):
                _set_type(proto, message.name, entry.field.add(name=name, number=number), part)
            field.type_name = f".{message.name}.{entry.name}"
            field.type = kinds.TYPE_MESSAGE
            field.label = kinds.LABEL_REPEATED
            continue
        _set_type(proto, message.name, field, kind)
        if item.label == "repeated":
            field.label = kinds.LABEL_REPEATED
        if item.oneof is not None:
            field.oneof_index = oneofs.setdefault(item.oneof, len(oneofs))
    for name in oneofs:
        builder.oneof_decl.add(name=name)
    for item, field in zip(message.fields, builder.field, strict=False):
        if item.label == "optional" and item.oneof is None:  # proto3 optional: a synthetic oneof, after the rest
            field.proto3_optional = True
            field.oneof_index = len(builder.oneof_decl)
            builder.oneof_decl.add(name=f"_{item.name}")


def _set_type(proto: ProtoFile, scope: str, field: Any, kind: str) -> None:
    from google.protobuf import descriptor_pb2

    kinds = descriptor_pb2.FieldDescriptorProto
    field.label = kinds.LABEL_OPTIONAL
    if kind in _SCALARS:
        field.type = getattr(kinds, f"TYPE_{kind.upper()}")
        return
    full = _resolve(proto, scope, kind)
    field.type_name = f".{full}"
    field.type = kinds.TYPE_ENUM if full in proto.enums else kinds.TYPE_MESSAGE


def _to_python(message: Any) -> dict[str, Any]:
    """A message as JSON-able values: enums by name, bytes as base64, Timestamps as ISO text, numbers as numbers."""
    import base64

    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {str(k): _value(v, value_field, base64) for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value(v, field, base64) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _value(value, field, base64)
    return out


def _value(value: Any, field: Any, base64: Any) -> Any:
    if field.enum_type is not None:
        found = field.enum_type.values_by_number.get(value)
        return found.name if found else value
    if field.type == field.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if field.message_type is not None:
        name = field.message_type.full_name
        if name == TIMESTAMP:
            return value.ToJsonString()
        if name in _WRAPPERS:
            return value.value
        return _to_python(value)
    return value
