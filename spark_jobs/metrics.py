"""One metrics record per micro-batch: published to Redis and logged as one JSON line.

The record (`BatchMetrics`) and its Redis keys are declared in `clearflow_spec.protocol` (the worker and the web app
read them): the latest record, the recent list, the history (a sorted set by batch start), the running totals,
and the heartbeat (also when no data came, so the worker can tell a stalled job from an idle one; and while a long
micro-batch runs, `QueryHeartbeat`, so a batch that reloads a large state is not taken for a stall).

Everything is written in one MULTI/EXEC per batch, so the series, the totals and the latest record agree.
A batch counts once: `counted_key` (the query id and its newest COUNTED_KEEP batch ids) remembers the batches
the totals hold; it is read under WATCH and written in the same transaction, so a batch Spark runs again after a
crash (the same id of the same query) updates the latest record only, never the totals, the series or the recent
list twice.
History and totals expire HISTORY_MAX_AGE_S after the last batch: a deleted pipeline's keys do not linger.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clearflow_spec.protocol import (
    COUNTED_KEEP,
    HEARTBEAT_EVERY_SECONDS,
    HEARTBEAT_TTL_SECONDS,
    HISTORY_MAX_AGE_S,
    HISTORY_MAX_RECORDS,
    RECENT_LIMIT,
    TOTAL_FIELDS,
    BatchMetrics,
    counted_key,
    heartbeat_key,
    history_key,
    latest_key,
    local_checkpoint_path,
    recent_key,
    totals_key,
)
from clearflow_spec.sizing import TriggerCheck

log = logging.getLogger("clearflow.metrics")

# The name of Spark's observed metric counting the events the filter dropped (`transforms.apply_filter`).
FILTER_OBSERVATION = "cf_filter"
# The observed metric of the fields the events carry (`spark_jobs.field_watch`): events per Avro writer schema
# id, or the JSON keys no field covers in a sample of one event in JSON_SAMPLE_EVERY (by offset).
FIELDS_OBSERVATION = "cf_fields"
# The rows into and out of the dedup processor (`spark_jobs.dedup.drop_duplicates`): their difference are the
# duplicates it dropped. A join's right side is deduplicated too, observed under names of its own (a query observes
# each name once); the duplicates of both add up.
DEDUP_IN_OBSERVATION, DEDUP_OUT_OBSERVATION = "cf_dedup_in", "cf_dedup_out"
RIGHT_DEDUP_OBSERVATIONS = ("cf_dedup_in_right", "cf_dedup_out_right")
DEDUP_OBSERVATIONS = ((DEDUP_IN_OBSERVATION, DEDUP_OUT_OBSERVATION), RIGHT_DEDUP_OBSERVATIONS)


def timestamp_ms(timestamp: str) -> int | None:
    """Unix milliseconds of an ISO 8601 time such as Spark's "2026-11-21T10:00:02.000Z"; None if unreadable."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _offsets(text: Any) -> dict[str, dict[str, int]]:
    if not text:
        return {}
    data = json.loads(text) if isinstance(text, str) else text
    return {topic: {p: int(v) for p, v in parts.items()} for topic, parts in data.items()}


def _state_operators(progress: dict[str, Any]) -> list[dict[str, Any]]:
    """The state operators: ClearFlow's processors (transformWithState: the dedup, a join's two dedups and the
    join itself), or Spark's own dedup in runs of earlier versions (a replayed progress)."""
    return [
        op
        for op in progress.get("stateOperators") or []
        if any(name in op.get("operatorName", "").lower() for name in ("dedup", "transformwithstate"))
    ]


