"""Nested JSON events through the engine into the real ClickHouse: arrays, maps and structs into Array, Map, Tuple
and Nested columns, an array exploded into one row per element, and the column types that take text (Enum8,
Enum16, FixedString, Decimal, IPv4, IPv6, JSON). A value that does not fit is a dead letter naming its element."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from ipaddress import IPv4Address, IPv6Address

import pytest
from engine_helpers import produce

from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query
from tests.specs import spec_dict

FIELDS = [
    ("order_id", "string"),
    ("status", "string"),
    ("channel", "string"),
    ("tags", "array<string>"),
    ("attrs", "map<string,int>"),
    ("ship", "struct<city:string,zip:string>"),
    ("items", "array<struct<sku:string,qty:int,price:float>>"),
    ("parts", "array<struct<name:string,n:int>>"),
    ("ip", "string"),
    ("ip6", "string"),
    ("meta", "struct<source:string,v:int>"),
]
COLUMNS = [
    ("order_id", "order_id", "String"),
    ("status", "status", "Enum8('new' = 1, 'paid' = 2)"),
    ("channel", "channel", "Enum16('web' = 1000, 'app' = 2000)"),
    ("tags", "tags", "Array(LowCardinality(String))"),
    ("attrs", "attrs", "Map(String, Nullable(Int64))"),
    ("ship", "ship", "Tuple(city String, zip FixedString(5))"),
    ("items.sku", "sku", "LowCardinality(String)"),
    ("items.qty", "qty", "UInt32"),
    ("items.price", "price", "Decimal(10, 2)"),
    ("parts", "parts", "Nested(name String, n UInt16)"),
    ("ip", "ip", "IPv4"),
    ("ip6", "ip6", "IPv6"),
    ("meta", "meta", "JSON"),
]


def _order(order_id: str, **changes: object) -> dict:
    order = {
        "order_id": order_id,
        "status": "paid",
        "channel": "app",
        "tags": ["gift", "express"],
        "attrs": {"weight": 3, "boxes": None},
        "ship": {"city": "Lyon", "zip": "69001"},
        "items": [{"sku": "a-1", "qty": 2, "price": 9.99}, {"sku": "b-2", "qty": 1, "price": 120.5}],
        "parts": [{"name": "lid", "n": 1}, {"name": "box", "n": 2}],
        "ip": "10.0.0.7",
        "ip6": "2001:db8::1",
        "meta": {"source": "web", "v": 2},
    }
    order.update(changes)
    return order


@pytest.mark.spark
def test_nested_json_is_written_to_nested_columns_one_row_per_item(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    data = spec_dict(
        version=1,
        name=f"p-{uuid.uuid4().hex[:8]}",
        kafka=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        starting_offsets="earliest",
        fields=FIELDS,
        columns=COLUMNS,
        dedup="order_id",
        order_by=["order_id"],
        table=f"t_{uuid.uuid4().hex[:10]}",
        create_table=True,
        engine="MergeTree",
        explode="items",
    )
    spec = parse_spec(data)
    bad_qty = [{"sku": "c-3", "qty": 1, "price": 1.0}, {"sku": "c-4", "qty": -1, "price": 1.0}]
    produce(
        kafka_bootstrap,
        topic,
        [
            (0, _order("o-1")),
            (0, _order("o-1", status="new")),  # a duplicate of o-1: dropped before its items become rows
            (0, _order("o-2", items=[{"sku": "z-9", "qty": 5, "price": 0.5}], tags=[], attrs={})),
            (0, _order("o-3", items=bad_qty)),
            (0, _order("o-4", attrs={"weight": "heavy"})),
            (0, _order("o-5", status="lost")),
            (0, _order("o-6", ip="300.1.1.1")),
            (0, _order("o-7", items=[])),  # no items: no row
            (0, _order("o-8", channel="fax")),
        ],
    )
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)

    table = spec.sink.table
    rows = ch.query(
        f"SELECT order_id, toString(status), toString(channel), tags, attrs, ship, sku, qty, price, `parts.name`, "
        f"`parts.n`, ip, ip6, toJSONString(meta) FROM {table} ORDER BY order_id, sku"
    ).result_rows
    shared = (["lid", "box"], [1, 2], IPv4Address("10.0.0.7"), IPv6Address("2001:db8::1"), '{"source":"web","v":2}')
    o1 = ("o-1", "paid", "app", ["gift", "express"], {"weight": 3, "boxes": None}, {"city": "Lyon", "zip": b"69001"})
    o2 = ("o-2", "paid", "app", [], {}, {"city": "Lyon", "zip": b"69001"})
    assert rows == [
        (*o1, "a-1", 2, Decimal("9.99"), *shared),
        (*o1, "b-2", 1, Decimal("120.50"), *shared),
        (*o2, "z-9", 5, Decimal("0.50"), *shared),
    ]
    reasons = ch.query(
        f"SELECT JSONExtractString(raw, 'order_id'), reason FROM {spec.sink.dead_letter_table} ORDER BY 1"
    ).result_rows
    assert reasons == [
        ("o-3", "field 'items[1].qty': cannot write '-1' to UInt32"),
        ("o-4", "field 'attrs.weight': cannot convert 'heavy' to int"),
        ("o-5", "column 'status': cannot write 'lost' to Enum8('new' = 1, 'paid' = 2)"),
        ("o-6", "column 'ip': cannot write '300.1.1.1' to IPv4"),
        ("o-8", "column 'channel': cannot write 'fax' to Enum16('web' = 1000, 'app' = 2000)"),
    ]


ITEM = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "sku", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "items", "type": {"type": "array", "items": ITEM}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "tags", "type": ["null", {"type": "array", "items": "string"}], "default": None},
    ],
}
AT = 1_767_268_800_000  # 2026-01-01T12:00:00Z


def _avro(order: dict) -> bytes:
    import io

    import fastavro

    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(ORDER), order)
    return body.getvalue()


@pytest.mark.spark
def test_avro_arrays_maps_and_records_are_written_to_nested_columns(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    from datetime import UTC, datetime

    from clearflow_spec.avro_schema import schema_fields

    topic = new_topic(1)
    schema = json.dumps(ORDER)
    data = spec_dict(
        version=1,
        name=f"p-{uuid.uuid4().hex[:8]}",
        kafka=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        starting_offsets="earliest",
        format="avro",
        source={"avro_schema": schema},
        # The fields as the wizard reads them from the schema.
        fields=[(f.path, f.type) for f in schema_fields(schema)],
        columns=[
            ("order_id", "order_id", "String"),
            ("items", "items", "Nested(sku String, qty UInt16)"),
            ("items", "item_times", "Array(Tuple(sku String, at DateTime64(3, 'UTC')))"),
            ("attrs", "attrs", "Map(String, UInt8)"),
            ("tags", "tags", "Array(String)"),
        ],
        dedup=None,
        order_by=["order_id"],
        table=f"t_{uuid.uuid4().hex[:10]}",
        create_table=True,
        engine="MergeTree",
    )
    spec = parse_spec(data)
    assert spec.field_types()["items"] == "array<struct<sku:string,qty:int,at:datetime>>"

    def order(order_id: str, qty: int = 2, weight: int = 3, tags: list[str] | None = None) -> bytes:
        items = [{"sku": "a-1", "qty": qty, "at": AT}]
        return _avro({"order_id": order_id, "items": items, "attrs": {"weight": weight}, "tags": tags})

    produce(
        kafka_bootstrap,
        topic,
        [
            (0, order("o-1", tags=["gift"])),
            (0, order("o-2")),
            (0, order("o-3", qty=70_000)),
            (0, order("o-4", weight=300)),
        ],
    )
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)

    at = datetime.fromtimestamp(AT / 1000, UTC).replace(tzinfo=None)
    rows = ch.query(
        f"SELECT order_id, `items.sku`, `items.qty`, item_times, attrs, tags FROM {spec.sink.table} ORDER BY order_id"
    ).result_rows
    assert [(r[0], r[1], r[2], [(t["sku"], t["at"].replace(tzinfo=None)) for t in r[3]], r[4], r[5]) for r in rows] == [
        ("o-1", ["a-1"], [2], [("a-1", at)], {"weight": 3}, ["gift"]),
        ("o-2", ["a-1"], [2], [("a-1", at)], {"weight": 3}, []),
    ]
    reasons = ch.query(f"SELECT reason FROM {spec.sink.dead_letter_table} ORDER BY offset").result_rows
    assert reasons == [
        ("field 'items[0].qty': cannot write '70000' to UInt16",),
        ("field 'attrs.weight': cannot write '300' to UInt8",),
    ]
