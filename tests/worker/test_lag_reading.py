"""A pipeline's lag from the topics' end offsets and what it committed (worker.lag.reading_from)."""

from __future__ import annotations

import pytest

from webapp.connections.topic_offsets import TopicOffsets
from worker.lag import reading_from

pytestmark = pytest.mark.fast

OFFSETS = TopicOffsets(earliest={"orders": {"0": 0, "1": 500}}, end={"orders": {"0": 1_000, "1": 2_000}})


def test_the_lag_is_the_end_now_minus_what_was_committed_per_partition():
    committed = {"orders": {"0": 900, "1": 1_200}}
    reading = reading_from(OFFSETS, committed, starting="earliest", at_ms=5, source="checkpoint")
    assert reading.lag == {"orders": {"0": 100, "1": 800}}
    assert reading.total == 900
    assert (reading.end_total, reading.committed_total) == (3_000, 2_100)
    assert reading.position == "checkpoint"


def test_what_retention_removed_is_not_counted_as_lag():
    reading = reading_from(OFFSETS, {"orders": {"0": 1_000, "1": 100}}, starting="earliest", at_ms=5, source="batch")
    assert reading.lag["orders"]["1"] == 1_500  # read on from the earliest offset still there, 500


def test_before_the_first_batch_the_backlog_is_read_from_where_the_pipeline_starts():
    earliest = reading_from(OFFSETS, None, starting="earliest", at_ms=5, source="checkpoint")
    assert earliest.total == 2_500 and earliest.position == "start"
    latest = reading_from(OFFSETS, None, starting="latest", at_ms=5, source="checkpoint")
    assert latest.total == 0


def test_a_partition_added_later_is_read_from_its_earliest_offset():
    reading = reading_from(OFFSETS, {"orders": {"0": 1_000}}, starting="latest", at_ms=5, source="checkpoint")
    assert reading.lag == {"orders": {"0": 0, "1": 1_500}}
