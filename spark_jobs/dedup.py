"""Deduplication as pure DataFrame -> DataFrame steps: events without a key become dead letters, each event gets
its dedup time and its key's hash, and the first event per key is kept for one window (a state store).

`spark_jobs.pipeline.build_stream` runs them in this order: `require_keys` (before the column checks), then
`dedup_time`, `dedup_key`, `drop_unless_dead`, `drop_duplicates`. A dead letter never takes the place of a good
event: it passes through without touching the state.
The state is ClearFlow's JVM StatefulProcessor (`spark_jobs/jvm`, `io.clearflow.spark.Dedup`): a TTL ValueState
per key on RocksDB, so a micro-batch costs what its rows and the keys expiring now cost, not the whole window.
ClickHouse's insert deduplication (`sink.insert_dedup_window`) is what makes a replayed micro-batch harmless
(`spark_jobs.sink`, `clearflow_spec.exactly_once`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.types import TimestampType

from spark_jobs.metrics import DEDUP_IN_OBSERVATION, DEDUP_OUT_OBSERVATION
from spark_jobs.transforms import ERROR, TIME, path_col

# Columns the dedup steps add and drop again (reserved `_cf_` names).
KEY_HIGH, KEY_LOW = "_cf_key_high", "_cf_key_low"
# Within a batch a key's first event is the earliest by dedup time, then Kafka partition and offset. The Kafka
# columns are used as they are: `drop_unless_dead` leaves fixed-width columns alone (a NULL saves no bytes in
# Spark's rows), so they need no copies through the shuffle and the processor's Row encoders.
ORDER_COLUMNS = (TIME, "_kafka_partition", "_kafka_offset")
_SECOND_SEED = "clearflow-dedup-key"  # hashed first: the second hash starts from another seed than the first


def require_keys(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Dead-letter events whose dedup key is missing or null."""
    reason = F.coalesce(*[F.when(path_col(k).isNull(), F.lit(f"dedup key '{k}' is missing or null")) for k in keys])
    return df.withColumn(ERROR, F.coalesce(F.col(ERROR), reason))


def dedup_time(df: DataFrame, *, time_field: str | None) -> DataFrame:
    """`_cf_time`: the record's Kafka timestamp (or `time_field`, then a dead letter when it is missing). It
    orders a key's events within a batch; the dedup processor compares it clamped into the last half window
    before the batch's time (io.clearflow.spark.DedupProcessor), so a wrong clock, far past or future, does not
    decide which copy wins. Not clamped here: the batch's time in the query is a literal that changes each batch,
    and the stage holding it was compiled again at every batch."""
    source = F.col("_kafka_timestamp") if time_field is None else path_col(time_field)
    if time_field is None:
        return df.withColumn(TIME, source)
    df = df.withColumn(
        ERROR,
        F.coalesce(F.col(ERROR), F.when(source.isNull(), F.lit(f"event time '{time_field}' is missing or null"))),
    )
    return df.withColumn(TIME, F.coalesce(source, F.col("_kafka_timestamp")))


def dedup_key(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The state's key: a 128-bit hash of the dedup key values (two xxhash64 with different seeds; small RocksDB
    keys whatever the key's size).

    Runs before `drop_unless_dead`, which nulls the Kafka topic of usable events. A dead letter is keyed by
    its Kafka coordinates, so dead letters spread over the partitions like events do.
    """
    usable = F.col(ERROR).isNull()
    values = [path_col(k) for k in keys]
    coordinates = [F.col("_kafka_topic"), F.col("_kafka_partition"), F.col("_kafka_offset")]
    return df.select(
        "*",
        F.when(usable, F.xxhash64(*values)).otherwise(F.xxhash64(*coordinates)).alias(KEY_HIGH),
        F.when(usable, F.xxhash64(F.lit(_SECOND_SEED), *values))
        .otherwise(F.xxhash64(F.lit(_SECOND_SEED), *coordinates))
        .alias(KEY_LOW),
    )


def drop_duplicates(
    df: DataFrame,
    *,
    window_seconds: int,
    observe: tuple[str, str] | None = (DEDUP_IN_OBSERVATION, DEDUP_OUT_OBSERVATION),
) -> DataFrame:
    """Keep the first event per key (by dedup time, then Kafka partition and offset) for `window_seconds` of
    processing time after the key was first kept; dead letters pass through. Needs `dedup_key`'s columns and
    the RocksDB state store (`spark_jobs.session.state_store_conf`); the helper columns are dropped after.
    `observe`: the names the rows in and out are counted under for the metrics (a join's right side has its
    own, `metrics.RIGHT_DEDUP_OBSERVATIONS`: a query observes each name once); None: not counted.
    """
    spark = df.sparkSession
    jvm = spark._jvm  # py4j: the engine jar is on the driver's classpath (spark_jobs.jars.job_jars)
    assert jvm is not None
    # The metrics' duplicates: the rows in minus the rows out, both counted by the query (spark_jobs.metrics).
    counted = df.observe(observe[0], F.count(F.lit(1)).alias("rows")) if observe else df
    # Timestamps cross the processor as microseconds: Spark's Row encoders turn a TimestampType value into a
    # java.sql.Timestamp and back, which overflows ("long overflow") for the far years a user's event may carry,
    # and costs an object a value. Microseconds order the dedup time the same way.
    stamps = [f.name for f in counted.schema.fields if isinstance(f.dataType, TimestampType)]
    as_micros = counted.withColumns({name: F.unix_micros(F.col(name)) for name in stamps}) if stamps else counted
    jdf = jvm.io.clearflow.spark.Dedup.dropDuplicates(
        as_micros._jdf, KEY_HIGH, KEY_LOW, ERROR, int(window_seconds), list(ORDER_COLUMNS), TIME
    )
    kept = ClassicDataFrame(jdf, spark).drop(KEY_HIGH, KEY_LOW)
    if stamps:
        kept = kept.withColumns({name: F.timestamp_micros(F.col(name)) for name in stamps})
    return kept.observe(observe[1], F.count(F.lit(1)).alias("rows")) if observe else kept


def drop_unless_dead(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """NULL these columns (the raw record, the Kafka topic) for usable events, where nothing reads them later
    (only dead letters store them): less data through the dedup shuffle. Only variable-width columns are worth
    it (a NULL int or long takes its 8 bytes all the same); the dedup's order columns are never nulled."""
    dead = F.col(ERROR).isNotNull()
    for name in columns:
        df = df.withColumn(name, F.when(dead, F.col(name)))
    return df


__all__ = ["dedup_key", "dedup_time", "drop_duplicates", "drop_unless_dead", "require_keys"]
