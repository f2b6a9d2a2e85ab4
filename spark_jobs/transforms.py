"""The pipeline's steps as small pure DataFrame -> DataFrame functions taking plain values (dedup's steps are in
`spark_jobs.dedup`).

Columns the steps share (besides the user's fields, which are nested structs: `user.id` is `user` -> `id`):
- `_cf_value` (raw record bytes), `_kafka_topic`, `_kafka_partition`, `_kafka_offset`, `_kafka_timestamp`;
- `_cf_error`: NULL for a usable event, else the dead-letter reason;
- `_cf_time`: the dedup time; `_cf_key_high`, `_cf_key_low`: the dedup key's hash (spark_jobs.dedup).
`spark_jobs.pipeline.build_stream` composes them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from clearflow_spec.field_types import (
    EPOCH_NUMBER_PATTERN,
    FIELD_TYPES,
    UUID_PATTERN,
    field_spark_type,
    field_type_shape,
    is_nested,
)
from spark_jobs import nested_columns
from spark_jobs.metrics import FILTER_OBSERVATION

ERROR = "_cf_error"
TIME = "_cf_time"
_JSON = "_cf_json"
_CORRUPT = "_cf_corrupt"
_TYPED = "_cf_typed_"  # + n: a field's converted value, until the fields are nested (with_typed_fields)
_RAW = "_cf_raw"
_FILTERED = "_cf_filtered"


@dataclass(frozen=True)
class Field:
    path: str
    type: str


@dataclass(frozen=True)
class Transform:
    name: str
    expression: str
    type: str


def spark_ident(name: str) -> str:
    """A name quoted for Spark SQL (backquotes doubled); ClickHouse quoting is `clickhouse_types.quote_ident`."""
    return "`" + name.replace("`", "``") + "`"


def path_col(path: str) -> Column:
    """A column for a (possibly nested) field path: `user.id` -> user.id (struct access)."""
    return F.col(".".join(spark_ident(part) for part in path.split(".")))


def _string_schema(paths: Sequence[str]) -> StructType:
    """A from_json schema with every leaf read as text (Spark keeps numbers' and objects' JSON text)."""
    tree: dict = {}
    for path in paths:
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = None

    def build(node: dict) -> StructType:
        return StructType([StructField(k, StringType() if v is None else build(v), True) for k, v in node.items()])

    schema = build(tree)
    return StructType([*schema.fields, StructField(_CORRUPT, StringType(), True)])


def _to_int(raw: Column) -> Column:
    return F.trim(raw).try_cast("bigint")


def _to_bool(raw: Column) -> Column:
    lowered = F.lower(F.trim(raw))
    return F.when(lowered == "true", F.lit(True)).when(lowered == "false", F.lit(False))


def hex_lower(text: Column) -> Column:
    """lower() for text that is hex digits and dashes: a character map, not the Unicode case mapping."""
    return F.translate(text, "ABCDEF", "abcdef")


def _to_datetime(raw: Column) -> Column:
    numeric = raw.try_cast("double")
    epoch = F.when(F.abs(numeric) >= 1e11, numeric / 1000.0).otherwise(numeric)  # epoch milliseconds or seconds
    return F.when(raw.rlike(EPOCH_NUMBER_PATTERN), F.timestamp_seconds(epoch)).otherwise(raw.try_cast("timestamp"))


# How each field type (`clearflow_spec.field_types`) is read from a value's JSON text. Conversions need Spark, so
# they cannot live in the field-type table the web app imports; a type missing here stops the import.
_FROM_TEXT = {
    "string": lambda raw: raw,
    "json": lambda raw: raw,
    "int": _to_int,
    "float": lambda raw: raw.try_cast("double"),
    "bool": _to_bool,
    "datetime": _to_datetime,
    "uuid": lambda raw: F.when(raw.rlike(UUID_PATTERN), hex_lower(raw)),
}
if set(_FROM_TEXT) != set(FIELD_TYPES):  # pragma: no cover - a programming error, caught by any test
    raise ImportError(f"convert_text must handle exactly the field types {FIELD_TYPES}, not {sorted(_FROM_TEXT)}")


def convert_text(raw: Column, field_type: str) -> Column:
    """JSON text of a value -> the field type's Spark value (NULL when it cannot be converted; an array's element
    that does not convert is NULL in it, and `cannot_convert` names it)."""
    if field_type in _FROM_TEXT:
        return _FROM_TEXT[field_type](raw)
    shape = field_type_shape(field_type)
    return nested_columns.typed(nested_columns.read_text(raw, shape), shape, convert_text)


def parse_events(df: DataFrame, fields: Sequence[Field]) -> DataFrame:
    """Parse `_cf_value` as JSON into typed field columns; set `_cf_error` for unusable records.

    Every leaf is read as JSON text first, then converted: a value that does not convert gives a dead letter
    naming the field and the value (a typed `from_json` schema would turn it into NULL silently).
    """
    text = F.col("_cf_value").cast("string")
    parsed = df.withColumn(
        _JSON,
        F.from_json(
            text,
            _string_schema([f.path for f in fields]),
            {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT},
        ),
    )
    raw = {f.path: F.col(_JSON + "." + ".".join(spark_ident(p) for p in f.path.split("."))) for f in fields}
    parsed, typed = with_typed_fields(parsed, {f.path: convert_text(raw[f.path], f.type) for f in fields})

    corrupt_reason = (
        F.when(F.col("_cf_value").isNull(), F.lit("empty record value (NULL)"))
        .when(F.try_parse_json(text).isNull(), F.lit("invalid JSON"))
        .when(~F.ltrim(text).startswith("{"), F.lit("not a JSON object"))
        .otherwise(F.lit("unexpected JSON structure: an object was expected at a field's parent"))
    )
    corrupt = F.col(_JSON).isNull() | F.col(f"{_JSON}.{_CORRUPT}").isNotNull()
    # Spark casts bytes to a string without checking them: bytes that are not UTF-8 would reach the table as
    # replacement characters. They are dead letters.
    not_utf8 = F.col("_cf_value").isNotNull() & ~F.expr("is_valid_utf8(CAST(_cf_value AS STRING))")
    reasons = [F.when(not_utf8, F.lit("invalid UTF-8")), F.when(corrupt, corrupt_reason)]
    reasons += [cannot_convert(f, raw[f.path], typed[f.path]) for f in fields]
    with_error = parsed.withColumn(ERROR, F.coalesce(*reasons))
    return with_error.select(*df.columns, *nest_paths(typed), ERROR)


def with_typed_fields(df: DataFrame, typed: dict[str, Column]) -> tuple[DataFrame, dict[str, Column]]:
    """`df` with each field's converted value as a column of its own, and those columns by path.

    Why: a value is used twice, as the field's column and in the reason its row is a dead letter. Spark does
    not share an expression between a column and a coalesce's later argument, so each conversion (a regex
    check, a cast) ran twice a row. A column referenced twice keeps its projection from being merged into
    the next one, so it is computed once."""
    names = {path: f"{_TYPED}{n}" for n, path in enumerate(typed)}
    df = df.select("*", *[column.alias(names[path]) for path, column in typed.items()])
    return df, {path: F.col(names[path]) for path in typed}


def cannot_convert(field: Field, text: Column, typed: Column) -> Column:
    """The dead-letter reason when a field's text does not convert to its type (NULL when it does)."""
    if field.type in ("string", "json"):  # text is always a valid string
        return F.lit(None).cast("string")
    if is_nested(field.type):
        shape = field_type_shape(field.type)
        leaves = nested_columns.read_text(text, shape)
        return F.coalesce(
            nested_columns.not_of_shape_reason(text, leaves, shape, field.path),
            nested_columns.convert_reason(leaves, shape, F.lit(field.path), convert_text),
        )
    return F.when(
        text.isNotNull() & typed.isNull(),
        F.concat(
            F.lit(f"field '{field.path}': cannot convert '"), F.substring(text, 1, 200), F.lit(f"' to {field.type}")
        ),
    )


