"""The engine end to end, in-process: real Apache Kafka broker, real ClickHouse, one shared SparkSession."""

from __future__ import annotations

import json
import uuid

import pytest
from engine_helpers import event, make_spec, produce, wait_for

from clearflow_spec.spec import SpecError, parse_spec
from spark_jobs.query import start_query, stop_query

pytestmark = pytest.mark.spark


def run_available_now(spark, spec_dict, tmp_path, redis_url=None):
    spec = parse_spec(spec_dict)
    query = start_query(
        spark, spec, checkpoint=str(tmp_path / "ckpt"), redis_url=redis_url, trigger={"availableNow": True}
    )
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    return spec


def rows(ch, table, columns="event_id, count() AS c"):
    return ch.query(f"SELECT {columns} FROM {table} GROUP BY event_id ORDER BY event_id").result_rows


def test_duplicates_in_one_partition(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, redis_url):
    topic = new_topic(1)
    keys = [f"k{i:03d}" for i in range(50)]
    produce(kafka_bootstrap, topic, [(0, event(k, n=r)) for r in range(3) for k in keys])
    spec = run_available_now(
        spark,
        make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]),
        tmp_path,
        redis_url,
    )
    table = spec.sink.table
    assert rows(ch, table) == [(k, 1) for k in keys]
    # The first event per key wins (round 0 was produced first).
    assert ch.query(f"SELECT DISTINCT n FROM {table}").result_rows == [(0,)]
    assert ch.command(f"SELECT count() FROM {table}_dlq") == 0

    import redis

    client = redis.Redis.from_url(redis_url)
    latest = json.loads(wait_for(lambda: client.get(f"clearflow:metrics:{spec.name}")))
    recent = [json.loads(x) for x in client.lrange(f"clearflow:metrics:{spec.name}:recent", 0, -1)]
    assert sum(r["input_rows"] for r in recent) == 150
    assert sum(r["rows_written"] for r in recent) == 50
    assert sum(r["duplicates_dropped"] for r in recent) == 100
    assert latest["total_lag"] == 0 and latest["lag"] == {topic: {"0": 0}}
    assert {"batch_duration_ms", "state_rows", "dead_letters"} <= set(latest)
    # The time series: the same batches, oldest first, and running totals that agree with them.
    history = [json.loads(x) for x in client.zrange(f"clearflow:metrics:{spec.name}:history", 0, -1)]
    assert [r["batch_id"] for r in history] == sorted(r["batch_id"] for r in recent)
    totals = {k.decode(): v.decode() for k, v in client.hgetall(f"clearflow:metrics:{spec.name}:totals").items()}
    assert (totals["input_rows"], totals["rows_written"], totals["duplicates_dropped"]) == ("150", "50", "100")
    assert totals["dead_letters"] == "0" and totals["batches"] == str(len(recent))


def test_duplicates_across_partitions(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    topic = new_topic(3)
    keys = [f"k{i:03d}" for i in range(200)]
    # Each key appears in every partition: 600 records, 200 unique.
    produce(kafka_bootstrap, topic, [(p, event(k, n=p)) for p in range(3) for k in keys])
    spec = run_available_now(
        spark, make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]), tmp_path
    )
    assert rows(ch, spec.sink.table) == [(k, 1) for k in keys]


def test_duplicates_across_topics(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    first, second = new_topic(2), new_topic(1)
    keys = [f"k{i:03d}" for i in range(100)]
    produce(kafka_bootstrap, first, [(i % 2, event(k)) for i, k in enumerate(keys)])
    produce(kafka_bootstrap, second, [(0, event(k)) for k in keys[50:]] + [(0, event("only-in-second"))])
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[first, second])
    data["dedup"]["state_store"] = "memory"  # an earlier version's choice: still accepted, the state is on RocksDB
    spec = run_available_now(spark, data, tmp_path)
    assert rows(ch, spec.sink.table) == sorted([(k, 1) for k in [*keys, "only-in-second"]])


def test_event_time_dedup_and_missing_event_time(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    topic = new_topic(1)
    now = "2026-01-01T00:00:00Z"
    produce(
        kafka_bootstrap,
        topic,
        [
            (0, event("a", n=1, ts=now)),
            (0, event("a", n=2, ts=now)),
            (0, event("b", n=3, ts=1767225600)),
            (0, event("c")),
        ],
    )
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        dedup={"keys": ["event_id"], "window": "10m", "time": "event", "event_time_field": "ts"},
    )
    data["source"]["fields"].append({"path": "ts", "type": "datetime"})
    data["sink"]["columns"].append({"field": "ts", "column": "ts", "type": "DateTime('UTC')"})
    spec = run_available_now(spark, data, tmp_path)
    written = ch.query(f"SELECT event_id, n, toString(ts) FROM {spec.sink.table} ORDER BY event_id").result_rows
    assert written == [("a", 1, "2026-01-01 00:00:00"), ("b", 3, "2026-01-01 00:00:00")]
    assert ch.query(f"SELECT reason FROM {spec.sink.table}_dlq").result_rows == [
        ("event time 'ts' is missing or null",)
    ]


