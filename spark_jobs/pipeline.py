"""Compose the pipeline's stream in one visible place, from the Kafka source's rows to the rows the sink writes.

Kafka -> parse_events (JSON) | parse_avro | parse_protobuf -> observe fields (field_watch) -> require_keys
      -> check_columns -> dedup_time -> dedup_key -> drop_unless_dead -> drop_duplicates (JVM, RocksDB state)
      -> explode_array -> apply_filter -> apply_transforms -> map_columns -> foreachBatch(ClickHouse, metrics)

With a `join`, each topic (left: `source`, right: `join.source`) is parsed, checked and deduplicated on its own
(`_side_stream`), then joined (`spark_jobs.join`: prepare_side, join_sides, unpack), and the joined rows go on
to apply_filter as above.

The session is `spark_jobs.session`, the checks on an earlier engine's checkpoint `spark_jobs.checkpoint_state`,
and the running query (start_query, stop_query, the foreachBatch writer) `spark_jobs.query`.
"""

from __future__ import annotations

from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame

from clearflow_spec.avro_schema import WriterSchemas
from clearflow_spec.connections import connection_dict
from clearflow_spec.spec import (
    JOIN_SIDES,
    KAFKA_HEADERS,
    KAFKA_METADATA_FIELDS,
    DedupSpec,
    PipelineSpec,
    SourceSpec,
    SpecError,
    SpecIssue,
)
from spark_jobs import avro_decode, column_mapping, dedup, field_watch, join, protobuf_decode, transforms, written_keys
from spark_jobs import sink as ch
from spark_jobs.metrics import (
    DEDUP_IN_OBSERVATION,
    DEDUP_OUT_OBSERVATION,
    RIGHT_DEDUP_OBSERVATIONS,
)
from spark_jobs.source import read_kafka


def _fields(spec: PipelineSpec, source: SourceSpec | None = None) -> list[transforms.Field]:
    return [transforms.Field(f.path, f.type) for f in (source or spec.source).fields]


def sink_columns(spec: PipelineSpec, *, only_fields: bool = False) -> list[column_mapping.SinkColumn]:
    computed = {t.name for t in spec.transforms}
    return [
        column_mapping.SinkColumn(c.field, c.column, c.type)
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
    if any(column_mapping.needs_check(field_types[c.field], c.type) for c in late_checks):
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


def _dedup_time_and_key(df: DataFrame, rules: DedupSpec, *, dead_letters_only: list[str]) -> DataFrame:
    """The steps between the column checks and drop_duplicates, with or without a join: the dedup time, the key's
    hash, and the dead letters split off (they keep `dead_letters_only`, which usable events drop)."""
    time_field = rules.event_time_field if rules.time == "event" else None
    df = dedup.dedup_time(df, time_field=time_field)
    df = dedup.dedup_key(df, rules.keys)
    return dedup.drop_unless_dead(df, dead_letters_only)


def _side_columns(spec: PipelineSpec, side: str) -> list[column_mapping.SinkColumn]:
    """The sink columns mapping one side's fields, named as that side knows them (`left.n` -> `n`)."""
    prefix = f"{side}."
    return [
        column_mapping.SinkColumn(c.field.removeprefix(prefix), c.column, c.type)
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
    df = column_mapping.check_columns(df, _side_columns(spec, side), field_types)
    if rules is not None:
        df = _dedup_time_and_key(df, rules, dead_letters_only=["_cf_value"])
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
        df = column_mapping.check_columns(df, sink_columns(spec, only_fields=True), field_types, explode=spec.explode)
        if spec.dedup is not None:
            df = _dedup_time_and_key(df, spec.dedup, dead_letters_only=_unused_after_dedup(spec))
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
    return column_mapping.map_columns(df, sink_columns(spec), field_types)


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


__all__ = [
    "KAFKA_METADATA_FIELDS",
    "build_joined",
    "build_stream",
    "prepare_sink",
    "read_kafka",
    "source_schemas",
    "stream_steps",
]
