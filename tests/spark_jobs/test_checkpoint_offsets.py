"""Where a pipeline stands, read from its checkpoint's offset and commit logs (spark_jobs.checkpoint_offsets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_jobs.checkpoint_offsets import committed_offsets, parse_offset_file

pytestmark = pytest.mark.fast

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})


def write_batch(checkpoint: Path, batch: int, sources: list[dict], *, committed: bool) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    lines = ["v1", META, *(json.dumps(source) for source in sources)]
    (checkpoint / "offsets" / str(batch)).write_text("\n".join(lines))
    if committed:
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_the_newest_committed_batch_is_where_the_pipeline_stands(tmp_path):
    write_batch(tmp_path, 0, [{"orders": {"0": 10, "1": 12}}], committed=True)
    write_batch(tmp_path, 1, [{"orders": {"0": 20, "1": 25}}], committed=True)
    write_batch(tmp_path, 2, [{"orders": {"0": 90, "1": 95}}], committed=False)  # planned, not done
    (tmp_path / "commits" / ".1.crc").write_text("x")
    assert committed_offsets(tmp_path) == {"orders": {"0": 20, "1": 25}}


def test_a_join_has_two_sources_in_one_file(tmp_path):
    write_batch(tmp_path, 4, [{"orders": {"0": 7}}, {"customers": {"0": 3}}], committed=True)
    assert committed_offsets(tmp_path) == {"orders": {"0": 7}, "customers": {"0": 3}}


def test_nothing_committed_yet(tmp_path):
    assert committed_offsets(tmp_path) is None
    write_batch(tmp_path, 0, [{"orders": {"0": 5}}], committed=False)
    assert committed_offsets(tmp_path) is None


def test_a_file_that_is_not_an_offset_log():
    assert parse_offset_file("") == {}
    assert parse_offset_file("garbage\n{}\n{") == {}