def test_dead_letters_for_each_kind_of_bad_input(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    topic = new_topic(1)
    good = event("good-1")
    bad = [
        b"{not json",
        b"[1, 2, 3]",
        json.dumps({"user": {"id": str(uuid.uuid4())}, "n": 1}).encode(),  # key missing
        json.dumps({"event_id": None, "n": 1}).encode(),  # key null
        json.dumps({"event_id": "bad-uuid", "user": {"id": "abc"}}).encode(),  # "abc" into a UUID column
        json.dumps({"event_id": "bad-int", "n": "seven"}).encode(),  # "seven" as an int field
    ]
    produce(kafka_bootstrap, topic, [(0, good), *[(0, b) for b in bad], (0, event("good-2"))])
    spec = run_available_now(
        spark, make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]), tmp_path
    )
    assert [r[0] for r in rows(ch, spec.sink.table)] == ["good-1", "good-2"]
    dead = ch.query(
        f"SELECT offset, raw, reason, topic, partition, kafka_timestamp IS NOT NULL FROM {spec.sink.table}_dlq "
        "ORDER BY offset"
    ).result_rows
    assert [r[0] for r in dead] == [1, 2, 3, 4, 5, 6]
    assert [r[1].encode() for r in dead] == bad
    reasons = [r[2] for r in dead]
    assert reasons[0] == "invalid JSON"
    assert reasons[1] == "not a JSON object"
    assert reasons[2] == reasons[3] == "dedup key 'event_id' is missing or null"
    assert reasons[4] == "column 'user_id': cannot write 'abc' to Nullable(UUID)"
    assert reasons[5] == "field 'n': cannot convert 'seven' to int"
    assert all(r[3] == topic and r[4] == 0 and r[5] for r in dead)


def test_filter_and_transforms(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, event(f"k{i}", n=i)) for i in range(10)])
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        filter="n % 2 = 0",
        transforms=[
            {"name": "domain", "expression": "split(email, '@')[1]", "type": "string"},
            {"name": "n_times_ten", "expression": "n * 10", "type": "int"},
        ],
    )
    data["sink"]["columns"] += [
        {"field": "domain", "column": "domain", "type": "String"},
        {"field": "n_times_ten", "column": "n10", "type": "UInt16"},
    ]
    spec = run_available_now(spark, data, tmp_path)
    assert ch.query(f"SELECT event_id, domain, n10 FROM {spec.sink.table} ORDER BY n10").result_rows == [
        (f"k{i}", "example.com", i * 10) for i in range(0, 10, 2)
    ]


def test_every_event_is_accounted_for_and_the_filter_counts_what_it_drops(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, redis_url
):
    """events read = rows written + duplicates dropped + dead letters + filtered out, each counted by itself."""
    topic = new_topic(1)
    events = [event(f"k{i}", n=i) for i in range(10)]  # the filter keeps k0, k2, k4, k6, k8
    produce(kafka_bootstrap, topic, [(0, e) for e in events] + [(0, event("k0", n=0)), (0, b"{not json")])
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic], filter="n % 2 = 0")
    spec = run_available_now(spark, data, tmp_path, redis_url)

    assert ch.command(f"SELECT count() FROM {spec.sink.table}") == 5
    import redis

    client = redis.Redis.from_url(redis_url)
    totals = wait_for(lambda: client.hgetall(f"clearflow:metrics:{spec.name}:totals"))
    totals = {k.decode(): int(v) for k, v in totals.items() if k != b"since"}
    assert totals["input_rows"] == 12
    assert (totals["rows_written"], totals["duplicates_dropped"], totals["dead_letters"]) == (5, 1, 1)
    assert totals["filtered_out"] == 5


def test_spark_rejects_bad_expressions_before_start(spark, kafka_bootstrap, clickhouse_server, new_topic, tmp_path):
    topic = new_topic(1)
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        transforms=[{"name": "x", "expression": "no_such_function(email)", "type": "string"}],
    )
    with pytest.raises(SpecError) as info:
        start_query(spark, parse_spec(data), checkpoint=str(tmp_path / "c"), trigger={"availableNow": True})
    assert info.value.errors[0].path == "transforms[0].expression"
    assert "no_such_function" in info.value.errors[0].message
    assert not spark.streams.active


def test_no_dedup_keeps_every_event(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(i % 2, event("same")) for i in range(20)])
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic], dedup=None)
    spec = run_available_now(spark, data, tmp_path)
    assert ch.command(f"SELECT count() FROM {spec.sink.table}") == 20


def test_duplicate_after_the_window_is_kept(spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path):
    """Window 15s: a duplicate in the next batch is dropped; one after the window has passed is kept.

    The window counts in processing time from the start of the batch that kept the key (a TTL): on a loaded
    2-core machine the next batch was seen to start 7 s after the first, hence 15 s."""
    import time

    topic = new_topic(1)
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        dedup={"keys": ["event_id"], "window": "15s", "time": "ingestion"},
    )
    spec = parse_spec(data)
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"processingTime": "200 milliseconds"})
    try:
        produce(kafka_bootstrap, topic, [(0, event("a", n=1))])
        query.processAllAvailable()
        produce(kafka_bootstrap, topic, [(0, event("a", n=2))])  # within the window: dropped
        query.processAllAvailable()
        # Let the window pass: the time must really pass (the dedup time is clamped to the batch time).
        started = time.monotonic()
        while time.monotonic() - started < 17:
            produce(kafka_bootstrap, topic, [(0, event(f"tick-{uuid.uuid4().hex[:6]}"))])
            query.processAllAvailable()
            time.sleep(0.5)
        produce(kafka_bootstrap, topic, [(0, event("a", n=3))])  # after the window: kept
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        stop_query(spark, query)
    assert ch.query(f"SELECT n FROM {spec.sink.table} WHERE event_id = 'a' ORDER BY n").result_rows == [(1,), (3,)]
