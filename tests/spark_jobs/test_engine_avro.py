"""Avro topics end to end against the real services: Apache Kafka, Apicurio's schema registry (Confluent API),
ClickHouse. Records are written by confluent-kafka's own AvroSerializer (the Confluent wire format)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import JOB_TIMEOUT, job_command, produce, wait_for

from clearflow_spec.field_changes import field_changes
from clearflow_spec.spec import SpecError, parse_spec
from spark_jobs.query import start_query, stop_query
from tests.specs import ORDER_COLUMNS, ORDER_FIELDS, spec_dict

pytestmark = pytest.mark.spark

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "qty", "type": "long"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "name", "type": "string"}]},
        },
        {"name": "paid_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
# Version 2 adds an optional field (a backward-compatible change, as producers make them).
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}],
}
PAID_AT = 1_767_268_800_000  # 2026-01-01T12:00:00Z


def registry(url: str) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": url})


def avro_records(registry_url: str, topic: str, schema: dict, orders: list[dict]) -> list[tuple[int, bytes]]:
    """The orders as confluent-kafka's AvroSerializer writes them (registering the schema under <topic>-value)."""
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(registry(registry_url), json.dumps(schema), conf={"auto.register.schemas": True})
    context = SerializationContext(topic, MessageField.VALUE)
    return [(0, serializer(order, context)) for order in orders]


def order(event_id: str, qty: int = 1, **extra: Any) -> dict:
    return {"event_id": event_id, "qty": qty, "customer": {"name": f"c-{event_id}"}, "paid_at": PAID_AT, **extra}


def avro_spec(*, kafka_bootstrap: str, clickhouse: Any, topic: str, registry_url: str, table: str) -> dict:
    return spec_dict(
        version=1,
        name=f"avro-{table}",
        kafka=kafka_bootstrap,
        topics=[topic],
        format="avro",
        registry_url=registry_url,
        fields=ORDER_FIELDS,
        clickhouse=clickhouse,
        table=table,
        columns=ORDER_COLUMNS,
    )


def test_avro_records_are_deduplicated_and_bad_ones_are_dead_letters(
    spark, kafka_bootstrap, schema_registry_url, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    orders = [order(f"o{i:02d}", qty=i) for i in range(10)]
    records = avro_records(schema_registry_url, topic, ORDER_V1, orders + orders[:4])  # 4 duplicates
    records += [(0, b'{"event_id": "json-by-mistake"}'), (0, b"\x00\x00\x00\x7f\xffbody")]  # id 32767: unknown
    produce(kafka_bootstrap, topic, records)
    table = f"avro_{topic.replace('-', '_')}"
    spec = parse_spec(
        avro_spec(
            kafka_bootstrap=kafka_bootstrap,
            clickhouse=clickhouse_server,
            topic=topic,
            registry_url=schema_registry_url,
            table=table,
        )
    )
    from spark_jobs.pipeline import source_schemas

    # The id no subject version has is looked up once (the run does this when a batch meets it): not there.
    schemas = source_schemas(spec, extra_ids={32767})
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True}, schemas=schemas)
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)

    assert ch.query(
        f"SELECT event_id, qty, customer, toUnixTimestamp64Milli(paid_at) FROM {table} ORDER BY event_id"
    ).result_rows == [(f"o{i:02d}", i, f"c-o{i:02d}", PAID_AT) for i in range(10)]
    assert sorted(ch.query(f"SELECT reason FROM {table}_dlq").result_rows) == [
        ("not in the Confluent wire format: the first byte is 0x7B, expected 0x00",),
        ("schema id 32767 is not in the schema registry",),
    ]


def test_a_field_no_schema_version_has_stops_the_start_with_its_path(
    spark, kafka_bootstrap, schema_registry_url, clickhouse_server, new_topic, tmp_path
):
    topic = new_topic(1)
    avro_records(schema_registry_url, topic, ORDER_V1, [order("o1")])
    data = avro_spec(
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
        ("source.fields[4].path", f"field 'coupon' is not in any version of subject '{topic}-value'")
    ]


