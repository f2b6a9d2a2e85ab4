"""Noticing fields the pipeline does not read, in the same pass as the batch (Spark's observed metrics).

Why here and this way: the parse step is the one place that sees every event with its schema, and an observed
metric is an aggregate computed while the batch's rows stream through (no second job, no cache). What it
publishes is small and per batch, so it travels in the metrics record (`spark_jobs.metrics`) that the web app
already reads; turning it into "new field `coupon` (string) seen in 1,204 events since 10:02" is
`clearflow_spec.field_changes`, outside the job.

- Avro: the events of each writer schema id are counted (one `count_if` per id the run knows). Which fields an
  id has is in its schema, so the counts are enough: exact, and nearly free.
- JSON: the keys that no field path covers are collected from a deterministic sample of the events (those
  whose offset is a multiple of JSON_SAMPLE_EVERY), top-level keys and keys inside the objects the fields'
  paths go through. Reading keys means parsing the JSON once more, hence the sample: the cost is a sixteenth
  of a parse. The counts of the sample are published with the sample rate.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from clearflow_spec.protocol import JSON_SAMPLE_EVERY
from spark_jobs.avro_decode import SCHEMA_ID
from spark_jobs.metrics import FIELDS_OBSERVATION

SCHEMA_ID_COUNT = "schema_id_"  # + id: events of that writer schema in the batch


def observe_schema_ids(df: DataFrame, schema_ids: Collection[int]) -> DataFrame:
    """Count the batch's events per writer schema id (Avro)."""
    counts = [F.count_if(F.col(SCHEMA_ID) == sid).alias(f"{SCHEMA_ID_COUNT}{sid}") for sid in sorted(schema_ids)]
    return df.observe(FIELDS_OBSERVATION, *(counts or [F.count(F.lit(1)).alias("events")]))


def observe_json_keys(df: DataFrame, field_paths: Sequence[str]) -> DataFrame:
    """Collect, from a sample of the batch's events, the JSON keys that no field path covers."""
    text = F.col("_cf_value").cast("string")
    parents = sorted({".".join(p.split(".")[:i]) for p in field_paths for i in range(1, p.count(".") + 1)})
    known = sorted({*field_paths, *parents})
    found: list[Column] = [F.coalesce(F.json_object_keys(text), F.array().cast("array<string>"))]
    for parent in parents:
        keys = F.json_object_keys(F.get_json_object(text, f"$.{parent}"))
        found.append(F.coalesce(F.transform(keys, _prefixed(parent + ".")), F.array().cast("array<string>")))
    unmapped = F.array_except(F.concat(*found), F.array(*[F.lit(k) for k in known]).cast("array<string>"))
    sampled = (F.col("_kafka_offset") % JSON_SAMPLE_EVERY) == 0
    return df.observe(
        FIELDS_OBSERVATION,
        F.array_sort(F.array_distinct(F.flatten(F.collect_set(F.when(sampled, unmapped))))).alias("unmapped_keys"),
        F.count_if(sampled & (F.size(unmapped) > 0)).alias("sampled_with_unmapped"),
        F.count_if(sampled).alias("sampled"),
    )


def _prefixed(prefix: str) -> Callable[[Column], Column]:
    # One argument only: F.transform passes the element's index to a function that takes two.
    return lambda key: F.concat(F.lit(prefix), key)
