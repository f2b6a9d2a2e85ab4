"""The temporal join end to end (spark_jobs.join, the JVM JoinProcessor): inner join rows in ClickHouse, within
and across batches; a left join writes an unmatched order with empty payment columns once its window passed; a
join's metrics (both topics in, joined rows out, state keys); a checkpoint of the earlier MapState join is refused
with what to do.
Real Kafka, real ClickHouse, the shared SparkSession."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from engine_helpers import JOB_TIMEOUT, produce, wait_for
from join_helpers import join_spec, order, payment

from clearflow_spec.spec import parse_spec
from spark_jobs.checkpoint_state import CheckpointMismatch
from spark_jobs.join import JOIN_EXPIRY_CONF
from spark_jobs.metrics import latest_key, totals_key
from spark_jobs.query import start_query, stop_query

pytestmark = pytest.mark.spark


def run_once(spark, spec, checkpoint):
    query = start_query(spark, spec, checkpoint=str(checkpoint), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)


def rows(ch, spec):
    return ch.query(
        f"SELECT order_id, amount, payment_id, paid FROM {spec.sink.table} ORDER BY order_id, payment_id"
    ).result_rows


@pytest.fixture(params=["timers", "ttl"])
def expiry(request, spark):
    """An inner join's expiry mode (spark_jobs.join.JOIN_EXPIRY_CONF): one timer per key, or a TTL per side."""
    spark.conf.set(JOIN_EXPIRY_CONF, request.param)
    yield request.param
    spark.conf.unset(JOIN_EXPIRY_CONF)


def test_inner_join_writes_each_order_with_each_of_its_payments_once(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, expiry
):
    orders, payments = new_topic(2), new_topic(2)
    spec = parse_spec(
        join_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, orders=orders, payments=payments)
    )
    # o1 twice (deduplicated), o2 with two payments, o3 not paid yet; p2 twice (deduplicated); p9 for no order.
    produce(
        kafka_bootstrap,
        orders,
        [(0, order("o1", 10)), (1, order("o1", 11)), (1, order("o2", 20)), (0, order("o3", 30))],
    )
    produce(
        kafka_bootstrap,
        payments,
        [
            (0, payment("p1", "o1", 10)),
            (1, payment("p2", "o2", 5)),
            (1, payment("p2", "o2", 6)),  # the later copy in the partition: dropped
            (1, payment("p3", "o2", 15)),
            (0, payment("p9", "o9", 1)),
        ],
    )
    run_once(spark, spec, tmp_path / "ckpt")
    assert rows(ch, spec) == [("o1", 10, "p1", 10), ("o2", 20, "p2", 5), ("o2", 20, "p3", 15)]
    # A later batch: o3's payment joins the order kept in state; the order o9 joins its payment kept in state.
    produce(kafka_bootstrap, payments, [(1, payment("p4", "o3", 30))])
    produce(kafka_bootstrap, orders, [(0, order("o9", 90))])
    run_once(spark, spec, tmp_path / "ckpt")
    assert rows(ch, spec) == [
        ("o1", 10, "p1", 10),
        ("o2", 20, "p2", 5),
        ("o2", 20, "p3", 15),
        ("o3", 30, "p4", 30),
        ("o9", 90, "p9", 1),
    ]
    assert ch.command(f"SELECT count() FROM {spec.sink.table}_dlq") == 0


def test_events_further_apart_than_the_window_do_not_join(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    orders, payments = new_topic(1), new_topic(1)
    spec = parse_spec(
        join_spec(
            kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, orders=orders, payments=payments, window="1m"
        )
    )
    now_ms = int(time.time() * 1000)
    produce(kafka_bootstrap, orders, [(0, order("o1")), (0, order("o2"))], timestamp_ms=now_ms - 600_000)
    produce(kafka_bootstrap, payments, [(0, payment("p1", "o1"))], timestamp_ms=now_ms - 570_000)  # 30 s later
    produce(kafka_bootstrap, payments, [(0, payment("p2", "o2"))], timestamp_ms=now_ms)  # 10 minutes later
    run_once(spark, spec, tmp_path / "ckpt")
    assert rows(ch, spec) == [("o1", 10, "p1", 10)]


def test_left_join_writes_an_unpaid_order_with_empty_payment_columns_after_the_window(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    orders, payments = new_topic(1), new_topic(1)
    spec = parse_spec(
        join_spec(
            kafka_bootstrap=kafka_bootstrap,
            clickhouse=clickhouse_server,
            orders=orders,
            payments=payments,
            window="8s",
            join_type="left",
        )
    )
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"processingTime": "500 milliseconds"})
    try:
        produce(kafka_bootstrap, orders, [(0, order("o1")), (0, order("o2", 20))])
        produce(kafka_bootstrap, payments, [(0, payment("p1", "o1"))])
        matched = wait_for(
            lambda: rows(ch, spec) if ch.command(f"EXISTS TABLE {spec.sink.table}") else [], timeout=JOB_TIMEOUT
        )
        written_at = time.monotonic()
        assert matched == [("o1", 10, "p1", 10)]  # o2 waits for its payment while the window lasts
        wait_for(lambda: len(rows(ch, spec)) == 2, timeout=120)
        assert query.exception() is None
        # No new event came: the timeout fired from a batch without data. A NULL payment reads as empty.
        assert rows(ch, spec) == [("o1", 10, "p1", 10), ("o2", 20, None, None)]
        assert time.monotonic() - written_at > 2  # not before the window: o2 arrived with o1
        time.sleep(3)
        assert len(rows(ch, spec)) == 2  # and only once
    finally:
        stop_query(spark, query)