class StateKeyCount:
    """The keys the state holds: rows added (the processors' state updates, one per new key or, in a join, per
    event waiting for the other side) minus rows removed (TTL expiry, and a left join's timeouts), counted batch
    by batch and carried in the checkpoint across runs. With a join: both sides' dedup keys and the events the
    join holds, so the count levels off once the windows are full.

    Why count here: RocksDB's own count (`trackTotalNumberOfRows`) costs two more state reads for each new key,
    the dedup's main cost. The count is kept in `<checkpoint>/clearflow-state-keys` with the batch it holds, so a
    batch Spark runs again after a crash is not counted twice; a crash between a batch's commit and this file's
    write leaves that one batch's keys out. A remote checkpoint keeps the count of this run only.
    """

    FILE = "clearflow-state-keys"

    def __init__(self, checkpoint: str | None) -> None:
        self._path: Path | None = None
        self.batch_id, self.keys = -1, 0
        local = local_checkpoint_path(checkpoint) if checkpoint else None
        if local is not None:
            self._path = local / self.FILE
            try:
                saved = json.loads(self._path.read_text())
                self.batch_id, self.keys = int(saved["batch_id"]), int(saved["keys"])
            except (OSError, ValueError, KeyError, TypeError):
                pass  # no count yet (a new checkpoint), or an unreadable one: count from here

    def add(self, progress: dict[str, Any]) -> int:
        """The count after this batch's progress (a batch already counted changes nothing)."""
        batch_id = int(progress.get("batchId", -1))
        if batch_id <= self.batch_id:
            return self.keys
        operators = _state_operators(progress)
        added = sum(int(op.get("numRowsUpdated", 0)) for op in operators)
        removed = sum(_rows_removed(op) for op in operators)
        self.batch_id, self.keys = batch_id, max(0, self.keys + added - removed)
        if self._path is not None:
            try:
                tmp = self._path.with_name(f".{self.FILE}.tmp")
                tmp.write_text(json.dumps({"batch_id": self.batch_id, "keys": self.keys}))
                os.replace(tmp, self._path)
            except OSError:
                log.warning("could not keep the state key count in %s", self._path)
        return self.keys


def _rows_removed(operator: dict[str, Any]) -> int:
    """The state rows an operator removed in the batch. Spark's `numRowsRemoved` counts every removal, TTL expiry
    included (a left join's timeouts remove their events explicitly, and only this count has them); the TTL
    metric alone stands in for a progress without it."""
    expired = int((operator.get("customMetrics") or {}).get("numValuesRemovedDueToTTLExpiry", 0))
    return max(int(operator.get("numRowsRemoved", 0)), expired)


def metrics_from_progress(
    pipeline: str, progress: dict[str, Any], sink: dict[str, int], *, state_keys: int | None = None
) -> BatchMetrics:
    """Combine Spark's progress JSON for a batch with what the sink counted for it. `state_keys`: the state's
    keys when Spark does not count them (StateKeyCount). With a join, the events in are both topics' (Spark's
    `numInputRows` sums the sources) and the rows written are the joined rows."""
    # Every source's topics: a join reads two Kafka sources (the topics of one are not the other's).
    end: dict[str, dict[str, int]] = {}
    latest: dict[str, dict[str, int]] = {}
    for source in progress.get("sources") or []:
        end.update(_offsets(source.get("endOffset")))
        latest.update(_offsets(source.get("latestOffset")))
    lag: dict[str, dict[str, int]] = {}
    for topic, parts in latest.items():
        for p, last in parts.items():
            lag.setdefault(topic, {})[p] = max(0, last - end.get(topic, {}).get(p, 0))
    state_ops = _state_operators(progress)
    duplicates = _duplicates(progress) + sum(
        int((op.get("customMetrics") or {}).get("numDroppedDuplicateRows", 0)) for op in state_ops
    )
    input_rows = int(progress.get("numInputRows", 0))
    written = int(sink.get("rows_written", 0))
    dead = int(sink.get("dead_letters", 0))
    late = sum(int(op.get("numRowsDroppedByWatermark", 0)) for op in state_ops)
    return BatchMetrics(
        pipeline=pipeline,
        batch_id=int(progress.get("batchId", -1)),
        timestamp=str(progress.get("timestamp", "")),
        input_rows=input_rows,
        duplicates_dropped=duplicates,
        rows_written=written,
        dead_letters=dead,
        filtered_out=_filtered_out(progress),
        batch_duration_ms=int(
            progress.get("batchDuration") or (progress.get("durationMs") or {}).get("triggerExecution", 0)
        ),
        lag=lag,
        total_lag=sum(v for parts in lag.values() for v in parts.values()),
        end_offsets={topic: {str(p): int(o) for p, o in parts.items()} for topic, parts in end.items()},
        state_rows=sum(int(op.get("numRowsTotal", 0)) for op in state_ops) or state_keys or 0,
        state_memory_bytes=sum(int(op.get("memoryUsedBytes", 0)) for op in state_ops),
        late_rows_dropped=late,
        input_rows_per_second=float(progress.get("inputRowsPerSecond") or 0.0),
        processed_rows_per_second=float(progress.get("processedRowsPerSecond") or 0.0),
        insert_ms_max=int(sink.get("insert_ms_max", 0)),
        phases_ms=batch_phases(progress),
        **_fields_seen(progress),
        query_id=str(progress.get("id") or ""),
    )


