"""Protobuf's scalar and well-known types as the pipeline reads them: each scalar's field type and proposed
ClickHouse column, the wrapper types (`google.protobuf.StringValue`, ...) and the value each wraps, the Timestamp."""

from __future__ import annotations

SCALARS: dict[str, tuple[str, str]] = {  # protobuf type -> (field type, proposed ClickHouse type)
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
WRAPPERS = {
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
