"""The mapping of a pipeline's fields to its ClickHouse columns, as DataFrame -> DataFrame steps: each value made
ready for an Arrow insert into its column's type, and the dead-letter reason of a value or a row that cannot be
written (`check_columns` before dedup, `map_columns` at the end; `spark_jobs.pipeline` composes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from clearflow_spec.clickhouse_types import (
    INT_RANGES,
    IPV4_PATTERN,
    IPV6_PATTERN,
    ClickHouseType,
    decimal_precision_scale,
    parse_clickhouse_type,
)
from clearflow_spec.field_types import (
    UUID_PATTERN,
    always_fits,
    field_type_shape,
    is_nested,
)
from clearflow_spec.limits import ROW_BYTES
from spark_jobs import nested_columns
from spark_jobs.transforms import ERROR, convert_text, hex_lower, path_col


@dataclass(frozen=True)
class SinkColumn:
    field: str
    column: str
    type: str


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
        return hex_lower(out), ok_if | out.rlike(UUID_PATTERN)
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