# The state store's share of a batch, as BatchMetrics.phases_ms names it: the operator's own timings and, for
# RocksDB, its commit's flush, local checkpoint and sync of its files to the checkpoint's storage (the upload, to S3
# when the checkpoint is there), the time writes were stalled and compactions ran.
_STATE_PHASES = {
    "commitTimeMs": "state_commit",
    "allUpdatesTimeMs": "state_updates",
    "allRemovalsTimeMs": "state_removals",
}
_ROCKSDB_PHASES = {
    "rocksdbCommitFlushLatency": "rocksdb_flush",
    "rocksdbCommitCheckpointLatency": "rocksdb_checkpoint",
    "rocksdbCommitFileSyncLatencyMs": "rocksdb_file_sync",
    "rocksdbWriterStallLatencyMs": "rocksdb_write_stall",
    "rocksdbTotalCompactionLatencyMs": "rocksdb_compaction",
}


def batch_phases(progress: dict[str, Any]) -> dict[str, int]:
    """Where a batch's time went (BatchMetrics.phases_ms), from its progress."""
    phases = {name: int(ms) for name, ms in (progress.get("durationMs") or {}).items() if name != "triggerExecution"}
    for operator in progress.get("stateOperators") or []:
        custom = operator.get("customMetrics") or {}
        for found, names in ((operator, _STATE_PHASES), (custom, _ROCKSDB_PHASES)):
            for source, name in names.items():
                if source in found:
                    phases[name] = phases.get(name, 0) + int(found[source] or 0)
    return phases


def _fields_seen(progress: dict[str, Any]) -> dict[str, Any]:
    """The batch's FIELDS_OBSERVATION as BatchMetrics fields (nothing when the query does not observe them)."""
    observed = (progress.get("observedMetrics") or {}).get(FIELDS_OBSERVATION) or {}
    prefix = "schema_id_"  # spark_jobs.field_watch.SCHEMA_ID_COUNT
    return {
        "events_by_schema_id": {
            name.removeprefix(prefix): int(count or 0) for name, count in observed.items() if name.startswith(prefix)
        },
        "unmapped_keys": [str(key) for key in observed.get("unmapped_keys") or []],
        "sampled_events": int(observed.get("sampled") or 0),
        "sampled_with_unmapped": int(observed.get("sampled_with_unmapped") or 0),
    }


def _duplicates(progress: dict[str, Any]) -> int:
    """The duplicates the dedup processors dropped (a join's two sides added up): rows into each minus rows out,
    both counted by the query."""
    observed = progress.get("observedMetrics") or {}
    dropped = 0
    for name_in, name_out in DEDUP_OBSERVATIONS:
        rows_in = (observed.get(name_in) or {}).get("rows")
        rows_out = (observed.get(name_out) or {}).get("rows")
        if rows_in is not None and rows_out is not None:
            dropped += max(0, int(rows_in) - int(rows_out))
    return dropped


def _filtered_out(progress: dict[str, Any]) -> int:
    """The events the filter dropped in the batch, as counted by the query itself (0 without a filter).

    Counted, not derived from the other counts: so input = written + duplicates + dead letters + filtered
    out + late is a check that shows an event lost anywhere else."""
    observed = (progress.get("observedMetrics") or {}).get(FILTER_OBSERVATION) or {}
    return int(observed.get("filtered_out") or 0)


