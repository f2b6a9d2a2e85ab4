"""Avro events as producers write them: confluent-kafka's own AvroSerializer against the real schema registry
(magic byte 0, the schema id, the Avro body), with every kind of field the product reads from a schema."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

from tests.webapp.conftest import produce_records

# Every kind of field the sample step must read from a schema: nested records, arrays, enums, unions with null,
# logical types.
ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "qty", "type": "long"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "paid_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
            },
        },
    ],
}
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}],
}


def avro_order(i: int, **extra: Any) -> dict:
    import datetime as dt

    return {
        "order_id": str(uuid.UUID(int=9000 + i, version=4)),
        "qty": i,
        "price": Decimal("12.50") + i,
        "paid_at": dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC) + dt.timedelta(minutes=i),
        "day": dt.date(2026, 11, 1),
        "status": "PAID" if i % 2 else "NEW",
        "tags": ["a", "b"],
        "note": None if i % 2 else f"note {i}",
        "customer": {"id": 100 + i, "name": f"Customer {i}"},
        **extra,
    }


def serialized(registry_url: str, topic: str, schema: dict, values: list[dict]) -> list[bytes]:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": registry_url})
    serializer = AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True})
    context = SerializationContext(topic, MessageField.VALUE)
    return [serializer(value, context) for value in values]


def make_avro_topic(kafka_bootstrap: str, schema_registry_url: str) -> str:
    """A new topic with 3 events of version 1, then 2 of version 2 (with `coupon`), then one that is not Avro."""
    topic = f"avro_orders_{uuid.uuid4().hex[:8]}"
    v1 = serialized(schema_registry_url, topic, ORDER_V1, [avro_order(i) for i in range(3)])
    v2 = serialized(schema_registry_url, topic, ORDER_V2, [avro_order(i, coupon="XMAS") for i in range(3, 5)])
    produce_records(kafka_bootstrap, topic, [*v1, *v2, b'{"not": "avro"}'])
    return topic
