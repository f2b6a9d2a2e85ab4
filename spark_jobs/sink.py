"""ClickHouse: table creation on the driver, and idempotent Arrow inserts from the executors.

Exactly once: Spark replays an unfinished micro-batch with the same batch id and the same offsets after a
crash. Each Spark partition of a batch is written as one insert per table with the token
`<pipeline>:<run id>:<batch id>:<partition>[:dlq]`; tables carry `non_replicated_deduplication_window`,
so ClickHouse drops a replayed insert whose token it has seen. The partition's rows are the same on replay
(dedup output is hash-partitioned by key; without dedup a partition is a fixed Kafka offset range), but not
necessarily in the same order (shuffle blocks arrive in any order): each insert is therefore written as one
block (`ONE_BLOCK`), so it lands whole or not at all.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.client_config import clickhouse_connect_kwargs, write_ca_file
from clearflow_spec.connections import ClickHouseConnectionSpec, connection_from_values
from clearflow_spec.exactly_once import TABLE_ENGINE_SQL, InsertDedup, insert_dedup_of_table

log = logging.getLogger(__name__)

STATS_SCHEMA = "partition int, rows_written long, dead_letters long, insert_ms long"
DLQ_COLUMNS = (
    ("raw", "String"),
    ("topic", "LowCardinality(String)"),
    ("partition", "Int32"),
    ("offset", "Int64"),
    ("kafka_timestamp", "Nullable(DateTime64(3, 'UTC'))"),
    ("reason", "String"),
    ("pipeline", "LowCardinality(String)"),
    ("batch_id", "Int64"),
    ("inserted_at", "DateTime64(3, 'UTC') DEFAULT now64(3)"),
)
# Every table the job creates records when each row arrived: the duplicate audit (webapp.audits) counts the
# keys of recent rows by it. Inserts name their columns, so ClickHouse fills it in (docs/pipeline-spec.md).
INGESTED_AT_COLUMN = "_cf_ingested_at"
INGESTED_AT_TYPE = "DateTime64(3, 'UTC') DEFAULT now64(3)"
INGESTED_AT_INDEX = "_cf_ingested_at_minmax"
# ClickHouse error codes worth retrying: timeouts, network, overload, too many parts, readonly replica...
TRANSIENT_CODES = {3, 159, 164, 202, 203, 209, 210, 241, 242, 252, 285, 319, 425, 999, 1000}
_CODE_RE = re.compile(r"Code: (\d+)")
# ClickHouse squashes an insert's Arrow batches into blocks of about 1M rows / 256 MB and writes each block as
# a part deduplicated under its own derived token. A crash between two parts, then a replay with the rows in
# another order, would skip some rows and repeat others. Thresholds no insert reaches: one block per insert.
ONE_BLOCK = {"min_insert_block_size_rows": 10**15, "min_insert_block_size_bytes": 10**15}


class ClickHouseWriteError(RuntimeError):
    """A permanent ClickHouse error: the job stops with this message."""


class IncompleteInput(RuntimeError):
    """A partition reached the writer with fewer rows than it has: nothing of it was written, and the batch is
    replayed (a failure on the JVM side of the task ends the Arrow stream early without an error here)."""


def error_code(exc: BaseException) -> int | None:
    match = _CODE_RE.search(str(exc))
    return int(match.group(1)) if match else None


def is_transient(exc: BaseException) -> bool:
    from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

    if isinstance(exc, OperationalError | ConnectionError | TimeoutError):
        return True
    if isinstance(exc, DatabaseError):
        code = error_code(exc)
        text = str(exc)
        return code in TRANSIENT_CODES or (code is None and ("HTTPDriver" in text or "timed out" in text))
    return False


def with_retries(action: Any, *, what: str, attempts: int = 6, base_delay: float = 0.5) -> Any:
    """Run `action()`; retry transient errors with exponential backoff and jitter; raise permanent ones
    as ClickHouseWriteError carrying ClickHouse's message."""
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:
            if is_transient(exc) and attempt < attempts:
                delay = min(30.0, base_delay * 2 ** (attempt - 1)) * (0.5 + random.random())  # noqa: S311
                log.warning("%s failed (attempt %d/%d), retrying in %.1fs: %s", what, attempt, attempts, delay, exc)
                time.sleep(delay)
                continue
            raise ClickHouseWriteError(f"{what} failed: {exc}") from exc
    raise AssertionError("unreachable")  # pragma: no cover


