"""Compose the pipeline in one visible place, and start it as a Structured Streaming query.

Kafka -> parse_events (JSON) | parse_avro | parse_protobuf -> observe fields (field_watch) -> require_keys
      -> check_columns -> dedup_time -> dedup_key -> drop_unless_dead -> drop_duplicates (JVM, RocksDB state)
      -> explode_array -> apply_filter -> apply_transforms -> map_columns -> foreachBatch(ClickHouse, metrics)

With a `join`, each topic (left: `source`, right: `join.source`) is parsed, checked and deduplicated on its own
(`_side_stream`), then joined (`spark_jobs.join`: prepare_side, join_sides, unpack), and the joined rows go on
to apply_filter as above.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from clearflow_spec import sizing
from clearflow_spec.avro_schema import WriterSchemas
from clearflow_spec.connections import connection_dict
from clearflow_spec.protocol import local_checkpoint_path
from clearflow_spec.spec import (
    JOIN_SIDES,
    KAFKA_HEADERS,
    KAFKA_METADATA_FIELDS,
    PipelineSpec,
    SourceSpec,
    SpecError,
    SpecIssue,
)
from spark_jobs import avro_decode, cds, dedup, field_watch, join, protobuf_decode, transforms, written_keys
from spark_jobs import sink as ch
from spark_jobs.cpu_priority import local_jvm_pid, lower_compaction_priority
from spark_jobs.jars import job_jars
from spark_jobs.metrics import (
    DEDUP_IN_OBSERVATION,
    DEDUP_OUT_OBSERVATION,
    RIGHT_DEDUP_OBSERVATIONS,
    MetricsPublisher,
    ProgressRelay,
    QueryHeartbeat,
    SinkStats,
    StateKeyCount,
)
from spark_jobs.source import REDACTION_REGEX, read_kafka

log = logging.getLogger(__name__)

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
RUN_ID_FILE = "clearflow-run-id"
# RocksDB's memory (block cache and write buffers of every state partition together), so the job's RSS levels
# off whatever the window holds. The worker sizes it (webapp.pipelines.state_size.job_resources gives the job
# `--conf <ROCKSDB_MEMORY_CONF>=N`); start_query sizes the rest from the value in effect. Without one (a test, a
# bench): the unsized bound (clearflow_spec.sizing.UNSIZED_ROCKSDB_MB).
DEFAULT_STATE_MEMORY_MB = sizing.UNSIZED_ROCKSDB_MB
_ROCKSDB = "spark.sql.streaming.stateStore.rocksdb"
ROCKSDB_MEMORY_CONF = sizing.ROCKSDB_MEMORY_CONF


def state_store_conf(*, memory_mb: int = DEFAULT_STATE_MEMORY_MB) -> dict[str, str]:
    """The state store's settings: RocksDB (the dedup processor needs it) with bounded memory."""
    memory_mb = max(64, int(memory_mb))
    return {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        # A changelog per batch instead of uploading a snapshot of the whole state each time.
        f"{_ROCKSDB}.changelogCheckpointing.enabled": "true",
        # One memory budget (an LRU cache charged with the write buffers too) shared by all state partitions.
        f"{_ROCKSDB}.boundedMemoryUsage": "true",
        ROCKSDB_MEMORY_CONF: str(memory_mb),
        f"{_ROCKSDB}.writeBufferCacheRatio": str(sizing.ROCKSDB_WRITE_BUFFER_SHARE),
        # Index and filter blocks (what every lookup reads) go to this part of the cache first, where the data
        # blocks a lookup of an old key or the expiry's scan reads do not push them out (Spark's default, 0.1,
        # left a full 1h window's filters to be read again and again).
        f"{_ROCKSDB}.highPriorityPoolRatio": str(sizing.ROCKSDB_METADATA_SHARE),
        f"{_ROCKSDB}.writeBufferSizeMB": str(max(4, memory_mb // 16)),
        f"{_ROCKSDB}.maxWriteBufferNumber": "3",
        f"{_ROCKSDB}.blockCacheSizeInMB": str(max(8, memory_mb // 2)),
        # Counting rows costs two more point reads per new key (an existence check on put, one on TTL expiry).
        f"{_ROCKSDB}.trackTotalNumberOfRows": "false",
    }


class CheckpointMismatch(RuntimeError):
    """The checkpoint holds state this engine cannot continue from; the message says what to do."""


OLD_DEDUP_OPERATORS = ("dedupeWithinWatermark", "dedupe")  # dropDuplicates(WithinWatermark), before the JVM dedup
# The join's state variables (io.clearflow.spark.JoinProcessor) and the type earlier versions kept them in.
JOIN_STATE_VARIABLES = ("left_events", "right_events")
OLD_JOIN_STATE_TYPE = "MapState"
_OPERATOR_NAME_RE = re.compile(r'"operatorName"\s*:\s*"([^"]+)"')


def _state_variables(text: str) -> set[tuple[str, str]]:
    """(name, type) of the state variables an operator's metadata file (state/<id>/_metadata/v2/<batch>: a
    version line, then JSON whose `operatorPropertiesJson` is JSON again) lists; empty for other files."""
    found: set[tuple[str, str]] = set()
    for line in text.splitlines():
        try:
            properties = json.loads(json.loads(line).get("operatorPropertiesJson") or "{}")
            variables = properties.get("stateVariables") or []
        except (ValueError, AttributeError):
            continue
        for variable in variables:
            if isinstance(variable, dict):
                found.add((str(variable.get("stateName")), str(variable.get("stateVariableType"))))
    return found


def check_checkpoint_state(checkpoint: str) -> None:
    """CheckpointMismatch when a local checkpoint holds state this engine cannot continue from, where Spark would
    fail with a long stack (or, for the join, start without the events it held): the dedup state of the
    watermark-based operator of earlier versions, or a join's events in the MapStates of earlier versions. The
    message says to reset the checkpoint."""
    local = local_checkpoint_path(checkpoint)
    if local is None:
        return  # a remote checkpoint: Spark's own error stands
    state = local / "state"
    names: set[str] = set()
    variables: set[tuple[str, str]] = set()
    for path in state.glob("*/_metadata/**/*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            text = path.read_text(errors="replace")
            names.update(_OPERATOR_NAME_RE.findall(text))
            variables.update(_state_variables(text))
    old = sorted(names & set(OLD_DEDUP_OPERATORS))
    if old:
        raise CheckpointMismatch(
            f"the checkpoint {checkpoint} holds dedup state of an earlier ClearFlow engine ({', '.join(old)}), "
            "which this version cannot read: reset the pipeline's checkpoint (the job then starts from the "
            "topic's committed offsets with an empty dedup window)"
        )
    if any((name, OLD_JOIN_STATE_TYPE) in variables for name in JOIN_STATE_VARIABLES):
        raise CheckpointMismatch(
            f"the checkpoint {checkpoint} holds join state of an earlier ClearFlow engine (each side's events in "
            "a MapState), which this version cannot read: reset the pipeline's checkpoint (the job then starts "
            "from the topics' committed offsets with empty dedup and join windows; events the join was holding "
            "for the other side are not joined)"
        )


ARROW_BATCH_ROWS = 10_000


def session_conf(*, shuffle_partitions: int = 2) -> dict[str, str]:
    """Spark settings the job needs (the thread stack for deep expression trees, UTC, lenient user expressions,
    the RocksDB state store)."""
    return {
        # The class-data archive (spark_jobs.cds), when made: the JVM maps Spark's classes instead of loading them.
        "spark.driver.extraJavaOptions": " ".join(filter(None, ["-Xss32m", cds.java_options()])),
        "spark.sql.session.timeZone": "UTC",
        # Runtime errors in user expressions give NULL instead of failing the whole job on one event.
        "spark.sql.ansi.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # The sink's Arrow batches to the Python writer are bounded by rows only. With a byte bound (Spark's
        # default, 256 MB) the Arrow writer adds up every column's buffer sizes after each row: 3% of the task
        # threads' profile samples at 20,000 events/s (docs/performance.md, "Who holds the cores"). 10,000 rows keep
        # a batch's buffers small for ordinary events; the Python writer holds a partition's whole micro-batch
        # anyway (spark_jobs.sink.PartitionWriter), so the byte bound never limited its memory.
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),  # Int.MaxValue: Spark skips the check
        # No batch without data: the dedup processor runs in processing time, for which Spark would run an empty
        # batch (a state store load and commit) at every trigger, and an availableNow run would never end.
        # Expired keys are removed by the next batch with data (a read already treats them as gone).
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        "spark.python.worker.reuse": "true",
        # No web UI unless asked (CLEARFLOW_SPARK_UI=1): its Jetty server and listeners cost start time and
        # memory in every job, and nobody opens a per-job UI behind the product's own pages.
        "spark.ui.enabled": "false",
        # Keeps the Kafka connector's secret options (SASL JAAS config, client key) out of the UI and event log.
        "spark.redaction.regex": REDACTION_REGEX,
        # The dedup state; its memory bound is left to the job's own --conf (start_query sizes from it).
        **{key: value for key, value in state_store_conf().items() if key != ROCKSDB_MEMORY_CONF},
    }


# The FileContext API's local file system (`file:`, where a checkpoint on one machine lives) from the engine's
# jar (io.clearflow.spark.InProcessLocalFileSystem): Hadoop's own, without pyspark's missing native library,
# started a `readlink` process for each checkpoint file it renamed and a `chmod` for each it created, on the
# micro-batch's path (the offset and commit logs, each task's changelog; docs/performance.md). A session setting,
# so each query's checkpoint file manager and state stores get it (at launch, spark-submit would look the class
# up before the jar is on its classpath).
# The FileSystem API's (`fs.file.impl`) hard-links the SST files the state store's maintenance thread uploads into
# the checkpoint instead of copying them (InProcessLocalFileSystem.Linking). Hadoop caches one FileSystem per
# scheme, made at launch with its own class, so the session's `file:` file systems are made anew (disable.cache).
IN_PROCESS_LOCAL_FILES = {
    "fs.AbstractFileSystem.file.impl": "io.clearflow.spark.InProcessLocalFileSystem$Fs",
    "fs.file.impl": "io.clearflow.spark.InProcessLocalFileSystem$Linking",
    "fs.file.impl.disable.cache": "true",
}


def use_in_process_local_files(spark: SparkSession) -> bool:
    """Give the session's queries IN_PROCESS_LOCAL_FILES when the engine's jar (as built now) has the class;
    whether so (an engine jar built before it: Hadoop's own, rather than a query that cannot find the class)."""
    from py4j.java_gateway import JavaClass

    package = spark._jvm.io.clearflow.spark  # type: ignore[union-attr]
    if not all(
        isinstance(getattr(package, f"InProcessLocalFileSystem${name}"), JavaClass) for name in ("Fs", "Linking")
    ):
        return False
    for key, value in IN_PROCESS_LOCAL_FILES.items():
        spark.conf.set(key, value)
    return True


def build_session(
    *,
    app_name: str,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    jars: list[str] | None = None,
    java_options: str = "",
) -> SparkSession:
    """A SparkSession whose Python workers run this interpreter, with Spark's Kafka connector on its classpath.

    `jars` defaults to `spark_jobs.jars.job_jars()` (local files: nothing is downloaded). Pass `[]` under
    `spark-submit`, whose `--jars` already carries them. `java_options`: JVM options for the driver after the
    session's own (a light job's, clearflow_spec.sizing.driver_java_options); a `spark.driver.extraJavaOptions` in
    `conf` replaces both.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    jar_list = job_jars() if jars is None else jars
    # Local mode: Python workers fork from a daemon with the sink's modules imported (spark_jobs.python_daemon).
    # Not on a cluster, whose executors' Python may lack them (the daemon would fail every task).
    daemon = {"spark.python.daemon.module": "spark_jobs.python_daemon"} if (master or "").startswith("local") else {}
    own = session_conf()
    if java_options:
        own["spark.driver.extraJavaOptions"] = f"{own['spark.driver.extraJavaOptions']} {java_options}"
    settings = {
        **own,
        **daemon,
        **({"spark.jars": ",".join(jar_list)} if jar_list else {}),
        **(conf or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _fields(spec: PipelineSpec, source: SourceSpec | None = None) -> list[transforms.Field]:
    return [transforms.Field(f.path, f.type) for f in (source or spec.source).fields]


def _sink_columns(spec: PipelineSpec, *, only_fields: bool = False) -> list[transforms.SinkColumn]:
    computed = {t.name for t in spec.transforms}
    return [
        transforms.SinkColumn(c.field, c.column, c.type)
        for c in spec.sink.columns
        if not (only_fields and c.field in computed)
    ]


def _spark_checked(path: str, build: Any) -> DataFrame:
    """Run one step whose Spark analysis may reject a user expression; name the spec path if it does."""
    try:
        return build()
    except AnalysisException as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise SpecError([SpecIssue(path, f"Spark rejected the expression: {message}")]) from None


def _unused_after_dedup(spec: PipelineSpec) -> list[str]:
    """Record columns that only dead letters need after dedup (so usable events need not carry them)."""
    computed = {t.name for t in spec.transforms}
    field_types = spec.field_types()
    late_checks = [c for c in spec.sink.columns if c.field in computed]
    # Columns computed by transforms are checked after dedup: their dead letters need the whole record.
    if any(transforms.needs_check(field_types[c.field], c.type) for c in late_checks):
        return []
    used = {c.field for c in spec.sink.columns}
    expressions = " ".join([spec.filter or "", *[t.expression for t in spec.transforms]])
    # Variable-width metadata only (the topic): fixed-width columns cost their bytes even when NULL, and the
    # dedup orders a key's events by Kafka partition and offset (dedup.ORDER_COLUMNS).
    metadata = [
        name
        for name, kind in KAFKA_METADATA_FIELDS.items()
        if kind == "string" and name not in used and name not in expressions
    ]
    if KAFKA_HEADERS not in expressions and not any(field.startswith(f"{KAFKA_HEADERS}.") for field in used):
        metadata.append(KAFKA_HEADERS)
    return ["_cf_value", *metadata]


def source_schemas(
    spec: PipelineSpec, *, extra_ids: set[int] | None = None, source: SourceSpec | None = None
) -> WriterSchemas | None:
    """The Avro or Protobuf writer schemas a run decodes with (None for JSON): the pasted schema, or every version
    of the topics' subjects in the registry (plus `extra_ids`, ids seen in records since). Raises SpecError when
    `source.fields` names a field no version has, RegistryError when the registry cannot be asked.
    `source`: another source of the spec (the join's right side) instead of `spec.source`."""
    source = source or spec.source
    if source.format not in ("avro", "protobuf"):
        return None
    if source.schema_registry is None:
        return WriterSchemas({avro_decode.PLAIN_SCHEMA_ID: source.avro_schema or ""}, confluent=False)
    from clearflow_spec.schema_registry import (
        registered_topics,
        registry_field_issues,
        subject_versions,
        value_subject,
        writer_schemas,
    )

    topics = source.topics or registered_topics(source.schema_registry, source.reads_topic)
    versions = {value_subject(t): subject_versions(source.schema_registry, value_subject(t)) for t in topics}
    kind = source.registry_schema_type
    issues = registry_field_issues(source.fields, versions, kind=kind)
    if issues:
        raise SpecError(issues)
    return writer_schemas(source.schema_registry, topics, extra_ids=extra_ids or (), kind=kind)


def parse_source(
    raw: DataFrame, spec: PipelineSpec, schemas: WriterSchemas | None, source: SourceSpec | None = None
) -> DataFrame:
    """The format's parse step: typed field columns and `_cf_error`, whatever the records' encoding."""
    source = source or spec.source
    fields = _fields(spec, source)
    if source.format == "avro":
        if schemas is None:
            raise ValueError("an Avro source needs its writer schemas (source_schemas)")
        return avro_decode.parse_avro(raw, fields, schemas)
    if source.format == "protobuf":
        if schemas is None:
            raise ValueError("a Protobuf source needs its writer schemas (source_schemas)")
        return protobuf_decode.parse_protobuf(raw, fields, schemas)
    return transforms.parse_events(raw, fields)


def _side_columns(spec: PipelineSpec, side: str) -> list[transforms.SinkColumn]:
    """The sink columns mapping one side's fields, named as that side knows them (`left.n` -> `n`)."""
    prefix = f"{side}."
    return [
        transforms.SinkColumn(c.field.removeprefix(prefix), c.column, c.type)
        for c in spec.sink.columns
        if c.field.startswith(prefix)
    ]


def _side_stream(
    raw: DataFrame, spec: PipelineSpec, side: str, schemas: WriterSchemas | None
) -> tuple[DataFrame, join.Side]:
    """One side of a join, parsed, checked (its own columns) and deduplicated, in the join's shape. The field watch
    observes the left side only; each side's dedup is counted under names of its own (Spark allows one
    observation of a name per query)."""
    assert spec.join is not None
    left = side == JOIN_SIDES[0]
    source = spec.source if left else spec.join.source
    rules = spec.dedup if left else spec.join.dedup
    keys = tuple(k.left if left else k.right for k in spec.join.keys)
    time_field = None
    if spec.join.time == "event":
        time_field = spec.join.left_time_field if left else spec.join.right_time_field
    fields = _fields(spec, source)
    this = join.Side(side, tuple(fields), keys, time_field)
    df = parse_source(raw, spec, schemas, source)
    if left:
        if schemas is not None:
            df = field_watch.observe_schema_ids(df, [*schemas.by_id, *schemas.unreadable])
        else:
            df = field_watch.observe_json_keys(df, [f.path for f in source.fields])
    if rules is not None:
        df = dedup.require_keys(df, rules.keys)
    df = join.require_join_keys(df, this)
    field_types = {**{f.path: f.type for f in fields}, **KAFKA_METADATA_FIELDS}
    df = transforms.check_columns(df, _side_columns(spec, side), field_types)
    if rules is not None:
        dedup_field = rules.event_time_field if rules.time == "event" else None
        df = dedup.dedup_time(df, time_field=dedup_field)
        df = dedup.dedup_key(df, rules.keys)
        df = dedup.drop_unless_dead(df, ["_cf_value"])
        observe = (DEDUP_IN_OBSERVATION, DEDUP_OUT_OBSERVATION) if left else RIGHT_DEDUP_OBSERVATIONS
        df = dedup.drop_duplicates(df, window_seconds=rules.window_seconds, observe=observe)
    return join.prepare_side(df, this), this


def build_joined(
    left_raw: DataFrame,
    right_raw: DataFrame,
    spec: PipelineSpec,
    schemas: WriterSchemas | None = None,
    right_schemas: WriterSchemas | None = None,
) -> DataFrame:
    """A spec with a join, from both Kafka sources' rows to the rows the sink writes."""
    assert spec.join is not None
    left, left_side = _side_stream(left_raw, spec, JOIN_SIDES[0], schemas)
    right, right_side = _side_stream(right_raw, spec, JOIN_SIDES[1], right_schemas)
    joined = join.join_sides(left, right, window_seconds=spec.join.window_seconds, left_join=spec.join.type == "left")
    return _after_dedup(join.unpack(joined, [left_side, right_side]), spec)


def stream_steps(
    spec: PipelineSpec, schemas: WriterSchemas | None = None, written: DataFrame | None = None
) -> list[tuple[str, Any]]:
    """The transformation as named `DataFrame -> DataFrame` steps, in order (build_stream applies them all;
    bench/stage_profile.py times prefixes of the same list, so the profile measures the pipeline itself):
    parse, checks (field watch, keys, column checks, dedup time and key, dead-letter split), dedup, output.
    `written`: the keys the table received within the window (`written_keys`), which the dedup drops too."""
    field_types = spec.field_types()
    if schemas is None and spec.source.format == "avro" and spec.source.schema_registry is None:
        schemas = source_schemas(spec)

    def parse(df: DataFrame) -> DataFrame:
        df = parse_source(df, spec, schemas)
        # Every event, duplicates too, before anything drops one: "seen in N events" counts what came in.
        if schemas is not None:
            return field_watch.observe_schema_ids(df, [*schemas.by_id, *schemas.unreadable])
        return field_watch.observe_json_keys(df, [f.path for f in spec.source.fields])

    def checks(df: DataFrame) -> DataFrame:
        if spec.dedup is not None:
            df = dedup.require_keys(df, spec.dedup.keys)
        df = transforms.check_columns(df, _sink_columns(spec, only_fields=True), field_types, explode=spec.explode)
        if spec.dedup is not None:
            rules = spec.dedup
            time_field = rules.event_time_field if rules.time == "event" else None
            df = dedup.dedup_time(df, time_field=time_field)
            df = dedup.dedup_key(df, rules.keys)
            df = dedup.drop_unless_dead(df, _unused_after_dedup(spec))
        return df

    def drop_duplicates(df: DataFrame) -> DataFrame:
        if spec.dedup is None:
            return df
        df = dedup.drop_duplicates(df, window_seconds=spec.dedup.window_seconds)
        return df if written is None else written_keys.drop_written(df, written, spec, spec.dedup.keys)

    def output(df: DataFrame) -> DataFrame:
        return _after_dedup(df, spec)

    return [("parse", parse), ("checks", checks), ("dedup", drop_duplicates), ("output", output)]


def build_stream(
    raw: DataFrame, spec: PipelineSpec, schemas: WriterSchemas | None = None, written: DataFrame | None = None
) -> DataFrame:
    """The whole transformation, from the Kafka source's rows to the rows the sink writes (without a join;
    `build_joined` with one). `written`: as for `stream_steps`."""
    if spec.join is not None:
        raise ValueError("a spec with a join reads two sources: use build_joined")
    df = raw
    for _name, step in stream_steps(spec, schemas, written):
        df = step(df)
    return df


def _after_dedup(df: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Filter, transforms and the sink's columns: the same steps with or without a join."""
    field_types = spec.field_types()
    df = transforms.explode_array(df, spec.explode)
    df = _spark_checked("filter", lambda: transforms.apply_filter(df, spec.filter))
    for i, computed in enumerate(spec.transforms):
        step = [transforms.Transform(computed.name, computed.expression, computed.type)]
        df = _spark_checked(f"transforms[{i}].expression", lambda d=df, s=step: transforms.apply_transforms(d, s))
    return transforms.map_columns(df, _sink_columns(spec), field_types)


def table_spec(spec: PipelineSpec) -> ch.TableSpec:
    sink = spec.sink
    return ch.TableSpec(
        database=sink.clickhouse.database,
        table=sink.table,
        dlq_table=sink.dead_letter_table,
        engine=sink.engine,
        order_by=tuple(sink.order_by),
        columns=tuple((c.column, c.type) for c in sink.columns),
        insert_dedup_window=sink.insert_dedup_window,
    )


def prepare_sink(spec: PipelineSpec) -> None:
    """Create or check the ClickHouse tables (what `start_query(prepare=True)` does first); no Spark needed, so a
    runner can do it while its SparkSession starts."""
    ch.prepare_tables(
        connection_dict(spec.sink.clickhouse, reveal_secrets=True), table_spec(spec), create=spec.sink.create_table
    )


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
        writer = ch.PartitionWriter(
            conn=connection_dict(sink.clickhouse, reveal_secrets=True),
            database=sink.clickhouse.database,
            table=sink.table,
            dlq_table=sink.dead_letter_table,
            columns=tuple(transforms.insert_columns(_sink_columns(self.spec))),
            pipeline=self.spec.name,
            token_prefix=self.token_prefix,
            batch_id=batch_id,
        )
        results = batch.mapInArrow(writer, ch.STATS_SCHEMA).collect()
        self.stats.put(
            batch_id,
            {
                "rows_written": sum(r["rows_written"] for r in results),
                "dead_letters": sum(r["dead_letters"] for r in results),
                "insert_ms_max": max((r["insert_ms"] for r in results), default=0),
            },
        )


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
        ch.prepare_tables(
            connection_dict(spec.sink.clickhouse, reveal_secrets=True), table_spec(spec), create=spec.sink.create_table
        )
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


__all__ = [
    "KAFKA_METADATA_FIELDS",
    "BatchWriter",
    "build_session",
    "build_stream",
    "read_kafka",
    "start_query",
    "stop_query",
    "stream_steps",
]