class MetricsPublisher:
    """Publishes records to Redis (if configured) and logs each as one JSON line. Never raises."""

    def __init__(
        self,
        pipeline: str,
        redis_url: str | None,
        *,
        history_max_records: int = HISTORY_MAX_RECORDS,
        history_max_age_s: int = HISTORY_MAX_AGE_S,
    ) -> None:
        self.pipeline = pipeline
        self.redis_url = redis_url
        self.history_max_records = history_max_records
        self.history_max_age_s = history_max_age_s
        self._redis: Any = None
        self._warned_at = 0.0
        self._beat_at = 0.0

    def _client(self) -> Any:
        if self._redis is None:
            import redis

            self._redis = redis.Redis.from_url(self.redis_url, socket_timeout=5, socket_connect_timeout=5)
        return self._redis

    def heartbeat(self) -> None:
        """Say the query is alive (at most every HEARTBEAT_EVERY_SECONDS). Never raises."""
        now = time.time()
        if not self.redis_url or now - self._beat_at < HEARTBEAT_EVERY_SECONDS:
            return
        self._beat_at = now
        try:
            self._client().set(heartbeat_key(self.pipeline), f"{now:.3f}", ex=HEARTBEAT_TTL_SECONDS)
        except Exception as exc:
            self._redis = None
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        if time.monotonic() - self._warned_at > 60:
            self._warned_at = time.monotonic()
            log.warning("could not publish metrics to Redis: %s", exc)

    def publish(self, record: BatchMetrics) -> None:
        line = record.to_json()
        log.info("%s", line)
        if not self.redis_url:
            return
        counted_at = counted_key(self.pipeline)

        def write(pipe: Any) -> None:
            counted = _counted_batches(pipe.get(counted_at), record.query_id)
            pipe.multi()
            pipe.set(latest_key(self.pipeline), line)
            if record.batch_id in counted:  # a replay
                return
            pipe.lpush(recent_key(self.pipeline), line)
            pipe.ltrim(recent_key(self.pipeline), 0, RECENT_LIMIT - 1)
            self._add_to_history(pipe, record, line)
            batches = sorted({*counted, record.batch_id})[-COUNTED_KEEP:]
            counted_now = json.dumps({"query": record.query_id, "batches": batches})
            pipe.set(counted_at, counted_now, ex=self.history_max_age_s)

        try:
            # WATCHed: a concurrent writer (there is none in normal operation) makes this run again.
            self._client().transaction(write, counted_at)
        except Exception as exc:
            self._redis = None
            self._warn(exc)

    def _add_to_history(self, pipe: Any, record: BatchMetrics, line: str) -> None:
        """Queue the series and totals updates on `pipe` (one transaction with the latest record)."""
        at_ms = timestamp_ms(record.timestamp) or int(time.time() * 1000)
        history, totals = history_key(self.pipeline), totals_key(self.pipeline)
        pipe.zadd(history, {line: at_ms})
        # By age relative to this batch (not the wall clock): a replay of old data is not trimmed at once.
        pipe.zremrangebyscore(history, "-inf", f"({at_ms - self.history_max_age_s * 1000}")
        pipe.zremrangebyrank(history, 0, -(self.history_max_records + 1))
        for name in TOTAL_FIELDS:
            pipe.hincrby(totals, name, int(getattr(record, name)))
        pipe.hincrby(totals, "batches", 1)
        pipe.hsetnx(totals, "since", record.timestamp)
        pipe.expire(history, self.history_max_age_s)
        pipe.expire(totals, self.history_max_age_s)


def _counted_batches(raw: bytes | str | None, query_id: str) -> list[int]:
    """The batch ids of `query_id` the totals already hold ([] for another query: a new checkpoint)."""
    try:
        counted = json.loads(raw) if raw else {}
        return [int(b) for b in counted.get("batches", [])] if counted.get("query") == query_id else []
    except (ValueError, TypeError, AttributeError):
        return []