def test_a_left_joins_metrics_count_both_topics_in_the_joined_rows_out_and_state_that_levels_off(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, redis_url
):
    """What the pipeline page shows for a join: events in from both topics, the duplicates of both sides, the
    joined rows written, and state keys that come back to both sides' dedup keys once the join window has passed
    (matched and timed-out orders and expired payments all leave the join's state).

    The payments come in a later batch than their orders (a match with an order the join holds), within the 30 s
    window of processing time: a first order warms the job up first (a first batch took 16 s, and 180 s on a
    machine loaded 25 deep), later batches take a few seconds. The window is waited out once (the unpaid orders,
    the state levelling off), so it is no longer than that margin needs."""
    import redis

    orders, payments = new_topic(1), new_topic(1)
    spec = parse_spec(
        join_spec(
            kafka_bootstrap=kafka_bootstrap,
            clickhouse=clickhouse_server,
            orders=orders,
            payments=payments,
            window="30s",
            join_type="left",
        )
    )
    client = redis.Redis.from_url(redis_url)

    def latest() -> dict:
        raw = client.get(latest_key(spec.name))
        return json.loads(raw) if raw else {}

    def totals() -> dict[str, int]:
        return {k.decode(): int(v) for k, v in client.hgetall(totals_key(spec.name)).items() if k != b"since"}

    query = start_query(
        spark,
        spec,
        checkpoint=str(tmp_path / "ckpt"),
        redis_url=redis_url,
        trigger={"processingTime": "500 milliseconds"},
    )
    try:
        produce(kafka_bootstrap, orders, [(0, order("o0"))])  # never paid
        wait_for(lambda: totals().get("input_rows") == 1, timeout=JOB_TIMEOUT)
        produce(kafka_bootstrap, orders, [(0, order("o1")), (0, order("o1")), (0, order("o2")), (0, order("o3"))])
        wait_for(lambda: totals().get("input_rows") == 5, timeout=120)
        produce(
            kafka_bootstrap, payments, [(0, payment("p1", "o1")), (0, payment("p1", "o1")), (0, payment("p3", "o3"))]
        )
        # o1 and o3 paid; o0 and o2 written with empty payment columns when their window has passed.
        wait_for(lambda: len(rows(ch, spec)) == 4, timeout=240)
        assert rows(ch, spec) == [
            ("o0", 10, None, None),
            ("o1", 10, "p1", 10),
            ("o2", 10, None, None),
            ("o3", 10, "p3", 10),
        ]
        # 4 orders and 2 payments in the dedup windows (1h); nothing left in the join's (30 s).
        wait_for(lambda: latest().get("state_rows") == 6, timeout=120)
        assert query.exception() is None
        counted = totals()
        assert (counted["input_rows"], counted["duplicates_dropped"], counted["rows_written"]) == (8, 2, 4)
        batches = counted["batches"]
        wait_for(lambda: totals()["batches"] >= batches + 3, timeout=120)  # more batches, without data
        assert latest()["state_rows"] == 6  # level
    finally:
        stop_query(spark, query)


def test_a_checkpoint_of_the_earlier_mapstate_join_is_refused_with_what_to_do(
    spark, kafka_bootstrap, clickhouse_server, new_topic, tmp_path
):
    """Earlier versions kept each side's events in a TTL MapState; this one keeps them in a ValueState per side.
    The join operator's metadata file here is the one Spark wrote for main's join (68146ad, the inner join test
    above): the job refuses it before it starts, in words, instead of Spark's stack."""
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(Path(__file__).parent / "data" / "join-mapstate-checkpoint", checkpoint)
    spec = parse_spec(
        join_spec(
            kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, orders=new_topic(1), payments=new_topic(1)
        )
    )
    with pytest.raises(CheckpointMismatch) as info:
        start_query(spark, spec, checkpoint=str(checkpoint), trigger={"availableNow": True})
    assert "join state of an earlier ClearFlow engine" in str(info.value)
    assert "reset the pipeline's checkpoint" in str(info.value)
    assert not spark.streams.active
