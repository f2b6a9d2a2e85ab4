"""The Protobuf parse step: `_cf_value` decoded in the JVM by ClearFlow's decoder (spark_jobs/protobuf-jvm), a
Java UDF reading the Confluent Protobuf wire format with protobuf-java's DynamicMessage. No Python UDF.

`parse_protobuf` is the Protobuf counterpart of `avro_decode.parse_avro`: the same typed field columns,
`_cf_schema_id` and `_cf_error`, so dedup, checks, mapping and the sink do not know the format.

The writer schemas (.proto text by schema id) are asked of the registry on the driver (`source_schemas`) and
travel to the executors inside the UDF. The UDF gives each field's text (see ConfluentProtobufDecoder's doc), and
the text is converted to the field's type as a JSON value is (`transforms.convert_text`), with the same reasons.

Dead letters, with their reasons: a NULL value; a record too short or without the magic byte; an id the registry
lacks or that is not Protobuf, or a .proto the decoder cannot read; message indexes the schema does not have;
bytes the message cannot be parsed from; a value that does not convert to the field's type. A record with an id
the run has not loaded yet stops the batch (`avro_decode.UNKNOWN_SCHEMA_ID`), as for Avro: the run loads it and
starts again from the checkpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from clearflow_spec.avro_schema import WriterSchemas
from clearflow_spec.field_types import field_spark_type
from spark_jobs.avro_decode import SCHEMA_ID, UNKNOWN_SCHEMA_ID
from spark_jobs.transforms import ERROR, Field, cannot_convert, convert_text, nest_paths, with_typed_fields

DECODER_CLASS = "io.clearflow.protobuf.ConfluentProtobufDecoder"
_DECODED = "_cf_protobuf"


def parse_protobuf(df: DataFrame, fields: Sequence[Field], schemas: WriterSchemas) -> DataFrame:
    """Decode `_cf_value` into typed field columns and `_cf_schema_id`; set `_cf_error` for unusable records."""
    spark = df.sparkSession
    decoder = spark._jvm.io.clearflow.protobuf.ConfluentProtobufDecoder  # type: ignore[union-attr]
    usable: dict[int, str] = {}
    unreadable = dict(schemas.unreadable)
    for sid, text in sorted(schemas.by_id.items()):
        problem = decoder.problem(text)  # checked here, once, rather than failing every task
        if problem:
            unreadable[sid] = f"is a Protobuf schema that {problem}"
        else:
            usable[sid] = text
    paths = [field.path for field in fields]
    digest = hashlib.sha256(repr((sorted(usable.items()), paths)).encode()).hexdigest()[:16]
    name = f"clearflow_protobuf_{digest}"
    decoder.register(spark._jsparkSession, name, usable, paths)  # type: ignore[attr-defined]

    staged = df.withColumn(_DECODED, F.call_function(name, F.col("_cf_value")))
    schema_id = F.col(f"{_DECODED}.schema_id")
    reasons: list[Column] = [F.col(f"{_DECODED}.error")]
    reasons += [F.when(schema_id == sid, F.lit(f"schema id {sid} {why}")) for sid, why in sorted(unreadable.items())]
    known = [*usable, *unreadable]
    unknown = schema_id.isNotNull() & ~schema_id.isin(*known) if known else schema_id.isNotNull()
    # Stops the batch (nothing committed): the run loads the schema and starts again from the checkpoint.
    reasons.append(F.when(unknown, F.raise_error(F.concat(F.lit(UNKNOWN_SCHEMA_ID + " "), schema_id.cast("string")))))
    texts = {field.path: F.col(f"{_DECODED}.v{i}") for i, field in enumerate(fields)}
    staged, typed = with_typed_fields(
        staged,
        {
            field.path: convert_text(texts[field.path], field.type).cast(field_spark_type(field.type))
            for field in fields
        },
    )
    reasons += [cannot_convert(field, texts[field.path], typed[field.path]) for field in fields]
    with_error = staged.withColumn(ERROR, F.coalesce(*reasons))
    return with_error.select(*df.columns, *nest_paths(typed), schema_id.alias(SCHEMA_ID), ERROR)
