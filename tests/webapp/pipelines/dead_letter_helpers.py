"""Dead letters written the way the engine writes them: `spark_jobs.sink.prepare_tables` creates the table and
the sink's own `PartitionWriter` inserts the rows (outside Spark: it is a plain function over Arrow batches)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa

from clearflow_spec.connections import connection_dict
from spark_jobs import sink
from webapp.pipelines import services

_BATCH_IDS = itertools.count()  # each call is a new micro-batch (a repeated insert token would be deduplicated)


@dataclass(frozen=True)
class Event:
    topic: str
    partition: int
    offset: int
    raw: str
    reason: str


def write_dead_letters(pipeline, events: list[Event]) -> None:
    """Insert `events` as the pipeline's dead letters of one micro-batch (creating the table if needed)."""
    spec = services.pipeline_job_spec(pipeline=pipeline)
    conn = connection_dict(spec.sink.clickhouse, reveal_secrets=True)
    table_spec = sink.TableSpec(
        database=spec.sink.clickhouse.database,
        table=spec.sink.table,
        dlq_table=spec.sink.dead_letter_table,
        engine=spec.sink.engine,
        order_by=tuple(spec.sink.order_by),
        columns=tuple((c.column, c.type) for c in spec.sink.columns),
        insert_dedup_window=spec.sink.insert_dedup_window,
    )
    sink.prepare_tables(conn, table_spec, create=spec.sink.create_table)
    n = len(events)
    batch = pa.RecordBatch.from_pydict(
        {
            "order_id": pa.array([None] * n, pa.string()),
            "_cf_error": pa.array([e.reason for e in events], pa.string()),
            "_cf_dlq_raw": pa.array([e.raw for e in events], pa.string()),
            "_cf_dlq_topic": pa.array([e.topic for e in events], pa.string()),
            "_cf_dlq_partition": pa.array([e.partition for e in events], pa.int32()),
            "_cf_dlq_offset": pa.array([e.offset for e in events], pa.int64()),
            "_cf_dlq_timestamp": pa.array([datetime(2026, 11, 23, 9, 0, tzinfo=UTC)] * n, pa.timestamp("us", "UTC")),
        }
    )
    writer = sink.PartitionWriter(
        conn=conn,
        database=spec.sink.clickhouse.database,
        table=spec.sink.table,
        dlq_table=spec.sink.dead_letter_table,
        columns=(("order_id", "order_id"),),
        pipeline=spec.name,
        token_prefix=f"{spec.name}:test",
        batch_id=next(_BATCH_IDS),
        partition_rows={0: n},
    )
    stats = list(writer(iter([batch])))
    assert stats[0].column("dead_letters").to_pylist() == [n]


def new_database(clickhouse_server) -> str:
    """A fresh ClickHouse database, so dead-letter tables never show up in other tests' shared database."""
    import uuid

    import clickhouse_connect

    name = f"cf_dlq_{uuid.uuid4().hex[:8]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(f"CREATE DATABASE `{name}`")
    finally:
        client.close()
    return name
