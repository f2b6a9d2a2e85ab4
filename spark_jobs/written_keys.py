"""First event wins across a new checkpoint: the keys the table received within the dedup window.

A job that starts without a committed batch (a new pipeline, a checkpoint reset, a deploy that starts fresh)
has an empty dedup state, and re-reads events from the spec's `source.starting_offsets` under new insert tokens.
Without more, every event it had written before within the window would be written a second time. So at such a
start the job reads, once, the dedup keys of the rows the table received within the window (by
`_cf_ingested_at`), and drops an event whose key is among them until that row's window has passed (processing
time, as the dedup state keeps a key): the row already written was the first event and stays the only one.

Rows older than the window are not looked up: an event whose key was last written longer than the window ago
is written again, as the dedup would let it through after its window. The keys are compared as text, so the
guard covers dedup keys of types string, int and uuid that the mapping writes to a column (other key types,
an unmapped key, a join, or more than MAX_KEYS keys: the job says so in its log and starts without it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.connections import connection_dict
from clearflow_spec.protocol import local_checkpoint_path
from clearflow_spec.spec import PipelineSpec
from spark_jobs.checkpoint_offsets import committed_offsets, committed_offsets_on_s3
from spark_jobs.object_store import is_object_store
from spark_jobs.sink import INGESTED_AT_COLUMN, get_client, with_retries
from spark_jobs.transforms import ERROR, path_col

log = logging.getLogger(__name__)

# Key types whose text is the same in Spark and in ClickHouse (`toString`); a uuid in lower case.
GUARDED_TYPES = ("string", "int", "uuid")
# More keys than this within the window: the guard would cost the driver's memory; the job starts without it.
MAX_KEYS = 1_000_000
WRITTEN_AT = "_cf_written_at"
_KEY = "_cf_written_key_{}"


def has_committed_batch(checkpoint: str) -> bool:
    """Whether the checkpoint holds a committed batch (then its dedup state decides; no guard needed). A remote
    checkpoint that cannot be read counts as committed: the job's start reports that checkpoint's problem."""
    local = local_checkpoint_path(checkpoint)
    if local is not None:
        return committed_offsets(local) is not None
    if is_object_store(checkpoint):
        try:
            return committed_offsets_on_s3(checkpoint) is not None
        except Exception:  # S3Error and what boto raises: not this module's to report
            return True
    return True


def guard_issue(spec: PipelineSpec) -> str | None:
    """Why the written keys cannot guard this spec's dedup (None: they can)."""
    if spec.dedup is None:
        return "no dedup"
    if spec.join is not None:
        return "a join's sides keep their own state"
    types = spec.field_types()
    columns = {c.field: c.column for c in spec.sink.columns}
    for key in spec.dedup.keys:
        if key not in columns:
            return f"dedup key '{key}' is not written to a column"
        if types.get(key) not in GUARDED_TYPES:
            return f"dedup key '{key}' is of type {types.get(key)}, not one of {', '.join(GUARDED_TYPES)}"
    return None


def _select_sql(spec: PipelineSpec) -> str:
    assert spec.dedup is not None
    columns = {c.field: c.column for c in spec.sink.columns}
    keys = [f"toString({quote_ident(columns[k])})" for k in spec.dedup.keys]
    table = f"{quote_ident(spec.sink.clickhouse.database)}.{quote_ident(spec.sink.table)}"
    ingested = quote_ident(INGESTED_AT_COLUMN)
    return (
        f"SELECT {', '.join(keys)}, max({ingested}) FROM {table} "
        f"WHERE {ingested} >= now64(3) - toIntervalSecond({{window:UInt32}}) "
        f"GROUP BY {', '.join(keys)} LIMIT {{limit:UInt64}}"
    )


def written_keys(spark: SparkSession, spec: PipelineSpec, checkpoint: str) -> DataFrame | None:
    """The keys the target table received within the dedup window, with when (a small static DataFrame), for a
    job that starts without a committed batch; None when there is nothing to guard (see the module docstring)."""
    if spec.dedup is None or has_committed_batch(checkpoint):
        return None
    issue = guard_issue(spec)
    if issue is not None:
        log.info("pipeline %s: rows already written are not looked up (%s)", spec.name, issue)
        return None
    client = get_client(connection_dict(spec.sink.clickhouse, reveal_secrets=True))
    # Only a table with the ingestion time (one ClearFlow created) and the key columns can say what it received
    # within the window; a table made by hand without them is written as before, and its own errors speak.
    mapped = {c.field: c.column for c in spec.sink.columns}
    needed = sorted({INGESTED_AT_COLUMN, *(mapped[k] for k in spec.dedup.keys)})
    present = with_retries(
        lambda: (
            client.query(
                "SELECT count() FROM system.columns WHERE database = {db:String} AND table = {t:String} "
                "AND name IN {names:Array(String)}",
                parameters={"db": spec.sink.clickhouse.database, "t": spec.sink.table, "names": needed},
            ).result_rows
        ),
        what=f"looking for the columns of table {spec.sink.table}",
    )
    if present[0][0] < len(needed):
        if present[0][0]:
            log.info(
                "pipeline %s: rows already written are not looked up (table %s has no %s column, or not every key "
                "column)", spec.name, spec.sink.table, INGESTED_AT_COLUMN,
            )  # fmt: skip
        return None
    rows = with_retries(
        lambda: (
            client.query(
                _select_sql(spec), parameters={"window": spec.dedup.window_seconds, "limit": MAX_KEYS + 1}
            ).result_rows
        ),
        what=f"reading the keys written to {spec.sink.table} within the dedup window",
    )
    if len(rows) > MAX_KEYS:
        log.warning(
            "pipeline %s: more than %d keys were written within the dedup window: they are not looked up, and "
            "events re-read from before this start that were written then are written again",
            spec.name,
            MAX_KEYS,
        )
        return None
    if not rows:  # a new table, or nothing written within the window: the stream keeps its plan without a join
        return None
    log.info("pipeline %s: %d keys written within the dedup window guard this start", spec.name, len(rows))
    keys = spec.dedup.keys
    key_fields = [StructField(_KEY.format(i), StringType()) for i in range(len(keys))]
    schema = StructType([*key_fields, StructField(WRITTEN_AT, TimestampType())])
    return spark.createDataFrame([tuple(r) for r in rows], schema)


def _as_text(column: Column, field_type: str) -> Column:
    text = column.cast("string")
    return F.lower(text) if field_type == "uuid" else text


def drop_written(df: DataFrame, written: DataFrame, spec: PipelineSpec, keys: Sequence[str]) -> DataFrame:
    """`df` without the usable events whose key the table received less than one dedup window ago (the batch's
    time); dead letters pass. A left join on the key, then a filter on the batch's time (a join's condition may
    not read the clock); the written keys are unique (grouped), so no event is repeated."""
    assert spec.dedup is not None
    types: dict[str, Any] = spec.field_types()
    window = F.expr(f"INTERVAL {int(spec.dedup.window_seconds)} SECONDS")
    condition = F.col(ERROR).isNull()
    for i, key in enumerate(keys):
        condition = condition & (_as_text(path_col(key), types[key]) == F.col(_KEY.format(i)))
    joined = df.join(F.broadcast(written), on=condition, how="left")
    fresh = F.col(WRITTEN_AT).isNull() | (F.current_timestamp() >= F.col(WRITTEN_AT) + window)
    return joined.where(fresh).drop(*written.columns)


__all__ = ["MAX_KEYS", "drop_written", "guard_issue", "has_committed_batch", "written_keys"]
