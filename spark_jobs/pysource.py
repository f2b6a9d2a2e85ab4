"""Kafka as a PySpark Python streaming data source, on confluent-kafka (librdkafka).

- Offsets (kept by Spark in the checkpoint) are `{topic: {partition: next_offset}}`.
- Every partition of every topic is read; partitions that appear later start at their earliest offset.
- Admission control: at most `max_records_per_batch` records per micro-batch, shared fairly between
  partitions; `Trigger.AvailableNow` stops at the offsets seen when the query started.
- Tasks read `[start, end)` of one partition (long ranges are split), open their consumer lazily in the
  Python worker (cached there, workers are reused), and yield Arrow record batches.
- Some brokers (Tansu) answer ListOffsets "latest" with the base offset of the last record batch + 1. The
  driver therefore probes each partition whose answer changed: it fetches from that offset until the
  end-of-partition event, whose offset is the true end. Against Apache Kafka this reads one record.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

log = logging.getLogger(__name__)

SOURCE_NAME = "clearflow_kafka"
SCHEMA = StructType(
    [
        StructField("_cf_value", BinaryType(), True),
        StructField("_kafka_topic", StringType(), False),
        StructField("_kafka_partition", IntegerType(), False),
        StructField("_kafka_offset", LongType(), False),
        StructField("_kafka_timestamp", TimestampType(), True),
    ]
)
ARROW_BATCH_ROWS = 32_768
CONSUME_BATCH = 10_000
DEFAULT_SPLIT_ROWS = 250_000
# The first micro-batch of a process runs interpreted code and starts Python workers: keep it small so the
# JIT-compiled code handles the big ones (measured: first 500k batch 27 s, the next ones 8-9 s).
WARMUP_BATCH_ROWS = 20_000


_SPARK_FAST_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "int": LongType(),
    "float": DoubleType(),
    "bool": BooleanType(),
    "datetime": TimestampType(),
    "uuid": StringType(),
}


def source_schema(fields: Sequence[tuple[str, str]]) -> StructType:
    """The rows the source emits: the record, plus typed fields parsed on the fast path (if possible)."""
    from spark_jobs import fastparse

    if not fastparse.supported(fields):
        return SCHEMA
    extra = [StructField("_cf_fast", BooleanType(), False)] + [
        StructField(fastparse.fast_column(i), _SPARK_FAST_TYPES[t], True) for i, (_, t) in enumerate(fields)
    ]
    return StructType([*SCHEMA.fields, *extra])


def _arrow_schema(fields: Sequence[tuple[str, str]] = ()) -> Any:
    import pyarrow as pa

    from spark_jobs import fastparse

    base = [
        pa.field("_cf_value", pa.binary(), True),
        pa.field("_kafka_topic", pa.string(), False),
        pa.field("_kafka_partition", pa.int32(), False),
        pa.field("_kafka_offset", pa.int64(), False),
        pa.field("_kafka_timestamp", pa.timestamp("us", tz="UTC"), True),
    ]
    if fastparse.supported(fields):
        base.append(pa.field("_cf_fast", pa.bool_(), False))
        base += [
            pa.field(fastparse.fast_column(i), t, True) for i, t in enumerate(fastparse.output_arrow_types(fields))
        ]
    return pa.schema(base)


@dataclass(frozen=True)
class KafkaSlice(InputPartition):
    """What one task reads: `[start, end)` of one partition, and how to connect (secrets included)."""

    topic: str
    partition: int
    start: int
    end: int
    config_json: str
    read_timeout_s: float
    fields: tuple[tuple[str, str], ...] = ()


def consumer_config(kafka_config: dict[str, str], group_id: str) -> dict[str, Any]:
    """librdkafka consumer settings for reading assigned ranges; offsets are kept by Spark, not Kafka."""
    return {
        **kafka_config,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "fetch.max.bytes": 64 * 1024 * 1024,
        "max.partition.fetch.bytes": 16 * 1024 * 1024,
        "queued.min.messages": 200_000,
        "log_level": 3,
    }


# One consumer per config in each Python worker (workers are reused between tasks and batches).
_CONSUMERS: dict[str, Any] = {}


def _cached_consumer(config_json: str) -> Any:
    consumer = _CONSUMERS.get(config_json)
    if consumer is None:
        from confluent_kafka import Consumer

        consumer = Consumer(json.loads(config_json))
        _CONSUMERS[config_json] = consumer
    return consumer


def read_slice(part: KafkaSlice) -> Iterator[Any]:
    """Yield Arrow record batches holding offsets [start, end) of one partition."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    if part.end <= part.start:
        return
    from spark_jobs import fastparse

    schema = _arrow_schema(part.fields)
    fast = fastparse.supported(part.fields)
    consumer = _cached_consumer(part.config_json)
    consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
    values: list[bytes | None] = []
    offsets: list[int] = []
    stamps: list[int] = []
    last = part.end - 1
    done = False
    last_progress = time.monotonic()
    topic_col = None

    def flush() -> Any:
        nonlocal topic_col
        n = len(offsets)
        if topic_col is None or len(topic_col) != n:
            topic_col = pa.array([part.topic] * n, pa.string())
        ts = pc.multiply(pa.array(stamps, pa.int64()), 1000).cast(pa.timestamp("us", tz="UTC"))
        columns = [
            pa.array(values, pa.binary()),
            topic_col,
            pa.array([part.partition] * n, pa.int32()),
            pa.array(offsets, pa.int64()),
            ts,
        ]
        if fast:
            flag, typed = fastparse.fast_arrays(values, part.fields)
            columns += [flag, *typed]
        batch = pa.RecordBatch.from_arrays(columns, schema=schema)
        values.clear()
        offsets.clear()
        stamps.clear()
        return batch

    try:
        while not done:
            messages = consumer.consume(CONSUME_BATCH, 1.0)
            if not messages:
                if time.monotonic() - last_progress > part.read_timeout_s:
                    raise TimeoutError(
                        f"no records from {part.topic}[{part.partition}] for {part.read_timeout_s:.0f}s "
                        f"while reading offsets {part.start}..{part.end - 1} (position {part.start + len(offsets)})"
                    )
                continue
            last_progress = time.monotonic()
            # Fast path: a run of plain records, all inside the range (the usual case).
            tail = messages[-1]
            if (
                tail.error() is None
                and messages[0].offset() >= part.start
                and tail.offset() <= last
                and not any(m.error() is not None for m in messages)
            ):
                values.extend([m.value() for m in messages])
                offsets.extend([m.offset() for m in messages])
                stamps.extend([m.timestamp()[1] for m in messages])
                done = tail.offset() == last
            else:
                for message in messages:
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            if message.offset() >= part.end:
                                done = True
                                break
                            continue
                        raise KafkaException(error)
                    offset = message.offset()
                    if offset < part.start:
                        continue
                    if offset > last:
                        done = True
                        break
                    values.append(message.value())
                    offsets.append(offset)
                    stamps.append(message.timestamp()[1])
                    if offset == last:
                        done = True
                        break
            if len(offsets) >= ARROW_BATCH_ROWS:
                yield flush()
        if offsets:
            yield flush()
    finally:
        # Leave the cached consumer idle: drop the assignment so it does not keep prefetching.
        try:
            consumer.unassign()
        except Exception:
            _CONSUMERS.pop(part.config_json, None)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side: offsets, admission control, planning. `read()` runs in executors."""

    def __init__(self, options: dict[str, str]) -> None:
        self.topics = [t for t in options["topics"].split(",") if t]
        self.starting_offsets = options.get("starting_offsets", "earliest")
        self.max_rows = int(options.get("max_records_per_batch", "500000"))
        self.split_rows = int(options.get("split_rows", str(DEFAULT_SPLIT_ROWS)))
        self.read_timeout_s = float(options.get("read_timeout_s", "120"))
        self.fields = tuple(tuple(f) for f in json.loads(options.get("fields", "[]")))
        self.config_json = json.dumps(
            consumer_config(json.loads(options["kafka_config_secret"]), options.get("group_id", "clearflow")),
            sort_keys=True,
        )
        self._admin_consumer: Any = None
        self._probed: dict[tuple[str, int], tuple[int, int]] = {}  # (topic, p) -> (listed end, true end)
        self._latest: dict[str, dict[str, int]] | None = None
        self._target: dict[str, dict[str, int]] | None = None
        self._warmed_up = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_admin_consumer"] = None
        return state

    # -- Kafka metadata, on the driver --

    def _consumer(self) -> Any:
        if self._admin_consumer is None:
            from confluent_kafka import Consumer

            config = json.loads(self.config_json)
            config["group.id"] = config["group.id"] + "-offsets"
            self._admin_consumer = Consumer(config)
        return self._admin_consumer

    def _partitions(self, *, require: bool) -> list[tuple[str, int]]:
        metadata = self._consumer().list_topics(timeout=30)
        found: list[tuple[str, int]] = []
        for topic in self.topics:
            info = metadata.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                if require:
                    raise RuntimeError(f"Kafka topic {topic!r} does not exist (or has no partitions)")
                continue
            found.extend((topic, p) for p in sorted(info.partitions))
        return found

    def _watermarks(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition

        consumer = self._consumer()
        return {(topic, p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for topic, p in tps}

    def _true_ends(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The real end offset of each partition (see the module docstring on the probe)."""
        from confluent_kafka import KafkaError, TopicPartition

        marks = self._watermarks(tps)
        ends: dict[tuple[str, int], int] = {}
        to_probe: dict[tuple[str, int], int] = {}
        for tp, (low, high) in marks.items():
            cached = self._probed.get(tp)
            if high <= low:
                ends[tp] = high
            elif cached is not None and cached[0] == high:
                ends[tp] = cached[1]
            else:
                to_probe[tp] = high
        if to_probe:
            consumer = self._consumer()
            consumer.assign([TopicPartition(t, p, high - 1) for (t, p), high in to_probe.items()])
            pending = dict(to_probe)
            seen: dict[tuple[str, int], int] = {}
            deadline = time.monotonic() + 10
            while pending and time.monotonic() < deadline:
                for message in consumer.consume(CONSUME_BATCH, 0.5):
                    tp = (message.topic(), message.partition())
                    error = message.error()
                    if error is None:
                        seen[tp] = max(seen.get(tp, -1), message.offset() + 1)
                    elif error.code() == KafkaError._PARTITION_EOF and tp in pending:
                        ends[tp] = max(message.offset(), pending[tp], seen.get(tp, 0))
                        self._probed[tp] = (pending.pop(tp), ends[tp])
            consumer.unassign()
            for tp, high in pending.items():  # no end-of-partition event in time: trust what was seen
                ends[tp] = max(high, seen.get(tp, 0))
        return ends

    def _end_offsets(self) -> dict[str, dict[str, int]]:
        ends = self._true_ends(self._partitions(require=False))
        result: dict[str, dict[str, int]] = {}
        for (topic, p), end in ends.items():
            result.setdefault(topic, {})[str(p)] = end
        return result

    # -- the DataSourceStreamReader contract --

    def initialOffset(self) -> dict:
        tps = self._partitions(require=True)
        if self.starting_offsets == "latest":
            return self._end_offsets()
        offsets: dict[str, dict[str, int]] = {}
        for (topic, p), (low, _high) in self._watermarks(tps).items():
            offsets.setdefault(topic, {})[str(p)] = low
        return offsets

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._end_offsets()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        latest = self._end_offsets()
        self._latest = latest
        if self._target is not None:
            latest = {
                topic: {p: min(end, self._target.get(topic, {}).get(p, 0)) for p, end in parts.items()}
                for topic, parts in latest.items()
            }
        budget = None if isinstance(limit, ReadAllAvailable) else getattr(limit, "max_rows", None)
        if budget is not None and not self._warmed_up:
            budget = min(budget, WARMUP_BATCH_ROWS)
        end = plan_end_offsets(start, latest, budget)
        if end != start:
            self._warmed_up = True
        return end

    def reportLatestOffset(self) -> dict | None:
        return self._latest

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        slices: list[InputPartition] = []
        for topic in sorted(end):
            for p in sorted(end[topic], key=int):
                first = int(start.get(topic, {}).get(p, 0))
                last = int(end[topic][p])
                for lo in range(first, last, self.split_rows):
                    hi = min(last, lo + self.split_rows)
                    slices.append(KafkaSlice(topic, int(p), lo, hi, self.config_json, self.read_timeout_s, self.fields))
        return slices

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaSlice)
        return read_slice(partition)

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing to commit to Kafka."""

    def stop(self) -> None:
        if self._admin_consumer is not None:
            self._admin_consumer.close()
            self._admin_consumer = None


def plan_end_offsets(
    start: dict[str, dict[str, int]], latest: dict[str, dict[str, int]], budget: int | None
) -> dict[str, dict[str, int]]:
    """End offsets for the next batch: everything available, or at most `budget` records shared fairly."""
    begin = {(topic, p): int(start.get(topic, {}).get(p, 0)) for topic, parts in latest.items() for p in parts}
    # A partition that went backwards (topic recreated) is not read backwards: keep its start.
    available = {tp: max(0, int(latest[tp[0]][tp[1]]) - begin[tp]) for tp in begin}
    take = dict(available)
    if budget is not None and sum(available.values()) > budget:
        take = {tp: 0 for tp in available}
        remaining = budget
        open_tps = sorted(tp for tp, n in available.items() if n > 0)
        while remaining > 0 and open_tps:
            share = max(1, remaining // len(open_tps))
            next_open = []
            for tp in open_tps:
                if remaining <= 0:
                    break
                grant = min(share, available[tp] - take[tp], remaining)
                take[tp] += grant
                remaining -= grant
                if take[tp] < available[tp]:
                    next_open.append(tp)
            open_tps = next_open
    result: dict[str, dict[str, int]] = {}
    for topic, p in sorted(begin):
        result.setdefault(topic, {})[p] = begin[(topic, p)] + take[(topic, p)]
    # Keep partitions the start knows but the broker no longer lists (they are simply not read).
    for topic, parts in start.items():
        for p, offset in parts.items():
            result.setdefault(topic, {}).setdefault(p, int(offset))
    return result


class KafkaDataSource(DataSource):
    """`spark.readStream.format("clearflow_kafka")` with options: topics (comma-separated),
    kafka_config_secret (librdkafka settings as JSON; "secret" in the name makes Spark redact it),
    starting_offsets, max_records_per_batch, group_id, split_rows, read_timeout_s, and fields (JSON list of
    [path, type]: enables the Arrow fast-path parse, see spark_jobs/fastparse.py)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return source_schema([tuple(f) for f in json.loads(self.options.get("fields", "[]"))])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(dict(self.options))


def read_python_source(spark: Any, spec: Any) -> Any:
    """The first engine's read (kept only for the before/after benchmark)."""
    spark.dataSource.register(KafkaDataSource)
    source = spec.source
    return (
        spark.readStream.format(SOURCE_NAME)
        .option("topics", ",".join(source.topics))
        .option("starting_offsets", source.starting_offsets)
        .option("max_records_per_batch", str(source.max_records_per_batch))
        .option("group_id", f"clearflow-{spec.name}")
        .option("kafka_config_secret", json.dumps(source.kafka.librdkafka_config()))
        .option("fields", json.dumps([[f.path, f.type] for f in source.fields]))
        .load()
    )
