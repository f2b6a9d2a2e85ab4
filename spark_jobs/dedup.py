"""Deduplication as pure DataFrame -> DataFrame steps: events without a key become dead letters, each event gets
its dedup time, and the first event per key is kept while Spark remembers the key (its state store).

`spark_jobs.pipeline.build_stream` runs them in this order: `require_keys` (before the column checks), then
`dedup_time`, `drop_unless_dead`, `drop_duplicates`. A dead letter never takes the place of a good event: it
gets a key of its own (`_cf_dlq_id`, its Kafka coordinates) and passes through.
This is Spark's dedup, within `dedup.window`; ClickHouse's insert deduplication (`sink.insert_dedup_window`)
is what makes a replayed micro-batch harmless (`spark_jobs.sink`, `spark_jobs.exactly_once`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.transforms import DLQ_ID, ERROR, TIME, path_col


def require_keys(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Dead-letter events whose dedup key is missing or null."""
    reason = F.coalesce(*[F.when(path_col(k).isNull(), F.lit(f"dedup key '{k}' is missing or null")) for k in keys])
    return df.withColumn(ERROR, F.coalesce(F.col(ERROR), reason))


def dedup_time(df: DataFrame, *, time_field: str | None, window_seconds: int) -> DataFrame:
    """`_cf_time`: the record's Kafka timestamp (or `time_field`), clamped into [batch time - window/2,
    batch time] so no record is ever behind Spark's watermark (Spark would drop it silently)."""
    horizon = max(1, window_seconds // 2)
    now = F.current_timestamp()
    floor = now - F.expr(f"INTERVAL {horizon} SECONDS")
    source = F.col("_kafka_timestamp") if time_field is None else path_col(time_field)
    if time_field is not None:
        df = df.withColumn(
            ERROR,
            F.coalesce(F.col(ERROR), F.when(source.isNull(), F.lit(f"event time '{time_field}' is missing or null"))),
        )
    when = F.coalesce(source, F.col("_kafka_timestamp"), now)
    return df.withColumn(TIME, F.least(F.greatest(when, floor), now))


def drop_duplicates(df: DataFrame, *, keys: Sequence[str], window_seconds: int) -> DataFrame:
    """Keep the first event per key while the key is remembered (about `window_seconds` of dedup time).

    The watermark delay is half the window: Spark keeps a key until the watermark (newest time - delay)
    passes the key's time + delay, i.e. for one window. Dead letters get a unique key and pass through.
    """
    delay = max(1, window_seconds // 2)
    usable = F.col(ERROR).isNull()
    keyed = df
    key_cols = []
    added = []
    for i, key in enumerate(keys):
        if "." not in key:
            key_cols.append(key)  # a top-level key is used as it is (dead letters differ by DLQ_ID)
            continue
        name = f"_cf_k{i}"
        keyed = keyed.withColumn(name, path_col(key))
        key_cols.append(name)
        added.append(name)
    keyed = keyed.withColumn(
        DLQ_ID,
        F.when(~usable, F.concat_ws(":", "_kafka_topic", "_kafka_partition", "_kafka_offset")),
    )
    deduped = keyed.withWatermark(TIME, f"{delay} seconds").dropDuplicatesWithinWatermark([*key_cols, DLQ_ID])
    return deduped.drop(*added, DLQ_ID)


def drop_unless_dead(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """NULL these columns (the raw record, Kafka metadata) for usable events, where nothing reads them later
    (only dead letters store them): less data through the dedup shuffle."""
    dead = F.col(ERROR).isNotNull()
    for name in columns:
        df = df.withColumn(name, F.when(dead, F.col(name)))
    return df


__all__ = ["dedup_time", "drop_duplicates", "drop_unless_dead", "require_keys"]
