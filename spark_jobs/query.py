"""The running query: start it (the checkpoint's checks, the state store's memory, the stream, the ClickHouse
tables, the foreachBatch writer, the metrics relay and heartbeat beside it) and stop it with what it started."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from clearflow_spec import sizing
from clearflow_spec.avro_schema import WriterSchemas
from clearflow_spec.connections import connection_dict
from clearflow_spec.protocol import local_checkpoint_path
from clearflow_spec.spec import PipelineSpec
from spark_jobs import column_mapping, written_keys
from spark_jobs import sink as ch
from spark_jobs.checkpoint_state import check_checkpoint_state
from spark_jobs.cpu_priority import local_jvm_pid, lower_compaction_priority
from spark_jobs.metrics import MetricsPublisher, ProgressRelay, QueryHeartbeat, SinkStats, StateKeyCount
from spark_jobs.pipeline import build_joined, build_stream, prepare_sink, sink_columns, source_schemas
from spark_jobs.session import (
    DEFAULT_STATE_MEMORY_MB,
    ROCKSDB_MEMORY_CONF,
    state_store_conf,
    use_in_process_local_files,
)
from spark_jobs.source import read_kafka

log = logging.getLogger(__name__)

RUN_ID_FILE = "clearflow-run-id"


def run_id(checkpoint: str) -> str:
    """An id for this checkpoint's lifetime, kept inside it: a pipeline restarted from a fresh checkpoint
    (batch ids from 0 again) must not collide with the insert tokens of its previous life."""
    path = local_checkpoint_path(checkpoint)
    if path is None:
        return hashlib.sha256(checkpoint.encode()).hexdigest()[:12]
    path.mkdir(parents=True, exist_ok=True)
    marker = path / RUN_ID_FILE
    if not marker.exists():
        tmp = path / f".{RUN_ID_FILE}.{uuid.uuid4().hex}"
        tmp.write_text(uuid.uuid4().hex[:12])
        os.replace(tmp, marker)
    return marker.read_text().strip()


@dataclass
class BatchWriter:
    """The foreachBatch function (runs on the driver): one pass over the batch, written by the executors."""

    spec: PipelineSpec
    token_prefix: str
    stats: SinkStats

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        sink = self.spec.sink
        # Computed once and kept: the writer inserts a partition only when it holds every row the computation gave
        # it. A task that fails at the end of its partition (a state store commit refused: S3 answering 500, a full
        # disk, a task stopped mid-stream) ends the Python side's input early without an error there; a partial
        # insert, then the replay's whole one under the same token, would write the partial rows twice.
        batch = batch.persist()
        try:
            writer = ch.PartitionWriter(
                conn=connection_dict(sink.clickhouse, reveal_secrets=True),
                database=sink.clickhouse.database,
                table=sink.table,
                dlq_table=sink.dead_letter_table,
                columns=tuple(column_mapping.insert_columns(sink_columns(self.spec))),
                pipeline=self.spec.name,
                token_prefix=self.token_prefix,
                batch_id=batch_id,
                partition_rows=partition_rows(batch),
            )
            results = batch.mapInArrow(writer, ch.STATS_SCHEMA).collect()
        finally:
            batch.unpersist()
        self.stats.put(
            batch_id,
            {
                "rows_written": sum(r["rows_written"] for r in results),
                "dead_letters": sum(r["dead_letters"] for r in results),
                "insert_ms_max": max((r["insert_ms"] for r in results), default=0),
            },
        )


def partition_rows(batch: DataFrame) -> dict[int, int]:
    """How many rows each partition of `batch` has (partitions without rows are absent), counted in the JVM."""
    counts = batch.groupBy(F.spark_partition_id().alias("p")).count().collect()
    return {int(row["p"]): int(row["count"]) for row in counts}


def start_query(
    spark: SparkSession,
    spec: PipelineSpec,
    *,
    checkpoint: str,
    redis_url: str | None = None,
    trigger: dict[str, Any] | None = None,
    prepare: bool = True,
    schemas: WriterSchemas | None = None,
) -> StreamingQuery:
    """Check the spec against Spark, prepare ClickHouse, and start the streaming query.

    `schemas`: an Avro source's writer schemas (default: `source_schemas(spec)`, asked of the registry now).
    RocksDB's memory bound is the session's ROCKSDB_MEMORY_CONF (DEFAULT_STATE_MEMORY_MB when not set).
    CheckpointMismatch when the checkpoint holds state of an earlier engine."""
    if spec.dedup is not None or spec.join is not None:
        check_checkpoint_state(checkpoint)
    memory_mb = int(spark.conf.get(ROCKSDB_MEMORY_CONF, None) or DEFAULT_STATE_MEMORY_MB)
    for key, value in state_store_conf(memory_mb=memory_mb).items():
        spark.conf.set(key, value)
    if local_checkpoint_path(checkpoint) is not None:  # only a local checkpoint gains; S3A's classes could not see it
        use_in_process_local_files(spark)
    if spec.dedup is not None:
        log.info("pipeline %s: dedup state in RocksDB, memory bound %d MB", spec.name, memory_mb)
    if schemas is None:
        schemas = source_schemas(spec)
    if spec.join is None:
        # A start without a committed batch re-reads under new insert tokens: the rows the table received
        # within the dedup window keep their keys' first event (spark_jobs.written_keys).
        written = written_keys.written_keys(spark, spec, checkpoint)
        stream = build_stream(read_kafka(spark, spec), spec, schemas, written)
    else:
        right = spec.join.source
        right_raw = read_kafka(spark, spec, source=right)
        stream = build_joined(read_kafka(spark, spec), right_raw, spec, schemas, source_schemas(spec, source=right))
    if prepare:
        prepare_sink(spec)
    stats = SinkStats()
    query_name = f"clearflow-{spec.name}"
    publisher = MetricsPublisher(spec.name, redis_url)
    key_count = StateKeyCount(checkpoint) if spec.dedup is not None or spec.join is not None else None
    interval = (trigger or {}).get("processingTime")
    check = sizing.TriggerCheck(interval) if interval else None
    relay = ProgressRelay(spark, query_name, stats, publisher, key_count, trigger_check=check).start()
    token_prefix = f"{spec.name}:{run_id(checkpoint)}"
    writer = (
        stream.writeStream.queryName(query_name)
        .foreachBatch(BatchWriter(spec, token_prefix, stats))
        .option("checkpointLocation", checkpoint)
        .trigger(**(trigger or {"processingTime": "1 second"}))
    )
    restore = _timeouts_need_empty_batches(spark, spec, trigger)
    try:
        query = writer.start()
    except BaseException:
        relay.stop()
        _restore_conf(spark, restore)
        raise
    # A state store in this JVM: its compactions kept below the tasks at each beat (RocksDB starts its threads with
    # the first state store, and may add some).
    jvm_pid = local_jvm_pid(spark) if key_count is not None else None
    upkeep = functools.partial(lower_compaction_priority, jvm_pid) if jvm_pid is not None else None
    _RUNNING[query.id] = QueryCompanions(relay, QueryHeartbeat(query, publisher, on_beat=upkeep).start(), restore)
    return query


class QueryCompanions(NamedTuple):
    """What start_query started beside a query, which stop_query ends with it."""

    relay: ProgressRelay
    heartbeat: QueryHeartbeat
    restore_conf: dict[str, str | None]  # the session settings the query changed, as they were before


_RUNNING: dict[str, QueryCompanions] = {}  # by query id
_NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def _timeouts_need_empty_batches(
    spark: SparkSession, spec: PipelineSpec, trigger: dict[str, Any] | None
) -> dict[str, str | None]:
    """A left join emits an unmatched left event from a timer, which only a micro-batch fires: such a query runs
    batches without data (session_conf turns them off for all others), so a quiet topic's timeouts still come.
    Not for availableNow, which would then never end. Returns the settings to restore when the query stops."""
    if spec.join is None or spec.join.type != "left" or (trigger or {}).get("availableNow"):
        return {}
    previous = spark.conf.get(_NO_DATA_BATCHES, None)
    spark.conf.set(_NO_DATA_BATCHES, "true")
    return {_NO_DATA_BATCHES: previous}


def _restore_conf(spark: SparkSession, settings: dict[str, str | None]) -> None:
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def stop_query(spark: SparkSession, query: StreamingQuery) -> None:
    """Stop the query (if running), its heartbeat, and its metrics relay."""
    if query.isActive:
        query.stop()
    companions = _RUNNING.pop(query.id, None)
    if companions is not None:
        _restore_conf(spark, companions.restore_conf)
        companions.heartbeat.stop()
        _await_last_progress(query, companions.relay)
        companions.relay.stop()


def _await_last_progress(query: StreamingQuery, relay: ProgressRelay, timeout: float = 10.0) -> None:
    """Let the relay see the query's last batch before it is removed: progress events arrive after the batch,
    and a run that ends with its only batch (availableNow) would otherwise publish no metrics at all."""
    try:
        progress = query.lastProgress
    except Exception:  # the JVM is gone: nothing more will arrive
        return
    last = int(progress.get("batchId", -1)) if progress else -1
    deadline = time.monotonic() + timeout
    while relay.last_batch_id < last and time.monotonic() < deadline:
        time.sleep(0.05)


def run_until_stopped(query: object, stop_requested: threading.Event) -> BaseException | None:
    """Wait until the query ends or a stop is requested (then stop between batches); its failure, if any."""
    from pyspark.errors import StreamingQueryException

    while query.isActive and not stop_requested.is_set():  # type: ignore[attr-defined]
        try:
            query.awaitTermination(0.5)  # type: ignore[attr-defined]
        except StreamingQueryException:
            break  # reported from query.exception()
    if stop_requested.is_set() and query.isActive:  # type: ignore[attr-defined]
        _stop_between_batches(query)
    return query.exception()  # type: ignore[attr-defined]


def _stop_between_batches(query: object, timeout: float = 600.0) -> None:
    """Let the running micro-batch finish, then stop (a batch cut short is replayed anyway).

    A job that is behind starts the next batch at once, so a gap between batches may never be seen: wait for
    either a gap or the end of the batch that was running when the stop came (its id appears in the progress),
    and stop then, interrupting at most a batch that just began. The worker forces the stop (SIGKILL) after its
    own timeout in any case.
    """
    deadline = time.monotonic() + timeout
    try:
        running = _last_batch_id(query) + 1  # the batch in flight, if any
        while (
            time.monotonic() < deadline
            and query.isActive  # type: ignore[attr-defined]
            and query.status.get("isTriggerActive")  # type: ignore[attr-defined]
            and _last_batch_id(query) < running
        ):
            time.sleep(0.1)
        query.stop()  # type: ignore[attr-defined]
    except Exception as exc:
        log.warning("could not stop the query cleanly: %s", exc)


def _last_batch_id(query: object) -> int:
    progress = query.lastProgress  # type: ignore[attr-defined]
    return int(progress.get("batchId", -1)) if progress else -1


__all__ = ["BatchWriter", "run_until_stopped", "start_query", "stop_query"]
