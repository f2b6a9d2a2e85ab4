"""The dedup processor (spark_jobs/jvm) end to end: which copy of a key wins, within a batch and across batches,
for ingestion and event time; dead letters beside it; a checkpoint of the old operator; the heartbeat while a long
batch runs. Real Kafka, real ClickHouse, the shared SparkSession."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import pytest
from engine_helpers import event, make_spec, produce, run_once, wait_for

from clearflow_spec.spec import parse_spec
from spark_jobs.checkpoint_state import CheckpointMismatch
from spark_jobs.metrics import StateKeyCount
from spark_jobs.query import start_query

pytestmark = pytest.mark.spark


def kept(ch, spec):
    return ch.query(f"SELECT event_id, n FROM {spec.sink.table} ORDER BY event_id").result_rows


def event_time_spec(kafka_bootstrap, clickhouse_server, topic):
    data = make_spec(
        kafka_bootstrap=kafka_bootstrap,
        clickhouse=clickhouse_server,
        topics=[topic],
        dedup={"keys": ["event_id"], "window": "1h", "time": "event", "event_time_field": "ts"},
    )
    data["source"]["fields"].append({"path": "ts", "type": "datetime"})
    return parse_spec(data)


def ago(seconds: int) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_event_time_the_earliest_copy_in_a_batch_wins_and_a_later_batch_adds_nothing(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(2)
    spec = event_time_spec(kafka_bootstrap, clickhouse_server, topic)
    # One batch: "a" arrives first with a later event time; the copy with the earliest event time wins, in
    # whichever partition and at whichever offset it is. "b": equal event times, the lower partition wins.
    produce(
        kafka_bootstrap,
        topic,
        [
            (0, event("a", n=1, ts=ago(60))),
            (0, event("a", n=2, ts=ago(120))),
            (1, event("a", n=3, ts=ago(90))),
            (1, event("b", n=5, ts=ago(30))),
            (0, event("b", n=4, ts=ago(30))),
        ],
    )
    run_once(spark, spec, tmp_path / "ckpt")
    assert kept(ch, spec) == [("a", 2), ("b", 4)]
    # A later batch (after a restart from the checkpoint): the key is in the state, even an earlier event time
    # adds nothing; a new key is kept.
    produce(kafka_bootstrap, topic, [(1, event("a", n=6, ts=ago(600))), (0, event("c", n=7, ts=ago(10)))])
    run_once(spark, spec, tmp_path / "ckpt")
    assert kept(ch, spec) == [("a", 2), ("b", 4), ("c", 7)]
    # The keys the state holds, as the metrics report them (state_rows), counted across both runs.
    assert StateKeyCount(str(tmp_path / "ckpt")).keys == 3


def test_ingestion_time_the_earliest_kafka_timestamp_in_a_batch_wins(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(2)
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]))
    now_ms = int(time.time() * 1000)
    produce(kafka_bootstrap, topic, [(0, event("a", n=1))], timestamp_ms=now_ms - 5_000)
    produce(kafka_bootstrap, topic, [(1, event("a", n=2))], timestamp_ms=now_ms - 20_000)  # produced later
    produce(kafka_bootstrap, topic, [(0, event("b", n=3)), (0, event("b", n=4))], timestamp_ms=now_ms - 1_000)
    run_once(spark, spec, tmp_path / "ckpt")
    assert kept(ch, spec) == [("a", 2), ("b", 3)]  # b: equal times, the lower offset wins
    produce(kafka_bootstrap, topic, [(1, event("b", n=5)), (1, event("d", n=6))], timestamp_ms=now_ms - 60_000)
    run_once(spark, spec, tmp_path / "ckpt")
    assert kept(ch, spec) == [("a", 2), ("b", 3), ("d", 6)]


def test_dead_letters_pass_through_and_do_not_take_a_key(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    """A dead letter carrying a key leaves the key free: its later good copy is written."""
    topic = new_topic(1)
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]))
    bad = b'{"event_id": "x", "n": "seven"}'
    produce(kafka_bootstrap, topic, [(0, bad), (0, bad), (0, event("x", n=1)), (0, b"{oops")])
    run_once(spark, spec, tmp_path / "ckpt")
    produce(kafka_bootstrap, topic, [(0, bad), (0, event("x", n=2))])
    run_once(spark, spec, tmp_path / "ckpt")
    assert kept(ch, spec) == [("x", 1)]
    assert StateKeyCount(str(tmp_path / "ckpt")).keys == 1  # only the good copy took a key
    dead = ch.query(f"SELECT offset, reason FROM {spec.sink.table}_dlq ORDER BY offset").result_rows
    assert dead == [
        (0, "field 'n': cannot convert 'seven' to int"),
        (1, "field 'n': cannot convert 'seven' to int"),
        (3, "invalid JSON"),
        (4, "field 'n': cannot convert 'seven' to int"),
    ]


def test_every_value_leaves_the_dedup_as_it_came_in(spark):
    """The JVM processor's Row encoders give back what they took (spark_jobs.dedup): any UTF-8, nested structs,
    far years, lists and NULLs, with the same schema; the first copy of a key wins and a dead letter passes
    through beside it. A batch DataFrame: no Kafka needed."""
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from spark_jobs import dedup
    from spark_jobs.transforms import ERROR, TIME

    user = StructType([StructField("name", StringType()), StructField("seen", TimestampType())])
    payload = [
        StructField("text", StringType()),
        StructField("user", user, nullable=False),  # as the parse step builds it: never NULL
        StructField("maybe", user),
        StructField("tags", ArrayType(StringType())),
        StructField("amount", DoubleType()),
    ]
    order = [
        StructField(TIME, TimestampType()),
        StructField("_kafka_partition", IntegerType()),
        StructField("_kafka_offset", LongType()),
    ]
    keys = [StructField(dedup.KEY_HIGH, LongType()), StructField(dedup.KEY_LOW, LongType())]
    schema = StructType([*payload, *order, StructField(ERROR, StringType()), *keys])
    far, early, now = dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(1900, 1, 1), dt.datetime(2026, 11, 28, 12)
    rows = [
        ("Grüße, 東京 🚀", ("Zoë", far), None, ["a", None, "é"], 1.5, now, 0, 7, None, 1, 1),
        ("a later copy", ("x", now), None, [], 2.0, now + dt.timedelta(seconds=1), 0, 8, None, 1, 1),
        (None, (None, early), (None, None), None, None, now, 1, 3, None, 2, 2),
        ("dead", ("y", now), ("z", far), None, 0.0, now, 1, 4, "field 'n': cannot convert", 1, 1),
    ]
    spark.streams.active  # noqa: B018 - starts the state store coordinator, which a batch query's state needs too
    out = dedup.drop_duplicates(spark.createDataFrame(rows, schema), window_seconds=3600, observe=None)

    assert out.schema == StructType([*payload, *order, StructField(ERROR, StringType())])
    assert sorted(out.collect(), key=lambda r: (r["_kafka_partition"], r["_kafka_offset"])) == [
        row[:-2] for i, row in enumerate(rows) if i != 1
    ]


def test_a_wrong_clock_does_not_decide_which_copy_wins(spark):
    """Within a batch a key's copies are compared by their dedup time clamped into the last half window before
    the batch's time (a missing one as the batch's time): far past or far future times tie at the window's edges,
    and then the earlier Kafka offset wins. A batch DataFrame: no Kafka needed."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

    from spark_jobs import dedup
    from spark_jobs.transforms import ERROR, TIME

    schema = StructType(
        [
            StructField("copy", StringType()),
            StructField(TIME, TimestampType()),
            StructField("_kafka_partition", IntegerType()),
            StructField("_kafka_offset", LongType()),
            StructField(ERROR, StringType()),
            StructField(dedup.KEY_HIGH, LongType()),
            StructField(dedup.KEY_LOW, LongType()),
        ]
    )
    now = dt.datetime.now(dt.UTC)
    rows = [
        ("past, first offset", dt.datetime(1999, 1, 1, tzinfo=dt.UTC), 0, 0, None, 1, 1),
        ("past, earlier time", dt.datetime(1998, 1, 1, tzinfo=dt.UTC), 0, 1, None, 1, 1),
        ("future, first offset", dt.datetime(3000, 1, 1, tzinfo=dt.UTC), 0, 2, None, 2, 2),
        ("future, earlier time", dt.datetime(2999, 1, 1, tzinfo=dt.UTC), 0, 3, None, 2, 2),
        ("no time, first offset", None, 0, 4, None, 3, 3),
        ("future, later offset", dt.datetime(3000, 1, 1, tzinfo=dt.UTC), 0, 5, None, 3, 3),
        ("in the window, earlier time", now - dt.timedelta(minutes=2), 0, 7, None, 4, 4),
        ("in the window, later time", now - dt.timedelta(minutes=1), 0, 6, None, 4, 4),
    ]
    spark.streams.active  # noqa: B018 - starts the state store coordinator, which a batch query's state needs too
    out = dedup.drop_duplicates(spark.createDataFrame(rows, schema), window_seconds=3600, observe=None)

    assert sorted(row["copy"] for row in out.collect()) == [
        "future, first offset",
        "in the window, earlier time",  # inside the window the time decides, not the offset
        "no time, first offset",
        "past, first offset",
    ]


