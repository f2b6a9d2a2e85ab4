"""The temporal join of two topics as pure DataFrame -> DataFrame steps (`spark_jobs.pipeline.build_stream`
composes them when the spec has a `join`).

Each side is parsed, checked and deduplicated on its own (`spark_jobs.dedup`), then
`prepare_side` turns it into rows of one shared schema: the join key's 128-bit hash, the side, the join time in
microseconds, a row id, the side's fields and Kafka metadata as one struct (`left` or `right`, the other NULL),
and the dead-letter columns. `join_sides` unions both and runs ClearFlow's JVM StatefulProcessor
(`io.clearflow.spark.Join`: each side's events of a key in one ValueState on RocksDB, expired by a timer per key,
which also emits a left join's timed-out events; an inner join can expire them by TTL instead, `JOIN_EXPIRY_CONF`);
`unpack` gives the joined rows `left` and `right` structs with their datetimes back, so a column's field
`left.user.id` or `right._kafka_offset` is a plain struct access (`transforms.path_col`).

Timestamps cross the processor as microseconds, as in dedup (the Row encoders overflow on far years).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

from clearflow_spec.spec import JOIN_METADATA_FIELDS, JOIN_SIDES, KAFKA_METADATA_FIELDS
from spark_jobs.transforms import ERROR, Field, nest_paths, path_col

KEY_HIGH, KEY_LOW = "_cf_join_high", "_cf_join_low"
SIDE, JOIN_TIME, ROW_ID = "_cf_side", "_cf_join_time", "_cf_row_id"
ARRIVAL, MATCHED = "_cf_arrival", "_cf_matched"
_SECOND_SEED = "clearflow-join-key"
# How an inner join's kept events expire: "timers" (one per key, as the left join's timeout) or "ttl" (a TTL on each
# side's value). Both are kept to be measured against each other (docs/performance-log.md, "Temporal join").
JOIN_EXPIRY_CONF = "spark.clearflow.join.expiry"
JOIN_EXPIRY_DEFAULT = "timers"
# Top-level columns a dead letter keeps (`column_mapping.map_columns` writes them to the dead-letter table).
DEAD_LETTER_COLUMNS = ("_cf_value", "_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp")


@dataclass(frozen=True)
class Side:
    """One side of the join in plain values: its name (`left`/`right`), fields, join key paths (in the order
    of the other side's) and event time field (None: the Kafka timestamp)."""

    name: str
    fields: tuple[Field, ...]
    keys: tuple[str, ...]
    time_field: str | None = None

    def payload_types(self) -> dict[str, str]:
        """The struct's leaves and their field types: the fields, then the Kafka metadata."""
        return {**{f.path: f.type for f in self.fields}, **JOIN_METADATA_FIELDS}


def require_join_keys(df: DataFrame, side: Side) -> DataFrame:
    """Dead-letter events whose join key or event time is missing or null (they could never join)."""
    reasons = [F.when(path_col(k).isNull(), F.lit(f"join key '{k}' is missing or null")) for k in side.keys]
    if side.time_field:
        field = side.time_field
        reasons.append(F.when(path_col(field).isNull(), F.lit(f"join time '{field}' is missing or null")))
    return df.withColumn(ERROR, F.coalesce(F.col(ERROR), *reasons))


def _micros(value: Column, field_type: str) -> Column:
    return F.unix_micros(value) if field_type == "datetime" else value


def prepare_side(df: DataFrame, side: Side) -> DataFrame:
    """A deduplicated side's rows in the join's shape (the other side's struct is added by `join_sides`)."""
    usable = F.col(ERROR).isNull()
    values = [path_col(k) for k in side.keys]
    coordinates = [F.col("_kafka_topic"), F.col("_kafka_partition"), F.col("_kafka_offset")]
    when = path_col(side.time_field) if side.time_field else F.col("_kafka_timestamp")
    payload = nest_paths({path: _micros(path_col(path), kind) for path, kind in side.payload_types().items()})
    dead = F.col(ERROR).isNotNull()
    return df.select(
        F.when(usable, F.xxhash64(*values)).otherwise(F.xxhash64(*coordinates)).alias(KEY_HIGH),
        F.when(usable, F.xxhash64(F.lit(_SECOND_SEED), *values))
        .otherwise(F.xxhash64(F.lit(_SECOND_SEED), *coordinates))
        .alias(KEY_LOW),
        F.lit(JOIN_SIDES.index(side.name)).alias(SIDE),
        F.coalesce(F.unix_micros(when), F.lit(0)).alias(JOIN_TIME),
        F.xxhash64(*coordinates).alias(ROW_ID),
        F.lit(None).cast("long").alias(ARRIVAL),
        F.lit(None).cast("boolean").alias(MATCHED),
        F.when(usable, F.struct(*payload)).alias(side.name),
        # Only dead letters need the record and its coordinates at the top level: less data through the shuffle.
        *[
            F.when(dead, _micros(F.col(name), KAFKA_METADATA_FIELDS.get(name, ""))).alias(name)
            for name in DEAD_LETTER_COLUMNS
        ],
        F.col(ERROR),
    )


def join_sides(left: DataFrame, right: DataFrame, *, window_seconds: int, left_join: bool) -> DataFrame:
    """Both prepared sides joined: a row per left and right event of one key whose join times are within
    `window_seconds`, and (left join) each unmatched left event with a NULL `right` once its window passed.
    Dead letters of both sides pass through."""
    left_type = left.schema[JOIN_SIDES[0]].dataType
    right_type = right.schema[JOIN_SIDES[1]].dataType
    left = left.withColumn(JOIN_SIDES[1], F.lit(None).cast(right_type))
    right = right.withColumn(JOIN_SIDES[0], F.lit(None).cast(left_type)).select(*left.columns)
    both = left.unionByName(right)
    spark = both.sparkSession
    jvm = spark._jvm  # py4j: the engine jar is on the driver's classpath (spark_jobs.jars.job_jars)
    assert jvm is not None
    columns = [SIDE, JOIN_TIME, ROW_ID, ARRIVAL, MATCHED, JOIN_SIDES[0], JOIN_SIDES[1], ERROR]
    expiry = (spark.conf.get(JOIN_EXPIRY_CONF, None) or JOIN_EXPIRY_DEFAULT).strip().lower()
    if expiry not in ("timers", "ttl"):
        raise ValueError(f"{JOIN_EXPIRY_CONF} must be 'timers' or 'ttl', not {expiry!r}")
    jdf = jvm.io.clearflow.spark.Join.join(
        both._jdf, KEY_HIGH, KEY_LOW, columns, int(window_seconds), left_join, expiry == "ttl"
    )
    return ClassicDataFrame(jdf, spark)


def _restore(side: Side) -> Column:
    struct = F.col(side.name)
    leaves = {
        path: F.timestamp_micros(path_col(f"{side.name}.{path}"))
        if kind == "datetime"
        else path_col(f"{side.name}.{path}")
        for path, kind in side.payload_types().items()
    }
    return F.when(struct.isNotNull(), F.struct(*nest_paths(leaves))).alias(side.name)


def unpack(joined: DataFrame, sides: Sequence[Side]) -> DataFrame:
    """The joined rows as `left` and `right` structs (datetimes as timestamps again) and the dead-letter columns."""
    return joined.select(
        *[_restore(side) for side in sides],
        *[F.col(name) for name in DEAD_LETTER_COLUMNS[:-1]],
        F.timestamp_micros(F.col("_kafka_timestamp")).alias("_kafka_timestamp"),
        F.col(ERROR),
    )


__all__ = ["Side", "join_sides", "prepare_side", "require_join_keys", "unpack"]