def nest_paths(typed: dict[str, Column]) -> list[Column]:
    """Typed leaves by dotted path -> top-level columns, nested paths as structs (every format's parse step)."""
    tree: dict = {}
    for path, column in typed.items():
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = column

    def build(node: dict) -> Column:
        return F.struct(*[(build(v) if isinstance(v, dict) else v).alias(k) for k, v in node.items()])

    return [(build(v) if isinstance(v, dict) else v).alias(k) for k, v in tree.items()]


def explode_array(df: DataFrame, path: str | None) -> DataFrame:
    """One row per element of the array at `path`, the element in the array's place (no row for an empty or
    NULL array, as ClickHouse's ARRAY JOIN). A dead letter stays one row."""
    if path is None:
        return df
    array = path_col(path)
    elements = F.explode(F.when(F.col(ERROR).isNull(), array).otherwise(F.array(F.get(array, 0))))
    top, _, rest = path.partition(".")
    if not rest:
        return df.withColumn(top, elements)
    element = "_cf_element"
    exploded = df.select("*", elements.alias(element))
    return exploded.withColumn(top, F.col(spark_ident(top)).withField(rest, F.col(element))).drop(element)


def apply_filter(df: DataFrame, condition: str | None) -> DataFrame:
    """Keep events where the Spark SQL condition is true; dead letters always pass.

    The events dropped are counted, per micro-batch, as Spark's observed metric `FILTER_OBSERVATION`
    (`filtered_out`): the metrics record reads it from the query's progress, so that the pipeline page's
    "events read = written + duplicates + dead letters + filtered out" is a check, not a subtraction."""
    if not condition:
        return df
    flagged = df.withColumn(_FILTERED, F.col(ERROR).isNull() & ~F.coalesce(F.expr(condition), F.lit(False)))
    counted = flagged.observe(
        FILTER_OBSERVATION, F.coalesce(F.sum(F.col(_FILTERED).cast("long")), F.lit(0)).alias("filtered_out")
    )
    return counted.where(~F.col(_FILTERED)).drop(_FILTERED)


def apply_transforms(df: DataFrame, transforms: Sequence[Transform]) -> DataFrame:
    """Add one column per transform, cast to its declared type (each may use the ones before it)."""
    for transform in transforms:
        df = df.withColumn(transform.name, F.expr(transform.expression).try_cast(field_spark_type(transform.type)))
    return df
