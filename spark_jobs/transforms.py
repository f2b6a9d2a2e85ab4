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

from clearflow_spec.clickhouse_types import (
    INT_RANGES,
    IPV4_PATTERN,
    IPV6_PATTERN,
    ClickHouseType,
    decimal_precision_scale,
    parse_clickhouse_type,
)
from clearflow_spec.field_types import (
    EPOCH_NUMBER_PATTERN,
    FIELD_TYPES,
    UUID_PATTERN,
    always_fits,
    field_spark_type,
    field_type_shape,
    is_nested,
)
from clearflow_spec.limits import ROW_BYTES
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


@dataclass(frozen=True)
class SinkColumn:
    field: str
    column: str
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


def _hex_lower(text: Column) -> Column:
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
    "uuid": lambda raw: F.when(raw.rlike(UUID_PATTERN), _hex_lower(raw)),
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


# --- mapping to ClickHouse columns -------------------------------------------------------------------------


def insert_columns(columns: Sequence[SinkColumn]) -> list[tuple[str, str]]:
    """(name in the batch, name in ClickHouse) of what an insert writes, in order: a Nested column is its arrays
    (`items.sku`, `items.qty`), which the batch names without the dot (Spark reads a dot as a struct's member)."""
    names = []
    for column in columns:
        ch_type = parse_clickhouse_type(column.type)
        if ch_type.base().name == "Nested":
            names += [
                (_nested_part(column.column, str(name)), f"{column.column}.{name}") for name, _ in ch_type.base().args
            ]
        else:
            names.append((column.column, column.column))
    return names


def _nested_part(column: str, name: str) -> str:
    return f"_cf_nested_{len(column)}_{column}_{name}"


def needs_check(field_type: str, ch_type: str) -> bool:
    """Whether a value of `field_type` may fail to fit a `ch_type` column."""
    return not always_fits(field_type, ch_type)


