"""A pipeline whose table is created by the engine's own DDL (with the ingestion-time column), and helpers to
put rows with known keys into it: now, or at a chosen ingestion time."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from spark_jobs.sink import TableSpec, create_dlq_sql, create_table_sql
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services as pipeline_services

ORDER_COLUMNS = ("order_id", "seq", "amount", "customer_name")


@dataclass(frozen=True)
class PipelineTable:
    database: str
    table: str


def order_key(n: int) -> str:
    return str(uuid.UUID(int=900_000 + n, version=4))


def insert_orders(ch, target: PipelineTable, keys: list[int], *, hours_ago: float | None = None) -> None:
    """One row per entry of `keys` (repeat a number for a duplicate). Without `hours_ago` the ingestion time is
    left to the column's default, as the sink's inserts do; with it, written explicitly."""
    rows = [[uuid.UUID(order_key(k)), i, 1.5, None] for i, k in enumerate(keys)]
    columns = list(ORDER_COLUMNS)
    if hours_ago is not None:
        at = datetime.now(UTC) - timedelta(hours=hours_ago)
        rows = [[*row, at] for row in rows]
        columns.append("_cf_ingested_at")
    ch.insert(target.table, rows, column_names=columns, database=target.database)


@pytest.fixture(scope="session")
def ch(clickhouse_server):
    import clickhouse_connect

    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    yield client
    client.close()


def create_pipeline_table(ch, database: str, table: str = "orders") -> PipelineTable:
    """The table as the engine creates it for `orders_spec(create_table=True)`."""
    ch.command(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    spec = TableSpec(
        database=database,
        table=table,
        dlq_table=f"{table}_dlq",
        engine="MergeTree",
        order_by=("order_id",),
        columns=(("order_id", "UUID"), ("seq", "Int64"), ("amount", "Float64"), ("customer_name", "Nullable(String)")),
        insert_dedup_window=1000,
    )
    ch.command(create_table_sql(spec))
    ch.command(create_dlq_sql(spec))
    return PipelineTable(database, table)


@pytest.fixture
def pipeline_table(ch) -> PipelineTable:
    return create_pipeline_table(ch, f"cf_audit_{uuid.uuid4().hex[:8]}")


@pytest.fixture
def audited_pipeline(owner, kafka_conn, ch_conn, topics, pipeline_table):
    """A pipeline writing `pipeline_table` (dedup on order_id, window 6h)."""
    spec = orders_spec(topics.orders, pipeline_table.database, create_table=True)
    spec["dedup"]["window"] = "6h"
    return pipeline_services.pipeline_create(
        owner=owner, name="audited", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )
