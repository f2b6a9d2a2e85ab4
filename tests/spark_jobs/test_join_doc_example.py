"""The complete join example of docs/pipeline-spec.md, run as written (only the broker's and ClickHouse's
addresses are the test's): orders joined with their payments, the filter and the computed field applied."""

from __future__ import annotations

import pytest
from engine_helpers import produce

from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query
from tests.clearflow_spec.test_join_spec import doc_example

pytestmark = pytest.mark.spark


def test_the_documented_join_example_writes_joined_rows(
    spark, kafka_bootstrap, clickhouse_server, ch, kafka_admin, tmp_path
):
    from confluent_kafka.admin import NewTopic

    data = doc_example()
    for source in (data["source"], data["join"]["source"]):
        source["kafka"]["bootstrap_servers"] = kafka_bootstrap
    data["sink"]["clickhouse"].update(host=clickhouse_server.host, port=clickhouse_server.port)
    spec = parse_spec(data)
    topics = [spec.source.topics[0], spec.join.source.topics[0]]
    for future in kafka_admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=30)
    ch.command(f"DROP TABLE IF EXISTS {spec.sink.table}")

    produce(
        kafka_bootstrap,
        "orders",
        [
            (0, {"order_id": "o1", "customer": {"id": "c1"}, "amount": 30.0}),
            (0, {"order_id": "o2", "customer": {"id": "c2"}, "amount": 12.5}),  # not paid yet: waits (left join)
            (0, {"order_id": "o3", "customer": {"id": "c3"}, "amount": 0}),  # filtered out: amount 0
            (0, {"order_id": "o1", "customer": {"id": "c1"}, "amount": 99.0}),  # a duplicate: dropped
        ],
    )
    produce(
        kafka_bootstrap,
        "payments",
        [
            (0, {"payment_id": "p1", "order_id": "o1", "paid": 20.0}),
            (0, {"payment_id": "p3", "order_id": "o3", "paid": 0}),
        ],
    )
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    rows = ch.query(
        "SELECT order_id, customer_id, amount, payment_id, paid_at IS NOT NULL, unpaid FROM orders_paid"
    ).result_rows
    assert rows == [("o1", "c1", 30.0, "p1", True, 10.0)]