def test_a_checkpoint_of_the_old_dedup_operator_is_refused_with_what_to_do(
    spark, kafka_bootstrap, clickhouse_server, new_topic, tmp_path
):
    from pyspark.sql import functions as F

    # A checkpoint written by Spark's own dedup (what earlier versions ran).
    source = tmp_path / "in"
    spark.createDataFrame([("a",)], "id string").write.parquet(str(source))
    old = (
        spark.readStream.schema("id string")
        .parquet(str(source))
        .withColumn("t", F.current_timestamp())
        .withWatermark("t", "10 seconds")
        .dropDuplicatesWithinWatermark(["id"])
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    old.awaitTermination(120)
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[new_topic(1)]))
    with pytest.raises(CheckpointMismatch) as info:
        start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    assert "reset the pipeline's checkpoint" in str(info.value)
    assert not spark.streams.active


def test_the_job_beats_while_a_long_batch_runs(spark, redis_url, tmp_path):
    """No progress event comes during a batch: the heartbeat thread says the job is alive all along."""
    import redis

    from clearflow_spec.protocol import heartbeat_key
    from spark_jobs.metrics import MetricsPublisher, QueryHeartbeat

    name = f"slow-{uuid.uuid4().hex[:6]}"
    source = tmp_path / "in"
    spark.createDataFrame([("a",)], "id string").write.parquet(str(source))
    query = (
        spark.readStream.schema("id string")
        .parquet(str(source))
        .writeStream.foreachBatch(lambda _batch, _id: time.sleep(14))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    beat = QueryHeartbeat(query, MetricsPublisher(name, redis_url), every=1.0).start()
    client = redis.Redis.from_url(redis_url)
    beats = set()
    try:
        wait_for(lambda: query.status.get("isTriggerActive"), timeout=60)
        started = time.monotonic()
        while time.monotonic() - started < 11 and query.lastProgress is None:
            value = client.get(heartbeat_key(name))
            if value:
                beats.add(value)
            time.sleep(0.5)
        assert query.lastProgress is None, "the batch ended early: the test proves nothing"
    finally:
        beat.stop()
        query.stop()
    assert len(beats) >= 2  # a beat every HEARTBEAT_EVERY_SECONDS (5 s), none from a batch's end
