"""A start from a new checkpoint (a reset, a deploy that starts fresh) that re-reads from a time writes each event
once: the rows the table received within the dedup window keep their keys' first event. Real broker and
ClickHouse."""

from __future__ import annotations

import time

import pytest
from engine_helpers import event, make_spec, produce

from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query
from spark_jobs.written_keys import guard_issue


class _Address:
    host, port = "127.0.0.1", 8123


@pytest.mark.fast
def test_the_guard_says_which_keys_it_cannot_compare():
    data = make_spec(kafka_bootstrap="127.0.0.1:9092", clickhouse=_Address(), topics=["orders"])
    assert guard_issue(parse_spec(data)) is None
    data["dedup"]["keys"] = ["email"]
    data["sink"]["columns"] = [c for c in data["sink"]["columns"] if c["field"] != "email"]
    assert guard_issue(parse_spec(data)) == "dedup key 'email' is not written to a column"


def _run_once(spark, spec, checkpoint: str) -> None:
    query = start_query(spark, spec, checkpoint=checkpoint, trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)


@pytest.mark.spark
def test_a_new_checkpoint_that_reads_again_from_a_time_doubles_no_row(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(2)
    before = int(time.time() * 1000) - 60_000
    produce(kafka_bootstrap, topic, [(0, event("a")), (1, event("b")), (0, event("c"))])
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    spec = parse_spec(data)
    _run_once(spark, spec, str(tmp_path / "first"))

    def rows() -> list[tuple]:
        return ch.query(f"SELECT event_id, count() FROM {spec.sink.table} GROUP BY event_id ORDER BY 1").result_rows

    assert rows() == [("a", 1), ("b", 1), ("c", 1)]
    # A copy of b and a new event arrive; the pipeline starts over from a time before all of them.
    produce(kafka_bootstrap, topic, [(1, event("b")), (1, event("d"))])
    data["source"]["starting_offsets"] = str(before)
    _run_once(spark, parse_spec(data), str(tmp_path / "reset"))
    assert rows() == [("a", 1), ("b", 1), ("c", 1), ("d", 1)]
