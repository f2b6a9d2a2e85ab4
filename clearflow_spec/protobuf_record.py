"""Reading one Protobuf record in the Confluent wire format (the wizard's sample; the engine decodes in the JVM):
the message its indexes name, built from the writer schema's descriptor with the `protobuf` package, as JSON-able
values."""

from __future__ import annotations

from typing import Any

from clearflow_spec.proto_parser import ProtoFile, ProtoMessage, parse_proto, resolve_type
from clearflow_spec.protobuf_types import SCALARS, TIMESTAMP, WRAPPERS

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
    if kind in SCALARS:
        field.type = getattr(kinds, f"TYPE_{kind.upper()}")
        return
    full = resolve_type(proto, scope, kind)
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
        if name in WRAPPERS:
            return value.value
        return _to_python(value)
    return value
