"""The writer inserts a partition only when every row of it arrived: a partial one is refused and nothing is written."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from spark_jobs import sink

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def rows(n: int, *, first: int = 0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "event_id": pa.array([f"k{i}" for i in range(first, first + n)], pa.string()),
            "_cf_error": pa.array([None] * n, pa.string()),
        }
    )


def writer(partition_rows: dict[int, int]) -> sink.PartitionWriter:
    return sink.PartitionWriter(
        conn={},
        database="default",
        table="events",
        dlq_table="events_dlq",
        columns=(("event_id", "event_id"),),
        pipeline="orders",
        token_prefix="orders:run",
        batch_id=7,
        partition_rows=partition_rows,
    )


@pytest.fixture
def inserts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, str]]:
    """The inserts the writer makes (table, rows, token), instead of sending them."""
    made: list[tuple[str, int, str]] = []

    def record(self: sink.PartitionWriter, table: str, data: Any, token: str) -> None:
        made.append((table, data.num_rows, token))

    monkeypatch.setattr(sink.PartitionWriter, "_insert", record)
    return made


def test_a_partition_that_arrived_whole_is_inserted_once_under_its_token(inserts) -> None:
    [stats] = list(writer({0: 5})(iter([rows(3), rows(2, first=3)])))
    assert inserts == [("events", 5, "orders:run:7:0")]
    assert stats.column("rows_written").to_pylist() == [5]


def test_a_partition_cut_short_writes_nothing_and_says_how_many_rows_came(inserts) -> None:
    with pytest.raises(sink.IncompleteInput, match=r"batch 7, partition 0: 3 of its 5 rows reached the writer"):
        list(writer({0: 5})(iter([rows(3)])))
    assert inserts == []


def test_rows_for_a_partition_the_count_did_not_see_are_refused(inserts) -> None:
    # The count names only partitions with rows: one absent from it must arrive empty.
    with pytest.raises(sink.IncompleteInput, match="2 of its 0 rows"):
        list(writer({1: 2})(iter([rows(2)])))
    assert inserts == []
    assert len(list(writer({1: 2})(iter([])))) == 1 and inserts == []
