"""A micro-batch that Spark runs again after a crash is counted once in the metrics totals (and written once).

The crash is the state a kill leaves between a batch's insert and its commit: the batch's offsets are in the
checkpoint, its commit is not. Rewinding the checkpoint's commit log to that point makes the next start run the
batch again, with the same query id and batch id, exactly as after a crash."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from engine_helpers import event, make_spec, produce, wait_for

from clearflow_spec.spec import parse_spec
from spark_jobs.metrics import latest_key, totals_key
from spark_jobs.query import start_query, stop_query

pytestmark = pytest.mark.spark


def last_commit(checkpoint: Path) -> int:
    return max(int(entry.name) for entry in (checkpoint / "commits").iterdir() if entry.name.isdigit())


def rewind_to_before_commit(checkpoint: Path, batch_id: int) -> None:
    """What a kill after the batch's insert and before its commit leaves: its offsets, no commit, nothing later."""
    for log_name in ("offsets", "commits"):
        for entry in (checkpoint / log_name).iterdir():
            number = entry.name.lstrip(".").removesuffix(".crc")
            if number.isdigit() and (int(number) > batch_id or (log_name == "commits" and int(number) == batch_id)):
                entry.unlink()


def test_a_replayed_batch_counts_once_in_the_totals(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, redis_url, caplog
):
    import redis

    caplog.set_level(logging.INFO, logger="clearflow.metrics")
    client = redis.Redis.from_url(redis_url)
    topic = new_topic(2)
    keys = [f"r{i:03d}" for i in range(100)]
    produce(kafka_bootstrap, topic, [(i % 2, event(k, n=i)) for i, k in enumerate(keys)] + [(0, event(keys[0], n=-1))])
    spec = parse_spec(make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic]))
    checkpoint = tmp_path / "ckpt"

    def latest() -> dict:
        raw = client.get(latest_key(spec.name))
        return json.loads(raw) if raw else {}

    def run(until) -> None:
        query = start_query(
            spark, spec, checkpoint=str(checkpoint), redis_url=redis_url, trigger={"availableNow": True}
        )
        try:
            query.awaitTermination(300)
            assert query.exception() is None, query.exception()
            wait_for(until, timeout=60)  # the listener's events arrive after the query has ended
        finally:
            stop_query(spark, query)

    def totals() -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in client.hgetall(totals_key(spec.name)).items()}

    def published() -> list[dict]:
        return [json.loads(r.getMessage()) for r in caplog.records if r.name == "clearflow.metrics"]

    run(lambda: latest().get("batch_id") == last_commit(checkpoint))
    before, first_latest = totals(), latest()
    data_batch = next(record["batch_id"] for record in published() if record["input_rows"] > 0)

    rewind_to_before_commit(checkpoint, data_batch)
    run(lambda: latest().get("batch_id") == last_commit(checkpoint) and latest() != first_latest)

    runs_of_the_batch = [r for r in published() if r["batch_id"] == data_batch]
    assert [r["input_rows"] for r in runs_of_the_batch] == [101, 101]  # it ran, and was published, twice
    assert len({r["query_id"] for r in runs_of_the_batch}) == 1  # as the same batch of the same query
    assert totals() == before  # counted once
    assert (before["input_rows"], before["rows_written"], before["duplicates_dropped"]) == ("101", "100", "1")
    assert ch.query(f"SELECT count(), uniqExact(event_id) FROM {spec.sink.table}").result_rows == [(100, 100)]
