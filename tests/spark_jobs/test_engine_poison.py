"""Poison messages (about 1 MB of invalid JSON, bytes that are not UTF-8) go to dead letters; the running query
goes on and writes what comes after them."""

from __future__ import annotations

import pytest
from engine_helpers import event, make_spec, produce

from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query

pytestmark = pytest.mark.spark

POISON_JSON = b'{"event_id": "' + b"x" * 999_000  # about 1 MB, never closed (under the broker's 1 MiB limit)
POISON_BYTES = b'{"event_id": "\xff\xfe\xc3\x28", "n": 1}'  # not UTF-8


def test_poison_messages_go_to_dead_letters_and_the_query_keeps_running(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]))
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"processingTime": "200 milliseconds"})
    try:
        produce(kafka_bootstrap, topic, [(0, event("before")), (0, POISON_JSON), (0, POISON_BYTES)])
        query.processAllAvailable()
        produce(kafka_bootstrap, topic, [(0, event("after"))])
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
    finally:
        stop_query(spark, query)

    written = ch.query(f"SELECT event_id FROM {spec.sink.table} ORDER BY event_id").result_rows
    assert written == [("after",), ("before",)]
    dead = ch.query(f"SELECT offset, length(raw), reason FROM {spec.sink.table}_dlq ORDER BY offset").result_rows
    assert [(offset, reason) for offset, _, reason in dead] == [(1, "invalid JSON"), (2, "invalid UTF-8")]
    assert dead[0][1] == len(POISON_JSON)