def to_clickhouse(value: Column, field_type: str, ch_type: ClickHouseType) -> tuple[Column, Column]:
    """(value ready for an Arrow insert into `ch_type`, validity) for a value of `field_type`.

    Validity is false where a non-NULL value cannot be written (the event becomes a dead letter); NULL in a
    non-Nullable column is written as the column default (ClickHouse's input_format_null_as_default).
    """
    base = ch_type.base()
    name = base.name
    if is_nested(field_type):
        shape = field_type_shape(field_type)
        reason = nested_columns.write_reason(value, shape, ch_type, F.lit(""), to_clickhouse)
        return nested_columns.write(value, shape, ch_type, to_clickhouse), reason.isNull()
    if always_fits(field_type, base):
        return value, F.lit(True)
    ok_if = value.isNull()
    if name in ("Enum8", "Enum16"):
        out = value.cast("string")
        return out, ok_if | out.isin(*[label for label, _number in base.args])
    if name in ("String", "FixedString", "JSON"):
        if field_type == "datetime":
            out = F.date_format(value, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
        else:
            out = value.cast("string")
        valid = F.lit(True)
        if name == "FixedString":
            valid = F.octet_length(out) <= F.lit(base.args[0])
        if name == "JSON":
            valid = F.ltrim(out).startswith("{") & F.try_parse_json(out).isNotNull()
        return out, ok_if | valid
    if name == "UUID":
        out = value.cast("string")
        return _hex_lower(out), ok_if | out.rlike(UUID_PATTERN)
    if name == "IPv4":
        out = value.cast("string")
        return out, ok_if | out.rlike(IPV4_PATTERN)
    if name == "IPv6":
        out = value.cast("string")
        return out, ok_if | out.rlike(IPV6_PATTERN)
    if name in INT_RANGES:
        if field_type == "bool":
            out = value.cast("bigint")
        elif field_type == "string":
            out = F.trim(value).try_cast("bigint")
        else:
            out = value.try_cast("bigint")
        low, high = INT_RANGES[name]
        valid = out.isNotNull()
        if low is not None:
            valid = valid & (out >= F.lit(low))
        if high is not None:
            valid = valid & (out <= F.lit(high))
        return out, ok_if | valid
    if name in ("Float32", "Float64", "BFloat16"):
        out = value.try_cast("double")
        return out, ok_if | out.isNotNull()
    if name.startswith("Decimal"):
        precision, scale = decimal_precision_scale(base)
        precision = min(precision, 38)  # Spark's widest decimal
        scale = min(int(scale), precision)
        out = value.try_cast(f"decimal({precision},{scale})")
        return out, ok_if | out.isNotNull()
    if name == "Bool":
        if field_type == "bool":
            out = value
        elif field_type == "int":
            out = F.when(value == 1, F.lit(True)).when(value == 0, F.lit(False))
        else:
            out = convert_text(value.cast("string"), "bool")
        return out, ok_if | out.isNotNull()
    if name in ("Date", "Date32"):
        out = F.to_date(value) if field_type == "datetime" else value.cast("string").try_cast("date")
        return out, ok_if | out.isNotNull()
    if name in ("DateTime", "DateTime64"):
        out = value if field_type == "datetime" else convert_text(value.cast("string"), "datetime")
        return out, ok_if | out.isNotNull()
    raise ValueError(f"ClickHouse type {ch_type.sql()} is not supported for writing")


def _in_exploded(field: str, explode: str | None) -> bool:
    return explode is not None and (field == explode or field.startswith(f"{explode}."))


def _exploded_reason(column: SinkColumn, field_type: str, ch_type: ClickHouseType, explode: str) -> Column:
    """Before the explode: the reason any element of the array does not fit the column its rows map it to,
    naming the element (`field 'items[3].qty': cannot write 'x' to UInt32`)."""
    rest = column.field[len(explode) + 1 :]
    shape = field_type_shape(field_type)

    def element(x: Column, i: Column) -> Column:
        for part in rest.split(".") if rest else []:
            x = x.getField(part)
        path = F.concat(F.lit(f"{explode}["), i.cast("string"), F.lit("]" + (f".{rest}" if rest else "")))
        return nested_columns.write_reason(x, shape, ch_type, path, to_clickhouse)

    return F.get(F.filter(F.transform(path_col(explode), element), lambda r: r.isNotNull()), 0)


def _column_reasons(
    columns: Sequence[SinkColumn], field_types: dict[str, str], explode: str | None = None
) -> list[tuple[SinkColumn, Column]]:
    result = []
    for column in columns:
        ch_type = parse_clickhouse_type(column.type)
        if _in_exploded(column.field, explode):
            assert explode is not None
            result.append((column, _exploded_reason(column, field_types[column.field], ch_type, explode)))
            continue
        if is_nested(field_types[column.field]):
            shape = field_type_shape(field_types[column.field])
            path = F.lit(column.field)
            result.append(
                (column, nested_columns.write_reason(path_col(column.field), shape, ch_type, path, to_clickhouse))
            )
            continue
        _out, valid = to_clickhouse(path_col(column.field), field_types[column.field], ch_type)
        reason = F.when(
            ~valid,
            F.concat(
                F.lit(f"column '{column.column}': cannot write '"),
                F.substring(path_col(column.field).cast("string"), 1, 200),
                F.lit(f"' to {ch_type.sql()}"),
            ),
        )
        result.append((column, reason))
    return result


_TEXT_COLUMNS = ("String", "FixedString", "JSON")
_FIXED_WIDTH = 16  # bytes counted for a column that is not text: the widest (UUID, Int128, Decimal128)


def row_bytes(columns: Sequence[SinkColumn], field_types: dict[str, str]) -> Column:
    """The size of an event's row as written to ClickHouse: text columns by their UTF-8 bytes, every other
    column by a fixed width."""
    text = []
    fixed = 0
    for column in columns:
        ch_type = parse_clickhouse_type(column.type)
        if is_nested(field_types[column.field]):
            text.append(F.coalesce(F.octet_length(F.to_json(path_col(column.field))), F.lit(0)))
        elif ch_type.base().name in _TEXT_COLUMNS:
            out, _valid = to_clickhouse(path_col(column.field), field_types[column.field], ch_type)
            text.append(F.coalesce(F.octet_length(out), F.lit(0)))
        else:
            fixed += _FIXED_WIDTH
    total = F.lit(fixed)
    for size in text:
        total = total + size
    return total


def row_size_reason(size: Column, max_row_bytes: int) -> Column:
    """The dead-letter reason of a row over `max_row_bytes` (NULL for the others)."""
    return F.when(
        size > F.lit(max_row_bytes),
        F.concat(
            F.lit("row too large: "),
            size.cast("string"),
            F.lit(f" bytes after conversion, at most {max_row_bytes:,} (cap: {ROW_BYTES.name})"),
        ),
    )


def check_columns(
    df: DataFrame,
    columns: Sequence[SinkColumn],
    field_types: dict[str, str],
    *,
    max_row_bytes: int = ROW_BYTES.maximum,
    explode: str | None = None,
) -> DataFrame:
    """Dead-letter events whose value cannot be written to its column, or whose row would be over
    `max_row_bytes` (before dedup, so a bad event does not take its key's place). With `explode`, the columns
    an array's elements fill are checked element by element (an element's row size is checked as it is written)."""
    reasons = [reason for _, reason in _column_reasons(columns, field_types, explode)]
    if not reasons:
        return df
    whole = [c for c in columns if not _in_exploded(c.field, explode)]
    reasons.append(row_size_reason(row_bytes(whole, field_types), max_row_bytes))
    return df.withColumn(ERROR, F.coalesce(F.col(ERROR), *reasons))


def map_columns(
    df: DataFrame,
    columns: Sequence[SinkColumn],
    field_types: dict[str, str],
    *,
    max_row_bytes: int = ROW_BYTES.maximum,
) -> DataFrame:
    """Select the sink columns (named as in ClickHouse) plus the dead-letter columns; a value that cannot
    be written to its column, or a row over `max_row_bytes` once converted, turns the event into a dead letter.
    A row over the cap does not carry its values further (they are NULL; its dead letter keeps the record)."""
    size = row_bytes(columns, field_types)
    too_large = F.coalesce(size > F.lit(max_row_bytes), F.lit(False))
    outputs = []
    for column in columns:
        ch_type = parse_clickhouse_type(column.type)
        if ch_type.base().name == "Nested":
            shape = field_type_shape(field_types[column.field])
            parts = nested_columns.nested_parts(path_col(column.field), shape, ch_type, to_clickhouse)
            outputs += [F.when(~too_large, part).alias(_nested_part(column.column, name)) for name, part in parts]
            continue
        out, _valid = to_clickhouse(path_col(column.field), field_types[column.field], ch_type)
        outputs.append(F.when(~too_large, out).alias(column.column))
    reasons = [reason for _, reason in _column_reasons(columns, field_types)]
    error = F.coalesce(F.col(ERROR), *reasons, row_size_reason(size, max_row_bytes))
    with_error = df.withColumn(ERROR, error)
    is_dead = F.col(ERROR).isNotNull()
    dead = [
        F.when(is_dead, F.col("_cf_value").cast("string")).alias("_cf_dlq_raw"),
        F.when(is_dead, F.col("_kafka_topic")).alias("_cf_dlq_topic"),
        F.when(is_dead, F.col("_kafka_partition")).alias("_cf_dlq_partition"),
        F.when(is_dead, F.col("_kafka_offset")).alias("_cf_dlq_offset"),
        F.when(is_dead, F.col("_kafka_timestamp")).alias("_cf_dlq_timestamp"),
    ]
    return with_error.select(*outputs, *dead, ERROR)