class SinkStats:
    """What foreachBatch counted per batch id, picked up by the progress relay (same driver process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_batch: dict[int, dict[str, int]] = {}

    def put(self, batch_id: int, stats: dict[str, int]) -> None:
        with self._lock:
            self._by_batch[batch_id] = stats
            for old in [b for b in self._by_batch if b < batch_id - 100]:
                del self._by_batch[old]

    def pop(self, batch_id: int) -> dict[str, int]:
        with self._lock:
            return self._by_batch.pop(batch_id, {})


class QueryHeartbeat:
    """Beats every `every` seconds while the query is active and Spark's JVM answers, batch running or not.

    Progress events come only at a batch's end; a batch longer than the worker's heartbeat timeout (the state
    reloaded after a restart, a catch-up) would otherwise be killed as stalled. A JVM that stops answering
    (`query.isActive` blocks or fails) stops the beats, so the worker still finds a job that is really stuck.
    """

    def __init__(
        self,
        query: Any,
        publisher: MetricsPublisher,
        every: float = HEARTBEAT_EVERY_SECONDS,
        on_beat: Callable[[], object] | None = None,
    ) -> None:
        self._query = query
        self._publisher = publisher
        self._every = every
        self._on_beat = on_beat  # upkeep that lasts as long as the query (spark_jobs.cpu_priority)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{publisher.pipeline}", daemon=True)

    def start(self) -> QueryHeartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                if not self._query.isActive:
                    return
            except Exception:  # the JVM is gone (the job is ending)
                return
            self._publisher.heartbeat()
            if self._on_beat is not None:
                self._on_beat()


PROGRESS_QUEUE_CAPACITY = 1000  # progress kept in the JVM while the relay does not take it (oldest dropped)
PROGRESS_WAIT_MS = 500  # how long one call waits in the JVM for a progress before the relay checks it should stop


class ProgressRelay:
    """Publishes one record per finished batch of the query named `query_name`; `key_count` counts the state's
    keys (a pipeline with dedup or a join).

    The progress comes as JSON from a JVM listener (io.clearflow.spark.ProgressQueue, spark_jobs/jvm), taken by a
    thread of this driver in one py4j call for all the batches waiting: PySpark's own Python listeners build
    each event through about a hundred py4j calls, a quarter of a light job's CPU (docs/performance.md)."""

    def __init__(
        self,
        spark: Any,
        query_name: str,
        stats: SinkStats,
        publisher: MetricsPublisher,
        key_count: StateKeyCount | None = None,
        trigger_check: TriggerCheck | None = None,
    ) -> None:
        self._trigger_check = trigger_check
        self._streams = spark._jsparkSession.streams()
        self._queue = spark._jvm.io.clearflow.spark.ProgressQueue(query_name, PROGRESS_QUEUE_CAPACITY)
        self._stats, self._publisher, self._key_count = stats, publisher, key_count
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress-{publisher.pipeline}", daemon=True)
        # The newest batch whose progress reached the relay (progress comes after the batch):
        # `spark_jobs.query.stop_query` waits for the query's last one before stopping the relay.
        self.last_batch_id = -1

    def start(self) -> ProgressRelay:
        self._streams.addListener(self._queue)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):  # the JVM is gone: there is no listener to remove
            self._streams.removeListener(self._queue)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                waiting = json.loads(self._queue.take(PROGRESS_WAIT_MS))
            except Exception as exc:  # the JVM is gone: the job is ending, or it died
                if not self._stop.is_set():
                    log.warning(
                        "pipeline %s: no more metrics records, the JVM did not answer: %s",
                        self._publisher.pipeline,
                        exc,
                    )
                return
            for progress in waiting:
                self.handle(progress)

    def handle(self, progress: dict[str, Any]) -> None:
        """One batch's progress (StreamingQueryProgress's JSON): its metrics record, unless nothing came."""
        try:
            self._publisher.heartbeat()
            batch_id = int(progress.get("batchId", -1))
            self.last_batch_id = max(self.last_batch_id, batch_id)
            sink = self._stats.pop(batch_id)
            state_keys = self._key_count.add(progress) if self._key_count is not None else None
            if not sink and int(progress.get("numInputRows", 0)) == 0:
                return  # an idle trigger or a no-data (state cleanup) batch
            record = metrics_from_progress(self._publisher.pipeline, progress, sink, state_keys=state_keys)
            self._publisher.publish(record)
            warning = self._trigger_check.add(record.phases_ms) if self._trigger_check is not None else None
            if warning:
                log.warning("pipeline %s: %s", self._publisher.pipeline, warning)
        except Exception:
            log.exception("could not build the metrics record")
