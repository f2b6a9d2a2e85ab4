"""The Avro parse step on small batch DataFrames (no Kafka, no registry): records encoded here with fastavro,
decoded by Spark's from_avro in the JVM. Expected values are written out by hand."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

import fastavro
import pytest
from pyspark.errors import PySparkException
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

from clearflow_spec.avro_schema import WriterSchemas, wire_format
from spark_jobs.avro_decode import SCHEMA_ID, UNKNOWN_SCHEMA_ID, parse_avro
from spark_jobs.transforms import ERROR, Field

KAFKA_SCHEMA = StructType(
    [
        StructField("_cf_value", BinaryType()),
        StructField("_kafka_topic", StringType()),
        StructField("_kafka_partition", LongType()),
        StructField("_kafka_offset", LongType()),
        StructField("_kafka_timestamp", TimestampType()),
    ]
)
V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "long"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "name", "type": "string"}]},
        },
    ],
}
V2 = {
    **V1,
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "string"},  # retyped: older consumers read it as text
        V1["fields"][2],
        {"name": "coupon", "type": ["null", "string"], "default": None},
    ],
}
FIELDS = [Field("id", "string"), Field("qty", "int"), Field("customer.name", "string")]


def encode(schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def batch(spark, values: list[bytes | None]):
    time = dt.datetime(2026, 1, 1, 12, 0, 0)
    return spark.createDataFrame(
        [(value, "orders", 0, offset, time) for offset, value in enumerate(values)], KAFKA_SCHEMA
    )


def rows(df) -> list[dict]:
    return [row.asDict(recursive=True) for row in df.orderBy("_kafka_offset").collect()]


def test_records_of_two_schema_versions_each_decode_with_their_own_schema(spark) -> None:
    schemas = WriterSchemas({1: json.dumps(V1), 2: json.dumps(V2)})
    values = [
        wire_format(1, encode(V1, {"id": "a", "qty": 3, "customer": {"name": "Ann"}})),
        wire_format(2, encode(V2, {"id": "b", "qty": "4", "customer": {"name": "Bob"}, "coupon": "X"})),
        wire_format(2, encode(V2, {"id": "c", "qty": "many", "customer": {"name": "Cy"}, "coupon": None})),
    ]
    out = rows(parse_avro(batch(spark, values), FIELDS, schemas))
    assert [(r["id"], r["qty"], r["customer"]["name"], r[SCHEMA_ID], r[ERROR]) for r in out] == [
        ("a", 3, "Ann", 1, None),
        ("b", 4, "Bob", 2, None),
        ("c", None, "Cy", 2, "field 'qty': cannot convert 'many' to int"),
    ]


def test_a_field_one_version_lacks_is_null_in_its_records(spark) -> None:
    schemas = WriterSchemas({1: json.dumps(V1), 2: json.dumps(V2)})
    values = [
        wire_format(1, encode(V1, {"id": "a", "qty": 3, "customer": {"name": "Ann"}})),
        wire_format(2, encode(V2, {"id": "b", "qty": "4", "customer": {"name": "Bob"}, "coupon": "SPRING"})),
    ]
    out = rows(parse_avro(batch(spark, values), [Field("id", "string"), Field("coupon", "string")], schemas))
    assert [(r["id"], r["coupon"], r[ERROR]) for r in out] == [("a", None, None), ("b", "SPRING", None)]


def test_records_that_cannot_be_decoded_are_dead_letters_with_their_reason(spark) -> None:
    schemas = WriterSchemas({1: json.dumps(V1)}, unreadable={9: "is not in the schema registry"})
    good = encode(V1, {"id": "a", "qty": 3, "customer": {"name": "Ann"}})
    values = [
        None,
        b"\x00\x00",
        b'{"id": "a"}',
        wire_format(9, good),
        wire_format(1, b"\x02"),  # a string of length 1 whose byte is missing, then nothing
    ]
    out = rows(parse_avro(batch(spark, values), FIELDS, schemas))
    assert [r[ERROR] for r in out] == [
        "empty record value (NULL)",
        "record too short for the Confluent wire format (2 bytes)",
        "not in the Confluent wire format: the first byte is 0x7B, expected 0x00",
        "schema id 9 is not in the schema registry",
        "cannot decode the record with Avro schema id 1: its bytes do not match the schema",
    ]


def test_a_schema_id_the_run_has_not_loaded_stops_the_batch_naming_the_id(spark) -> None:
    schemas = WriterSchemas({1: json.dumps(V1)})
    value = wire_format(7, encode(V1, {"id": "a", "qty": 3, "customer": {"name": "Ann"}}))
    with pytest.raises(PySparkException, match=f"{UNKNOWN_SCHEMA_ID} 7"):
        parse_avro(batch(spark, [value]), FIELDS, schemas).collect()


def test_plain_avro_with_a_pasted_schema_and_logical_types(spark) -> None:
    schema = {
        "type": "record",
        "name": "Payment",
        "fields": [
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "paid_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
    payment_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    record = {
        "id": str(payment_id),
        "amount": decimal.Decimal("12.34"),
        "paid_at": dt.datetime(2026, 3, 1, 10, 30, 0, 123000, tzinfo=dt.UTC),
        "day": dt.date(2026, 3, 1),
        "status": "PAID",
        "tags": ["a", "b"],
        "note": None,
    }
    fields = [
        Field("id", "uuid"),
        Field("amount", "string"),
        Field("paid_at", "datetime"),
        Field("day", "datetime"),
        Field("status", "string"),
        Field("tags", "json"),
        Field("note", "string"),
    ]
    out = rows(
        parse_avro(
            batch(spark, [encode(schema, record)]), fields, WriterSchemas({0: json.dumps(schema)}, confluent=False)
        )
    )
    assert out[0][ERROR] is None
    assert {k: out[0][k] for k in ("id", "amount", "paid_at", "day", "status", "tags", "note")} == {
        "id": str(payment_id),
        "amount": "12.34",
        "paid_at": dt.datetime(2026, 3, 1, 10, 30, 0, 123000),
        "day": dt.datetime(2026, 3, 1, 0, 0),
        "status": "PAID",
        "tags": '["a","b"]',
        "note": None,
    }
