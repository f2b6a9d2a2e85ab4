"""Protobuf test records: a .proto registered in the real schema registry as a PROTOBUF schema, and messages of it
built with the `protobuf` package from the same definition, framed in the Confluent wire format."""

from __future__ import annotations

from typing import Any

ORDER_PROTO = """syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

message Order {
  string event_id = 1;
  int64 qty = 2;
  Customer customer = 3;
  google.protobuf.Timestamp paid_at = 4;
  Status status = 5;
  repeated string tags = 6;

  enum Status {
    NEW = 0;
    PAID = 1;
  }
  message Customer {
    string name = 1;
  }
}
"""
# Version 2: producers add a field (schema evolution), numbered after the others as Protobuf requires.
ORDER_PROTO_V2 = ORDER_PROTO.replace(
    "  repeated string tags = 6;\n", "  repeated string tags = 6;\n  string coupon = 7;\n", 1
)
PAID_AT_SECONDS = 1_767_268_800  # 2026-01-01T12:00:00Z


def order_class(*, v2: bool = False) -> Any:
    """The `shop.Order` message class, from a descriptor that says what ORDER_PROTO (ORDER_PROTO_V2) says."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="order.proto", package="shop", syntax="proto3", dependency=["google/protobuf/timestamp.proto"]
    )
    order = proto.message_type.add(name="Order")
    for name, number, kind, type_name, label in [
        ("event_id", 1, field.TYPE_STRING, "", field.LABEL_OPTIONAL),
        ("qty", 2, field.TYPE_INT64, "", field.LABEL_OPTIONAL),
        ("customer", 3, field.TYPE_MESSAGE, ".shop.Order.Customer", field.LABEL_OPTIONAL),
        ("paid_at", 4, field.TYPE_MESSAGE, ".google.protobuf.Timestamp", field.LABEL_OPTIONAL),
        ("status", 5, field.TYPE_ENUM, ".shop.Order.Status", field.LABEL_OPTIONAL),
        ("tags", 6, field.TYPE_STRING, "", field.LABEL_REPEATED),
        *([("coupon", 7, field.TYPE_STRING, "", field.LABEL_OPTIONAL)] if v2 else []),
    ]:
        added = order.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            added.type_name = type_name
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    customer = order.nested_type.add(name="Customer")
    customer.field.add(name="name", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def register_proto(registry_url: str, subject: str, proto: str = ORDER_PROTO) -> int:
    """Register `proto` as a PROTOBUF schema under `subject`; its schema id."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": registry_url})
    try:
        return int(client.register_schema(subject, Schema(proto, "PROTOBUF")))
    finally:
        client.close()


def framed(schema_id: int, body: bytes, indexes: bytes = b"\x00") -> bytes:
    """A record in the Confluent Protobuf wire format (message indexes b"\\x00": the file's first message)."""
    return b"\x00" + schema_id.to_bytes(4, "big") + indexes + body


def order_bytes(
    event_id: str, qty: int, *, paid: bool = True, tags: tuple[str, ...] = (), coupon: str | None = None
) -> bytes:
    """One `shop.Order`; with a coupon, a version 2 message."""
    message = order_class(v2=coupon is not None)()
    message.event_id = event_id
    message.qty = qty
    message.customer.name = f"c-{event_id}"
    message.paid_at.seconds = PAID_AT_SECONDS
    message.status = 1 if paid else 0
    message.tags.extend(tags)
    if coupon is not None:
        message.coupon = coupon
    return message.SerializeToString()