# --- clients (cached per Python process: executors' workers are reused) ------------------------------------

_CLIENTS: dict[str, Any] = {}
_CA_FILES: dict[str, str] = {}  # CA PEM -> its file, for the life of the process (the clients keep reading it)


def _ca_file(pem: str) -> str:
    path = _CA_FILES.get(pem)
    if path is None or not os.path.exists(path):
        path = _CA_FILES[pem] = write_ca_file(pem)
    return path


def get_client(conn: dict[str, Any]) -> Any:
    """A client for `conn`, the spec's `sink.clickhouse` as a dict (secrets revealed): plain values pickle to
    the executors. TLS (`secure`, `verify`, a private CA in `ssl_ca_pem`) as the web app's connection test."""
    key = json.dumps(conn, sort_keys=True)
    client = _CLIENTS.get(key)
    if client is None:
        import clickhouse_connect

        spec = connection_from_values(ClickHouseConnectionSpec, conn)
        kwargs = clickhouse_connect_kwargs(spec, ca_cert=_ca_file(spec.ssl_ca_pem) if spec.ssl_ca_pem else None)
        client = with_retries(
            lambda: clickhouse_connect.get_client(
                **kwargs,
                connect_timeout=10,
                send_receive_timeout=300,
                compress=False,
                settings={"insert_deduplicate": 1},
            ),
            what=f"connecting to ClickHouse at {spec.host}:{spec.port}",
        )
        _CLIENTS[key] = client
    return client


# --- tables ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableSpec:
    database: str
    table: str
    dlq_table: str
    engine: str
    order_by: Sequence[str]
    columns: Sequence[tuple[str, str]]  # (name, ClickHouse type)
    insert_dedup_window: int  # non_replicated_deduplication_window: how many recent inserts are remembered


def create_table_sql(spec: TableSpec) -> str:
    elements = [f"{quote_ident(name)} {ch_type}" for name, ch_type in spec.columns]
    if INGESTED_AT_COLUMN not in {name for name, _ in spec.columns}:
        # A minmax index lets the audit's time bound skip the parts and granules of older rows.
        elements.append(f"{quote_ident(INGESTED_AT_COLUMN)} {INGESTED_AT_TYPE}")
        elements.append(
            f"INDEX {quote_ident(INGESTED_AT_INDEX)} {quote_ident(INGESTED_AT_COLUMN)} TYPE minmax GRANULARITY 1"
        )
    columns = ",\n  ".join(elements)
    order = ", ".join(quote_ident(c) for c in spec.order_by) if spec.order_by else ""
    return (
        f"CREATE TABLE IF NOT EXISTS {quote_ident(spec.database)}.{quote_ident(spec.table)} (\n  {columns}\n)\n"
        f"ENGINE = {spec.engine}\nORDER BY ({order})\n"
        f"SETTINGS non_replicated_deduplication_window = {int(spec.insert_dedup_window)}"
    )


def create_dlq_sql(spec: TableSpec) -> str:
    columns = ",\n  ".join(f"{quote_ident(name)} {ch_type}" for name, ch_type in DLQ_COLUMNS)
    return (
        f"CREATE TABLE IF NOT EXISTS {quote_ident(spec.database)}.{quote_ident(spec.dlq_table)} (\n  {columns}\n)\n"
        f"ENGINE = MergeTree\nORDER BY (`topic`, `partition`, `offset`)\n"
        f"SETTINGS non_replicated_deduplication_window = {int(spec.insert_dedup_window)}"
    )


def prepare_tables(conn: dict[str, Any], spec: TableSpec, *, create: bool) -> None:
    """Create the table (if asked) and the dead-letter table; check that the mapped columns exist."""
    client = get_client(conn)
    if create:
        with_retries(lambda: client.command(create_table_sql(spec)), what=f"creating table {spec.table}")
    with_retries(lambda: client.command(create_dlq_sql(spec)), what=f"creating table {spec.dlq_table}")
    for table, wanted in ((spec.table, [c for c, _ in spec.columns]), (spec.dlq_table, [c for c, _ in DLQ_COLUMNS])):
        rows = with_retries(
            lambda t=table: (
                client.query(
                    "SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String}",
                    parameters={"db": spec.database, "t": t},
                ).result_rows
            ),
            what=f"reading the columns of {table}",
        )
        present = {r[0] for r in rows}
        if not present:
            raise ClickHouseWriteError(f"table {spec.database}.{table} does not exist (create_table is false)")
        # A Nested column is listed as its arrays (`items.sku`, `items.qty`).
        missing = [c for c in wanted if c not in present and not any(p.startswith(f"{c}.") for p in present)]
        if missing:
            raise ClickHouseWriteError(f"table {spec.database}.{table} has no column(s) {', '.join(missing)}")


