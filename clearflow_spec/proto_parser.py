"""Reading a .proto file's text (as a schema registry holds it): its package, messages (nested, with their fields,
`repeated`, `map<K, V>`, `oneof`, `optional`), enums and imports, and what a type name refers to from inside a
message. Only names and types: `clearflow_spec.protobuf_schema` reads them as the pipeline's fields."""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from clearflow_spec.limits import SCHEMA_DEPTH, LimitError
from clearflow_spec.protobuf_types import SCALARS

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


def resolve_type(proto: ProtoFile, scope: str, name: str) -> str:
    """The full name `name` refers to from inside message `scope` (protobuf's scoping: innermost first)."""
    if name in SCALARS or name.startswith("google.protobuf."):
        return name
    parts = scope.split(".")
    for depth in range(len(parts), -1, -1):
        candidate = ".".join([*parts[:depth], name]) if depth else name
        if candidate in proto.messages or candidate in proto.enums:
            return candidate
    raise ProtobufSchemaError(f"message {scope}: unknown type {name!r}")
