"""The metrics relay (spark_jobs.metrics.ProgressRelay) takes every batch's progress of its own query from the JVM
listener (io.clearflow.spark.ProgressQueue), in order, and none of another query of the same session."""

from __future__ import annotations

import pytest
from engine_helpers import wait_for

from spark_jobs.metrics import MetricsPublisher, ProgressRelay, SinkStats

pytestmark = pytest.mark.spark


class RecordingRelay(ProgressRelay):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, int]] = []

    def handle(self, progress):
        self.seen.append((progress["name"], progress["batchId"]))
        super().handle(progress)


def _rate_query(spark, name: str, tmp_path):
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .load()
        .writeStream.queryName(name)
        .format("noop")
        .option("checkpointLocation", str(tmp_path / name))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def test_the_relay_takes_its_own_querys_progress_in_order(spark, tmp_path):
    relay = RecordingRelay(spark, "relay-mine", SinkStats(), MetricsPublisher("relay-mine", None)).start()
    mine, other = _rate_query(spark, "relay-mine", tmp_path), _rate_query(spark, "relay-other", tmp_path)
    try:
        wait_for(lambda: relay.last_batch_id >= 5, timeout=120)
        wait_for(lambda: (other.lastProgress or {}).get("batchId", -1) >= 5, timeout=120)
    finally:
        mine.stop()
        other.stop()
        relay.stop()
    names = {name for name, _ in relay.seen}
    batch_ids = [batch_id for _, batch_id in relay.seen]
    assert names == {"relay-mine"}
    assert batch_ids == sorted(set(batch_ids)) and batch_ids[0] == 0  # every batch once, oldest first
    assert batch_ids[-1] == relay.last_batch_id
