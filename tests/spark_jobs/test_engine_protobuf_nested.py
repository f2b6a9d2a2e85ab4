"""Protobuf repeated fields, maps and messages inside them become the nested field types JSON and Avro get
(`array<T>`, `map<string,T>`, `struct<...>`), proposed as Array, Map and Tuple columns and written to them, against
the real registry (PROTOBUF schemas), broker and ClickHouse."""

from __future__ import annotations

import pytest
from engine_helpers import produce
from protobuf_events import framed, register_proto

from clearflow_spec.protobuf_record import _message_types
from clearflow_spec.protobuf_schema import schema_fields
from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query
from tests.specs import spec_dict

BASKET_PROTO = """syntax = "proto3";
package shop;

message Basket {
  string event_id = 1;
  repeated Item items = 2;
  map<string, int64> counts = 3;
  repeated Status statuses = 4;
  repeated int64 codes = 5;

  message Item {
    string sku = 1;
    uint32 qty = 2;
    repeated string notes = 3;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
}
"""
INFERRED = {
    "event_id": ("string", "String"),
    "items": (
        "array<struct<sku:string,qty:int,notes:array<string>>>",
        "Array(Tuple(sku Nullable(String), qty Nullable(Int64), notes Array(Nullable(String))))",
    ),
    "counts": ("map<string,int>", "Map(String, Nullable(Int64))"),
    "statuses": ("array<string>", "Array(Nullable(String))"),
    "codes": ("array<int>", "Array(Nullable(Int64))"),
}


@pytest.mark.fast
def test_repeated_fields_and_maps_of_a_proto_are_nested_field_types():
    fields = schema_fields(BASKET_PROTO)
    assert {f.path: (f.type, f.clickhouse_type) for f in fields} == INFERRED


def _basket(event_id: str, items: list[tuple[str, int, list[str]]], counts: dict[str, int], **more) -> bytes:
    basket = _message_types(BASKET_PROTO)["classes"]("shop.Basket")()
    basket.event_id = event_id
    for sku, qty, notes in items:
        basket.items.add(sku=sku, qty=qty, notes=notes)
    basket.counts.update(counts)
    basket.statuses.extend(more.get("statuses", []))
    basket.codes.extend(more.get("codes", []))
    return basket.SerializeToString()


@pytest.mark.spark
def test_protobuf_nested_fields_are_written_to_array_map_and_tuple_columns(
    spark, kafka_bootstrap, schema_registry_url, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    schema_id = register_proto(schema_registry_url, f"{topic}-value", BASKET_PROTO)
    first = framed(schema_id, _basket("b1", [("apple", 2, ["ripe"]), ("pear", 1, [])], {"eu": 3}, statuses=[1, 0]))
    second = framed(schema_id, _basket("b2", [], {}, codes=[7, -1]))
    produce(kafka_bootstrap, topic, [(0, first), (0, second), (0, first)])
    table = f"pb_nested_{topic.replace('-', '_')}"
    fields = schema_fields(BASKET_PROTO)
    spec = parse_spec(
        spec_dict(
            version=1,
            name=f"protobuf-{table}",
            kafka=kafka_bootstrap,
            topics=[topic],
            format="protobuf",
            registry_url=schema_registry_url,
            fields=[(f.path, f.type) for f in fields],
            clickhouse=clickhouse_server,
            table=table,
            create_table=True,
            engine="MergeTree",
            columns=[(f.path, f.path, f.clickhouse_type) for f in fields],
        )
    )
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    rows = ch.query(
        f"SELECT event_id, toString(items), toString(counts), toString(statuses), toString(codes) FROM {table} "
        "ORDER BY event_id"
    ).result_rows
    assert rows == [
        ("b1", "[('apple',2,['ripe']),('pear',1,[])]", "{'eu':3}", "['PAID','NEW']", "[]"),
        ("b2", "[]", "{}", "[]", "[7,-1]"),
    ]
    assert ch.query(f"SELECT count() FROM {table}_dlq").result_rows == [(0,)]