def table_insert_dedup(conn: dict[str, Any], *, database: str, table: str, window: int) -> InsertDedup | None:
    """Whether the table drops replayed inserts (`clearflow_spec.exactly_once`); None when it does not exist."""
    client = get_client(conn)
    rows = with_retries(
        lambda: client.query(TABLE_ENGINE_SQL, parameters={"db": database, "t": table}).result_rows,
        what=f"reading the engine of {table}",
    )
    if not rows:
        return None
    engine, engine_full, create_query = rows[0]
    return insert_dedup_of_table(
        database=database, table=table, engine=engine, engine_full=engine_full or create_query, window=window
    )


# --- the executor side -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionWriter:
    """Writes one Spark partition of one micro-batch (pickled to executors; holds plain values only)."""

    conn: dict[str, Any]
    database: str
    table: str
    dlq_table: str
    columns: tuple[tuple[str, str], ...]  # (name in the batch, name in the table)
    pipeline: str
    token_prefix: str
    batch_id: int
    partition_rows: dict[int, int]  # rows per partition of the batch, counted before the write (BatchWriter)

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        collected = [b for b in batches if b.num_rows]
        expected, received = self.partition_rows.get(partition, 0), sum(b.num_rows for b in collected)
        if received != expected:
            raise IncompleteInput(
                f"batch {self.batch_id}, partition {partition}: {received} of its {expected} rows reached the writer; "
                "nothing of it was written, and the batch is replayed"
            )
        written = dead = 0
        started = time.monotonic()
        if collected:
            table = pa.Table.from_batches(collected)
            errors = table.column("_cf_error")
            batch_names = [batch_name for batch_name, _ in self.columns]
            if errors.null_count == table.num_rows:  # the usual case: no dead letters, no copy
                rows, bad = table.select(batch_names), table.slice(0, 0)
            else:
                good = pc.is_null(errors)
                rows = table.filter(good).select(batch_names)
                bad = table.filter(pc.invert(good))
            rows = rows.rename_columns([table_name for _, table_name in self.columns])
            token = f"{self.token_prefix}:{self.batch_id}:{partition}"
            if rows.num_rows:
                self._insert(self.table, rows, token)
                written = rows.num_rows
            if bad.num_rows:
                n = bad.num_rows
                dlq = pa.table(
                    {
                        "raw": pc.fill_null(bad.column("_cf_dlq_raw"), ""),
                        "topic": bad.column("_cf_dlq_topic"),
                        "partition": bad.column("_cf_dlq_partition"),
                        "offset": bad.column("_cf_dlq_offset"),
                        "kafka_timestamp": bad.column("_cf_dlq_timestamp"),
                        "reason": bad.column("_cf_error"),
                        "pipeline": pa.array([self.pipeline] * n, pa.string()),
                        "batch_id": pa.array([self.batch_id] * n, pa.int64()),
                    }
                )
                self._insert(self.dlq_table, dlq, token + ":dlq")
                dead = n
        elapsed = int((time.monotonic() - started) * 1000)
        yield pa.RecordBatch.from_pydict(
            {
                "partition": pa.array([partition], pa.int32()),
                "rows_written": pa.array([written], pa.int64()),
                "dead_letters": pa.array([dead], pa.int64()),
                "insert_ms": pa.array([elapsed], pa.int64()),
            }
        )

    def _insert(self, table: str, data: Any, token: str) -> None:
        client = get_client(self.conn)
        with_retries(
            lambda: client.insert_arrow(
                table,
                data,
                database=self.database,
                settings={"insert_deduplication_token": token, "insert_deduplicate": 1, **ONE_BLOCK},
            ),
            what=f"insert into {self.database}.{table} (token {token})",
        )
