"""The ClickHouse writer on its own, against the real ClickHouse: what a replayed micro-batch leaves behind."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa

from spark_jobs.sink import PartitionWriter, TableSpec, prepare_tables

# More rows than ClickHouse squashes into one insert block by default (1,048,449).
BIG_PARTITION_ROWS = 1_200_000


def _writer(clickhouse_server: Any, table: str, batch_id: int, rows: int = BIG_PARTITION_ROWS) -> PartitionWriter:
    return PartitionWriter(
        conn={"host": clickhouse_server.host, "port": clickhouse_server.port},
        database="default",
        table=table,
        dlq_table=f"{table}_dlq",
        columns=(("event_id", "event_id"), ("amount", "amount")),
        pipeline="sink-test",
        token_prefix="sink-test:run1",
        batch_id=batch_id,
        partition_rows={0: rows},
    )


def _partition(keys: list[int]) -> list[pa.RecordBatch]:
    """One Spark partition as the writer receives it: Arrow batches of 10,000 rows, no dead letters."""
    table = pa.table(
        {
            "event_id": pa.array([f"evt-{k}" for k in keys], pa.string()),
            "amount": pa.array(keys, pa.int64()),
            "_cf_error": pa.nulls(len(keys), pa.string()),
        }
    )
    return table.to_batches(max_chunksize=10_000)


def test_a_big_partition_replayed_in_another_order_is_written_exactly_once(clickhouse_server: Any, ch: Any):
    table = f"sink_{uuid.uuid4().hex[:8]}"
    spec = TableSpec(
        "default", table, f"{table}_dlq", "MergeTree", ("event_id",), (("event_id", "String"), ("amount", "Int64")), 100
    )
    prepare_tables({"host": clickhouse_server.host, "port": clickhouse_server.port}, spec, create=True)
    ch.command(f"SYSTEM STOP MERGES {table}")
    keys = list(range(BIG_PARTITION_ROWS))

    [stats] = list(_writer(clickhouse_server, table, batch_id=0)(iter(_partition(keys))))
    assert stats.column("rows_written")[0].as_py() == BIG_PARTITION_ROWS
    # One part: the insert landed whole, so a crash could not have left a part of it behind.
    assert ch.command(f"SELECT count() FROM system.parts WHERE table = '{table}' AND active") == 1

    # Spark replays the batch after a crash: the same rows, in another order (shuffle blocks arrive in any order).
    list(_writer(clickhouse_server, table, batch_id=0)(iter(_partition(keys[::-1]))))
    rows, unique = ch.query(f"SELECT count(), uniqExact(event_id) FROM {table}").result_rows[0]
    assert rows == unique == BIG_PARTITION_ROWS

    # The next batch is new data under a new token, and is written.
    list(_writer(clickhouse_server, table, batch_id=1, rows=1)(iter(_partition([BIG_PARTITION_ROWS]))))
    assert ch.command(f"SELECT count() FROM {table}") == BIG_PARTITION_ROWS + 1