def start_job(spec: dict, tmp_path: Path, log: Path) -> subprocess.Popen:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    with open(log, "ab") as out:
        return subprocess.Popen(
            job_command(spec_file, tmp_path / "checkpoint", "--trigger-interval", "200 milliseconds"),
            cwd="/",
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_job(job: subprocess.Popen) -> None:
    """SIGTERM to the driver, as the worker sends it: it stops between micro-batches and exits 0."""
    if job.poll() is None:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(timeout=30)


def test_schema_version_2_while_the_job_runs_then_its_new_field_as_a_column(
    kafka_bootstrap, schema_registry_url, clickhouse_server, ch, new_topic, tmp_path
):
    """v1 records; v2 registered and written while the job runs (the job loads it and goes on); then the new
    field is added as a column and the spec gets a new version: its values appear from then on, and every
    event is in the table exactly once."""
    topic = new_topic(1)
    table = f"evolve_{topic.replace('-', '_')}"
    spec = avro_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topic=topic,
        registry_url=schema_registry_url,
        table=table,
    )
    log = tmp_path / "job.log"
    produce(
        kafka_bootstrap,
        topic,
        avro_records(schema_registry_url, topic, ORDER_V1, [order(f"a{i:02d}") for i in range(20)]),
    )
    job = start_job(spec, tmp_path, log)
    try:
        count = lambda: ch.command(f"EXISTS TABLE {table}") and ch.command(f"SELECT count() FROM {table}")  # noqa: E731
        wait_for(lambda: count() == 20, timeout=JOB_TIMEOUT)
        v2 = [order(f"b{i:02d}", coupon=f"SAVE{i}") for i in range(20)]
        produce(kafka_bootstrap, topic, avro_records(schema_registry_url, topic, ORDER_V2, v2))
        wait_for(lambda: count() == 40, timeout=JOB_TIMEOUT)
        assert "new since the start: loading it" in log.read_text()
        assert job.poll() is None, log.read_text()
    finally:
        stop_job(job)
    assert job.returncode == 0, log.read_text()[-3000:]

    # The job's metrics records (its log has each one) tell what the pipeline does not read.
    records = [
        json.loads(line.split("clearflow.metrics ", 1)[1])
        for line in log.read_text().splitlines()
        if "clearflow.metrics {" in line
    ]
    v2_id = registry(schema_registry_url).get_latest_version(f"{topic}-value").schema_id
    first_v2 = next(r["timestamp"] for r in records if r["events_by_schema_id"].get(str(v2_id)))
    changes = field_changes(parse_spec(spec), {v2_id: json.dumps(ORDER_V2)}, records)
    assert [c.message() for c in changes] == [
        f"new field `coupon` (string or null) seen in 20 events since {first_v2[11:16]}"
    ]
    assert changes[0].clickhouse_type == "Nullable(String)"

    # What adding the field does: the column (with the proposed type), and the spec's next version.
    ch.command(f"ALTER TABLE {table} ADD COLUMN coupon {changes[0].clickhouse_type}")
    spec["source"]["fields"].append({"path": "coupon", "type": "string"})
    spec["sink"]["columns"].append({"field": "coupon", "column": "coupon", "type": "Nullable(String)"})
    produce(
        kafka_bootstrap,
        topic,
        avro_records(schema_registry_url, topic, ORDER_V2, [order(f"c{i:02d}", coupon=f"NEW{i}") for i in range(20)]),
    )
    job = start_job(spec, tmp_path, log)
    try:
        wait_for(lambda: ch.command(f"SELECT count() FROM {table}") == 60, timeout=JOB_TIMEOUT)
    finally:
        stop_job(job)
    assert job.returncode == 0, log.read_text()[-3000:]
    rows = ch.query(
        f"SELECT event_id, count(), any(coupon) FROM {table} GROUP BY event_id ORDER BY event_id"
    ).result_rows
    assert rows == (
        [(f"a{i:02d}", 1, None) for i in range(20)]
        + [(f"b{i:02d}", 1, None) for i in range(20)]  # written before the column existed
        + [(f"c{i:02d}", 1, f"NEW{i}") for i in range(20)]
    )
    assert ch.command(f"SELECT count() FROM {table}_dlq") == 0


def test_json_keys_the_pipeline_does_not_read_are_reported(
    spark, kafka_bootstrap, clickhouse_server, new_topic, tmp_path, redis_url
):
    """JSON has no schema: new keys are found in a sample of the events (offsets 0, 16, 32, ...)."""
    import redis
    from engine_helpers import event, make_spec

    topic = new_topic(1)
    events = [event(f"e{i:03d}", n=i, coupon=f"C{i}") for i in range(64)]
    for e in events:
        e["user"]["tier"] = "gold"
    produce(kafka_bootstrap, topic, [(0, e) for e in events])
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]))
    query = start_query(
        spark, spec, checkpoint=str(tmp_path / "ckpt"), redis_url=redis_url, trigger={"availableNow": True}
    )
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    client = redis.Redis.from_url(redis_url)
    records = [json.loads(x) for x in reversed(client.lrange(f"clearflow:metrics:{spec.name}:recent", 0, -1))]
    assert sorted({key for r in records for key in r["unmapped_keys"]}) == ["coupon", "user.tier"]
    assert sum(r["sampled_events"] for r in records) == 4
    messages = [c.message() for c in field_changes(spec, {}, records)]
    since = records[0]["timestamp"][11:16]
    assert messages == [
        f"new field `coupon` seen in about 64 events since {since}",
        f"new field `user.tier` seen in about 64 events since {since}",
    ]
