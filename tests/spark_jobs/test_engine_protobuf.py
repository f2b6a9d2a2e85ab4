"""Protobuf topics end to end against the real services: Apache Kafka, Apicurio's schema registry (Confluent API,
PROTOBUF schemas), ClickHouse. Records are in the Confluent wire format, decoded in the JVM."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import produce
from protobuf_events import ORDER_PROTO, PAID_AT_SECONDS, framed, order_bytes, register_proto

from clearflow_spec.spec import SpecError, parse_spec
from spark_jobs.pipeline import source_schemas
from spark_jobs.query import start_query, stop_query
from tests.specs import ORDER_COLUMNS, ORDER_FIELDS, spec_dict

pytestmark = pytest.mark.spark


def protobuf_spec(*, kafka_bootstrap: str, clickhouse: Any, topic: str, registry_url: str, table: str) -> dict:
    return spec_dict(
        version=1,
        name=f"protobuf-{table}",
        kafka=kafka_bootstrap,
        topics=[topic],
        format="protobuf",
        registry_url=registry_url,
        fields=[*ORDER_FIELDS, ("status", "string"), ("tags", "json")],
        clickhouse=clickhouse,
        table=table,
        columns=[*ORDER_COLUMNS, ("status", "status", "String"), ("tags", "tags", "String")],
    )


def test_protobuf_records_are_deduplicated_and_bad_ones_are_dead_letters(
    spark, kafka_bootstrap, schema_registry_url, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    schema_id = register_proto(schema_registry_url, f"{topic}-value")
    orders = [
        framed(schema_id, order_bytes(f"o{i:02d}", i, paid=i % 2 == 0, tags=("a", "b") if i == 3 else ()))
        for i in range(10)
    ]
    records = [(0, value) for value in orders + orders[:4]]  # 4 duplicates
    records += [
        (0, b'{"event_id": "json-by-mistake"}'),
        (0, b"\x00\x00\x00\x7f\xff\x00\x0a\x01x"),  # id 32767: in no subject, not in the registry
        (0, framed(schema_id, b"\x0a\xff\xff")),  # a string field whose length runs past the end
        (0, framed(schema_id, order_bytes("o99", 1), indexes=b"\x02\x0a")),  # message index 5: no such message
    ]
    produce(kafka_bootstrap, topic, records)
    table = f"protobuf_{topic.replace('-', '_')}"
    spec = parse_spec(
        protobuf_spec(
            kafka_bootstrap=kafka_bootstrap,
            clickhouse=clickhouse_server,
            topic=topic,
            registry_url=schema_registry_url,
            table=table,
        )
    )
    # The id no subject version has is looked up once (the run does this when a batch meets it): not there.
    schemas = source_schemas(spec, extra_ids={32767})
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True}, schemas=schemas)
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)

    rows = ch.query(
        f"SELECT event_id, qty, customer, toUnixTimestamp(paid_at), status, tags FROM {table} ORDER BY event_id"
    ).result_rows
    assert rows == [
        (
            f"o{i:02d}",
            i,
            f"c-o{i:02d}",
            PAID_AT_SECONDS,
            "PAID" if i % 2 == 0 else "NEW",
            '["a","b"]' if i == 3 else "[]",
        )
        for i in range(10)
    ]
    reasons = sorted(reason for (reason,) in ch.query(f"SELECT reason FROM {table}_dlq").result_rows)
    assert reasons[0].startswith(f"cannot decode the record with Protobuf schema id {schema_id}: ")
    assert reasons[1:] == [
        "not in the Confluent wire format: the first byte is 0x7B, expected 0x00",
        "schema id 32767 is not in the schema registry",
        f"the record names message index 5, which Protobuf schema id {schema_id} does not have",
    ]


def test_a_field_no_schema_version_has_stops_the_start_with_its_path(
    spark, kafka_bootstrap, schema_registry_url, clickhouse_server, new_topic, tmp_path
):
    topic = new_topic(1)
    register_proto(schema_registry_url, f"{topic}-value", ORDER_PROTO)
    data = protobuf_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topic=topic,
        registry_url=schema_registry_url,
        table="never_made",
    )
    data["source"]["fields"].append({"path": "coupon", "type": "string"})
    with pytest.raises(SpecError) as info:
        start_query(spark, parse_spec(data), checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    assert [(i.path, i.message) for i in info.value.errors] == [
        ("source.fields[6].path", f"field 'coupon' is not in any version of subject '{topic}-value'")
    ]
