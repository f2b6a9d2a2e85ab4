"""The Kafka record's key and headers as fields (`_kafka_key`, `_kafka_headers`): the spec's rules, and a topic
keyed by order id deduplicated on its key through the engine, against the real broker and ClickHouse."""

from __future__ import annotations

import json
import uuid

import pytest
from engine_helpers import event, make_spec, run_once

from clearflow_spec.spec import SpecError, parse_spec


def _spec(**changes: object) -> dict:
    data = make_spec(kafka_bootstrap="127.0.0.1:9092", clickhouse=_Address(), topics=["orders"])
    data.update(changes)
    return data


class _Address:
    host, port = "127.0.0.1", 8123


def _columns(*extra: tuple[str, str, str]) -> list[dict]:
    base = [("event_id", "event_id", "String"), ("n", "n", "Nullable(Int64)")]
    return [{"field": f, "column": c, "type": t} for f, c, t in [*base, *extra]]


def _issues(data: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    return [str(issue) for issue in caught.value.errors]


@pytest.mark.fast
def test_the_key_and_a_header_are_columns_and_dedup_keys():
    data = _spec(dedup={"keys": ["_kafka_key", "_kafka_headers.region"], "window": "1h"})
    data["sink"]["columns"] = _columns(
        ("_kafka_key", "order_id", "String"), ("_kafka_headers.trace_id", "trace_id", "Nullable(String)")
    )
    data["filter"] = "_kafka_headers['trace-id'] IS NULL OR _kafka_key IS NOT NULL"
    spec = parse_spec(data)
    assert spec.field_types()["_kafka_key"] == "string"
    assert spec.field_types()["_kafka_headers.trace_id"] == "string"


@pytest.mark.fast
def test_a_header_field_needs_a_name_and_a_string_column():
    data = _spec()
    data["sink"]["columns"] = _columns(("_kafka_headers", "headers", "String"), ("_kafka_key", "k", "Array(String)"))
    issues = _issues(data)
    assert (
        "sink.columns[2].field: unknown field '_kafka_headers'; map a source field, a transform or Kafka metadata"
        in issues
    )
    assert "sink.columns[3].type: a string field ('_kafka_key') cannot be written to Array(String)" in issues
    data = _spec(dedup={"keys": ["_kafka_offset"], "window": "1h"})
    assert _issues(data) == ["dedup.keys[0]: unknown field '_kafka_offset'; add it to source.fields"]


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, dict, list[tuple[str, bytes]]]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value, headers in records:
        producer.produce(topic, json.dumps(value).encode(), key=key, headers=headers, partition=0)
    assert producer.flush(30) == 0


@pytest.mark.spark
def test_a_topic_keyed_by_order_id_is_deduplicated_on_its_key(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        dedup={"keys": ["_kafka_key"], "window": "1h"},
    )
    data["sink"]["columns"] = _columns(
        ("_kafka_key", "order_id", "String"), ("_kafka_headers.trace_id", "trace_id", "Nullable(String)")
    )
    data["sink"]["order_by"] = ["order_id"]
    spec = parse_spec(data)
    # The event ids differ on every copy: only the record's key says which records are the same order.
    _produce(
        kafka_bootstrap,
        topic,
        [
            (b"o-1", event(uuid.uuid4().hex, n=1), [("trace_id", b"t1"), ("trace_id", b"t1-last")]),
            (b"o-2", event(uuid.uuid4().hex, n=2), [("trace_id", "tr\u00e4ce".encode())]),
            (b"o-1", event(uuid.uuid4().hex, n=3), [("trace_id", b"t3")]),
            ("\u00f6-3".encode(), event(uuid.uuid4().hex, n=4), []),
            (b"o-2", event(uuid.uuid4().hex, n=5), []),
            (None, event(uuid.uuid4().hex, n=6), []),  # no key: a dead letter, not an order
        ],
    )
    run_once(spark, spec, tmp_path / "ckpt")
    rows = ch.query(f"SELECT order_id, n, trace_id FROM {spec.sink.table} ORDER BY order_id").result_rows
    assert rows == [("o-1", 1, "t1-last"), ("o-2", 2, "tr\u00e4ce"), ("\u00f6-3", 4, None)]
    reasons = ch.query(f"SELECT reason FROM {spec.sink.dead_letter_table}").result_rows
    assert reasons == [("dedup key '_kafka_key' is missing or null",)]


@pytest.mark.spark
def test_a_topic_whose_order_id_is_a_header_is_deduplicated_on_that_header(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        dedup={"keys": ["_kafka_headers.order_id"], "window": "1h"},
    )
    data["sink"]["columns"] = _columns(("_kafka_headers.order_id", "order_id", "String"))
    data["sink"]["order_by"] = ["order_id"]
    spec = parse_spec(data)
    _produce(
        kafka_bootstrap,
        topic,
        [
            (None, event(uuid.uuid4().hex, n=1), [("order_id", b"o-1")]),
            (None, event(uuid.uuid4().hex, n=2), [("order_id", b"o-2"), ("region", b"eu")]),
            (None, event(uuid.uuid4().hex, n=3), [("order_id", b"o-1")]),  # the same order again: dropped
            (None, event(uuid.uuid4().hex, n=4), [("region", b"eu")]),  # no order id: a dead letter
        ],
    )
    run_once(spark, spec, tmp_path / "ckpt")
    rows = ch.query(f"SELECT order_id, n FROM {spec.sink.table} ORDER BY order_id").result_rows
    assert rows == [("o-1", 1), ("o-2", 2)]
    reasons = ch.query(f"SELECT reason FROM {spec.sink.dead_letter_table}").result_rows
    assert reasons == [("dedup key '_kafka_headers.order_id' is missing or null",)]


@pytest.mark.fast
def test_a_join_side_carries_the_metadata_its_checkpointed_state_has():
    """A join keeps each side's events in its state: a field added to them would not restore an earlier
    version's checkpoint, so the record's key is not among a joined row's names."""
    from clearflow_spec.spec import joined_field_types

    names = joined_field_types([], [])
    assert "left._kafka_timestamp" in names and "right._kafka_offset" in names
    assert not {"left._kafka_key", "right._kafka_key"} & set(names)
