"""The Avro parse step: `_cf_value` decoded in the JVM by Spark's `from_avro` (spark-avro), no Python UDF.

`parse_avro` is the Avro counterpart of `transforms.parse_events` (JSON): it gives the same typed field columns
and the same `_cf_error`, so dedup, checks, mapping and the sink do not know the format.

- Confluent wire format (`confluent=True`): byte 0 is the magic byte 0, bytes 1-4 the writer schema's id (big
  endian), then the Avro body. Each writer schema the run knows gets its own `from_avro` branch, chosen by the
  id, so records of schema versions 1 and 2 are each read with their own schema. A field a version lacks is
  NULL in its records; a field whose type changed is converted from what that version wrote.
- Plain Avro (`confluent=False`): the whole value is the body of the one schema given (id 0).

Dead letters, with their reasons: a NULL value; a record too short or without the magic byte; an id the
registry does not have, or that is not Avro (`unreadable`); bytes the writer schema cannot decode; a value
that does not convert to the field's type (worded as for JSON). A record with an id the run has not loaded yet
(a schema registered after the job started) stops the batch with `UNKNOWN_SCHEMA_ID` in the error, before
anything is committed: `spark_jobs.run` loads that id and starts the query again from its checkpoint, so
nothing is lost or doubled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from clearflow_spec.avro_schema import WIRE_HEADER_BYTES, SchemaField, WriterSchemas, fields_by_path, parse_schema
from clearflow_spec.field_types import field_spark_type, is_nested
from spark_jobs.transforms import ERROR, Field, cannot_convert, convert_text, nest_paths, spark_ident, with_typed_fields

SCHEMA_ID = "_cf_schema_id"
UNKNOWN_SCHEMA_ID = "clearflow: unknown Avro schema id"
UNKNOWN_SCHEMA_ID_RE = re.compile(re.escape(UNKNOWN_SCHEMA_ID) + r" (\d+)")
PLAIN_SCHEMA_ID = 0
_BODY = "_cf_avro_body"
_DECODED = "_cf_avro_"  # + schema id: the decoded struct of records written with that schema


def parse_avro(df: DataFrame, fields: Sequence[Field], schemas: WriterSchemas) -> DataFrame:
    """Decode `_cf_value` into typed field columns and `_cf_schema_id`; set `_cf_error` for unusable records."""
    value = F.col("_cf_value")
    if schemas.confluent:
        schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("bigint")
        body = F.expr(f"substring(_cf_value, {WIRE_HEADER_BYTES + 1})")
        framing_error = F.when(
            F.octet_length(value) < WIRE_HEADER_BYTES,
            F.concat(
                F.lit("record too short for the Confluent wire format ("),
                F.octet_length(value).cast("string"),
                F.lit(" bytes)"),
            ),
        ).when(
            F.substring(value, 1, 1) != F.unhex(F.lit("00")),
            F.concat(
                F.lit("not in the Confluent wire format: the first byte is 0x"),
                F.hex(F.substring(value, 1, 1)),
                F.lit(", expected 0x00"),
            ),
        )
    else:
        schema_id = F.lit(PLAIN_SCHEMA_ID).cast("bigint")
        body = value
        framing_error = F.lit(None).cast("string")
    staged = df.withColumn(SCHEMA_ID, F.when(value.isNotNull() & framing_error.isNull(), schema_id)).withColumn(
        _BODY, body
    )
    ids = sorted(schemas.by_id)
    for sid in ids:
        decoded = from_avro(F.col(_BODY), schemas.by_id[sid], {"mode": "PERMISSIVE"})
        staged = staged.withColumn(f"{_DECODED}{sid}", F.when(F.col(SCHEMA_ID) == sid, decoded))

    writer_fields = {sid: fields_by_path(schemas.by_id[sid]) for sid in ids}
    typed: dict[str, Column] = {}
    texts: dict[str, Column] = {}
    for field in fields:
        typed_by_id, text_by_id = {}, {}
        for sid in ids:
            typed_by_id[sid], text_by_id[sid] = _read_field(sid, field, writer_fields[sid].get(field.path))
        typed[field.path] = _by_schema_id(typed_by_id, field_spark_type(field.type))
        texts[field.path] = _by_schema_id(text_by_id, "string")
    staged, typed = with_typed_fields(staged, typed)
    reasons: list[Column] = [
        F.when(value.isNull(), F.lit("empty record value (NULL)")),
        framing_error,
        *_schema_id_reasons(schemas.by_id, schemas.unreadable),
        *[cannot_convert(field, texts[field.path], typed[field.path]) for field in fields],
    ]
    with_error = staged.withColumn(ERROR, F.coalesce(*reasons))
    return with_error.select(*df.columns, *nest_paths(typed), SCHEMA_ID, ERROR)


def _schema_id_reasons(schemas_by_id: Mapping[int, str], unreadable: Mapping[int, str]) -> list[Column]:
    ids = sorted(schemas_by_id)
    schema_id = F.col(SCHEMA_ID)
    reasons = [F.when(schema_id == sid, F.lit(f"schema id {sid} {why}")) for sid, why in sorted(unreadable.items())]
    known = [*ids, *unreadable]
    unknown = schema_id.isNotNull() & ~schema_id.isin(*known) if known else schema_id.isNotNull()
    # Stops the batch (nothing committed): the run loads the schema and starts again from the checkpoint.
    reasons.append(F.when(unknown, F.raise_error(F.concat(F.lit(UNKNOWN_SCHEMA_ID + " "), schema_id.cast("string")))))
    for sid in ids:
        # PERMISSIVE from_avro gives a row of NULLs for bytes it cannot decode: a field the schema requires
        # (not a union with null) being NULL tells it. A schema whose fields are all optional cannot tell.
        required = _required_field(schemas_by_id[sid])
        if required is None:
            continue
        reasons.append(
            F.when(
                (schema_id == sid) & F.col(f"{_DECODED}{sid}.{spark_ident(required)}").isNull(),
                F.lit(f"cannot decode the record with Avro schema id {sid}: its bytes do not match the schema"),
            )
        )
    return reasons


def unloaded_schema_id(failure: BaseException | None) -> int | None:
    """The schema id a failed query met without having it loaded (`UNKNOWN_SCHEMA_ID`), else None."""
    match = UNKNOWN_SCHEMA_ID_RE.search(str(failure)) if failure is not None else None
    return int(match.group(1)) if match else None


def _required_field(schema: str) -> str | None:
    """The first top-level field a record of this schema always has a value for (None if all are optional)."""
    for field in parse_schema(schema)["fields"]:
        kind = field.get("type")
        if kind != "null" and not (isinstance(kind, list) and "null" in kind):
            return str(field["name"])
    return None


def _by_schema_id(values: Mapping[int, Column], spark_type: str) -> Column:
    result: Column | None = None
    for sid, column in values.items():
        result = (F.when if result is None else result.when)(F.col(SCHEMA_ID) == sid, column)
    return F.lit(None).cast(spark_type) if result is None else result


def _read_field(sid: int, field: Field, written: SchemaField | None) -> tuple[Column, Column]:
    """(value as the field's type, its text for a dead letter's reason) in records of writer schema `sid`."""
    spark_type = field_spark_type(field.type)
    if written is None:  # this version of the schema has no such field: NULL, like a JSON key that is absent
        return F.lit(None).cast(spark_type), F.lit(None).cast("string")
    raw = F.col(f"{_DECODED}{sid}.{'.'.join(spark_ident(part) for part in field.path.split('.'))}")
    avro = written.avro_type
    if written.type == "json" or is_nested(written.type):  # unions of several types, arrays, maps: JSON text
        text = F.to_json(raw)
    elif avro in ("bytes", "fixed"):
        text = F.base64(raw)
    elif avro in _TIME_TYPES and field.type == "datetime":
        return raw.cast("timestamp"), raw.cast("string")
    else:
        text = raw.cast("string")
    native = _NATIVE.get((avro, field.type))
    if native is not None:
        return native(raw), text
    return convert_text(text, field.type), text


_TIME_TYPES = frozenset(
    {"date", "timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"}
)
# Avro values read directly as the field's type, without going through their text.
_NATIVE = {
    ("int", "int"): lambda raw: raw.cast("bigint"),
    ("long", "int"): lambda raw: raw.cast("bigint"),
    ("int", "float"): lambda raw: raw.cast("double"),
    ("long", "float"): lambda raw: raw.cast("double"),
    ("float", "float"): lambda raw: raw.cast("double"),
    ("double", "float"): lambda raw: raw.cast("double"),
    ("boolean", "bool"): lambda raw: raw,
    ("string", "string"): lambda raw: raw,
    ("enum", "string"): lambda raw: raw,
    ("uuid", "string"): lambda raw: raw,
}
