"""Protobuf schemas (.proto text, as a schema registry holds them) read as the pipeline's fields. No Spark.

The counterpart of `spark_jobs.avro_schema` for `source.format: protobuf`: the web app (field list, spec checks)
and the engine (which fields each writer schema has) read a .proto the same way. The engine's decoder itself runs
in the JVM (spark_jobs/protobuf-jvm), with Apicurio's parser; this reader only needs names and types, so it is
small: messages (nested), enums, `repeated`, `map<K, V>`, `oneof`, `optional`, well-known types.

The record's message is the file's first message (what a Confluent serializer writes as message index 0):
- a message-typed field nests (`customer.name`), like an Avro record; a field of a message type that recurses is
  `json`;
- `repeated` fields and maps are `json` (their JSON text); enums are strings; bytes are `string` (base64 text);
- `google.protobuf.Timestamp` is `datetime` (`DateTime64(6, 'UTC')`); wrapper types (`StringValue`, ...) are their
  value, nullable; other well-known messages are `json`;
- proto3 scalars read their default when absent (never NULL); `optional` ones, and those under a message, may be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spark_jobs.avro_schema import SchemaField

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


@dataclass
class ProtoField:
    name: str
    type: str  # as written: "int64", "Customer", "google.protobuf.Timestamp", "map<string, int64>"
    label: str = ""  # "repeated", "optional" or ""


@dataclass
class ProtoMessage:
    name: str  # full name, with the package: "shop.Order", "shop.Order.Line"
    fields: list[ProtoField] = field(default_factory=list)


@dataclass
class ProtoFile:
    package: str
    messages: dict[str, ProtoMessage]  # by full name, in the file's order
    enums: set[str]  # full names


def parse_proto(text: str) -> ProtoFile:
    """The messages and enums of a .proto file; ProtobufSchemaError when it is not one."""
    tokens = [t for t in _TOKEN_RE.findall(text or "") if t.strip() and not t.startswith(("//", "/*"))]
    reader = _Reader(tokens)
    package = ""
    messages: dict[str, ProtoMessage] = {}
    enums: set[str] = set()
    while not reader.done():
        word = reader.next()
        if word == "package":
            package = reader.next()
            reader.skip_statement()
        elif word == "message":
            _read_message(reader, package, messages, enums)
        elif word == "enum":
            enums.add(_qualify(package, reader.next()))
            reader.skip_block()
        elif word in ("service", "extend"):
            reader.next()
            reader.skip_block()
        elif word in ("syntax", "edition", "import", "option"):
            reader.skip_statement()
        elif word != ";":
            raise ProtobufSchemaError(f"unexpected {word!r} at the top level of the .proto file")
    if not messages:
        raise ProtobufSchemaError("the .proto file has no message")
    return ProtoFile(package, messages, enums)


def schema_fields(text: str) -> list[SchemaField]:
    """Every leaf field of the file's first message (the record's message), in the schema's order."""
    proto = parse_proto(text)
    out: list[SchemaField] = []
    first = next(iter(proto.messages.values()))
    _walk(proto, first, "", False, out, set())
    return out


def fields_by_path(text: str) -> dict[str, SchemaField]:
    return {found.path: found for found in schema_fields(text)}


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


def _read_message(reader: _Reader, scope: str, messages: dict[str, ProtoMessage], enums: set[str]) -> None:
    message = ProtoMessage(_qualify(scope, reader.next()))
    messages[message.name] = message
    if reader.next() != "{":
        raise ProtobufSchemaError(f"message {message.name}: '{{' expected")
    while (word := reader.next()) != "}":
        if word == "message":
            _read_message(reader, message.name, messages, enums)
        elif word == "enum":
            enums.add(_qualify(message.name, reader.next()))
            reader.skip_block()
        elif word in ("reserved", "option", "extensions"):
            reader.skip_statement()
        elif word == "extend":
            reader.next()
            reader.skip_block()
        elif word == "oneof":
            reader.next()
            reader.next()  # {
            while reader.peek() != "}":
                if reader.peek() == "option":
                    reader.skip_statement()
                    continue
                message.fields.append(_read_field(reader, reader.next(), "optional"))
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
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ProtobufSchemaError(f"unexpected {name!r} where a field name was expected")
    reader.skip_statement()
    return ProtoField(name, kind.lstrip("."), label)


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


def _walk(proto: ProtoFile, message: ProtoMessage, prefix: str, nullable: bool, out: list[SchemaField], seen: set[str]):
    for item in message.fields:
        path = prefix + item.name
        optional = nullable or item.label == "optional"
        if item.label == "repeated":
            label = item.type if item.type.startswith("map<") else f"repeated {item.type}"
            out.append(SchemaField(path, "json", label, False, "String"))
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
            _walk(proto, proto.messages[kind], path + ".", True, out, {*seen, message.name})
        else:  # a recursive message, or a well-known message with no column of its own: its JSON text
            out.append(SchemaField(path, "json", kind.rsplit(".", 1)[-1], True, "String"))


def _nullable(column: str, nullable: bool) -> str:
    if not nullable:
        return column
    if column.startswith("LowCardinality("):
        return f"LowCardinality(Nullable({column.removeprefix('LowCardinality(')})"
    return f"Nullable({column})"
