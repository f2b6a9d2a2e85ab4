"""Nested field values in Spark: read from their JSON text, checked element by element, written to Array, Map,
Tuple and Nested columns (or as JSON text to String/JSON). The shapes are `clearflow_spec.nested_types`'.

An element that does not convert, or does not fit its column, gives a dead-letter reason naming the element's
path: `field 'items[3].qty': cannot write 'x' to UInt32` (indexes from 0, a map's key as a member: `attrs.color`).
The scalar rules are `spark_jobs.transforms`' (`convert_text`, `to_clickhouse`), handed in by the caller, which
imports this module (not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from clearflow_spec.clickhouse_types import ClickHouseType
from clearflow_spec.nested_types import ARRAY, MAP, SCALAR, STRUCT, FieldShape, tuple_members

ConvertText = Callable[[Column, str], Column]  # (JSON text, scalar type) -> value or NULL
ToClickHouse = Callable[[Column, str, ClickHouseType], tuple[Column, Column]]  # -> (value out, valid)


def _none() -> Column:
    return F.lit(None).cast("string")


def text_schema(shape: FieldShape) -> DataType:
    """The Spark type that reads a value of `shape` from JSON with every scalar as its text."""
    if shape.kind == SCALAR:
        return StringType()
    if shape.kind == ARRAY:
        return ArrayType(text_schema(shape.elem), True)
    if shape.kind == MAP:
        return MapType(StringType(), text_schema(shape.elem), True)
    return StructType([StructField(name, text_schema(member), True) for name, member in shape.members])


def read_text(raw: Column, shape: FieldShape) -> Column:
    """A value's JSON text -> the value with every scalar as text (NULL when it is not of the shape's kind)."""
    return F.from_json(raw, text_schema(shape), {"mode": "PERMISSIVE"})


def typed(text: Column, shape: FieldShape, convert_text: ConvertText) -> Column:
    """The text-leaved value -> the typed value (a scalar that does not convert is NULL; `reason` says why)."""
    if shape.kind == SCALAR:
        return convert_text(text, shape.name)
    if shape.kind == ARRAY:
        return F.transform(text, lambda x: typed(x, shape.elem, convert_text))
    if shape.kind == MAP:
        return F.transform_values(text, lambda _k, v: typed(v, shape.elem, convert_text))
    return F.when(
        text.isNotNull(),
        F.struct(*[typed(text.getField(name), member, convert_text).alias(name) for name, member in shape.members]),
    )


def _first(reasons: Column) -> Column:
    """The first non-NULL reason of an array of reasons (NULL when there is none)."""
    return F.get(F.filter(reasons, lambda r: r.isNotNull()), 0)


def _index(path: Column, i: Column) -> Column:
    return F.concat(path, F.lit("["), i.cast("string"), F.lit("]"))


def _key(path: Column, key: Column) -> Column:
    return F.concat(path, F.lit("."), key)


def _member(path: Column, name: str) -> Column:
    return F.concat(path, F.lit(f".{name}"))


def convert_reason(text: Column, shape: FieldShape, path: Column, convert_text: ConvertText) -> Column:
    """The reason a text-leaved value does not convert to `shape` (NULL when every scalar converts)."""
    if not shape.scalars() - {"string", "json"}:
        return _none()
    if shape.kind == SCALAR:
        converted = convert_text(text, shape.name)
        return F.when(
            text.isNotNull() & converted.isNull(),
            F.concat(
                F.lit("field '"), path, F.lit("': cannot convert '"), F.substring(text, 1, 200), F.lit(f"' to {shape}")
            ),
        )
    if shape.kind == ARRAY:
        return _first(F.transform(text, lambda x, i: convert_reason(x, shape.elem, _index(path, i), convert_text)))
    if shape.kind == MAP:
        return _first(
            F.map_values(
                F.transform_values(text, lambda k, v: convert_reason(v, shape.elem, _key(path, k), convert_text))
            )
        )
    return F.coalesce(
        *[
            convert_reason(text.getField(name), member, _member(path, name), convert_text)
            for name, member in shape.members
        ]
    )


def not_of_shape_reason(raw: Column, text: Column, shape: FieldShape, path: str) -> Column:
    """The reason a value's JSON text is not an array/object at all (`"items": "none"` for an array field)."""
    what = {ARRAY: "an array", MAP: "an object", STRUCT: "an object"}[shape.kind]
    return F.when(
        raw.isNotNull() & text.isNull(),
        F.concat(
            F.lit(f"field '{path}': cannot convert '"), F.substring(raw, 1, 200), F.lit(f"' to {shape}: not {what}")
        ),
    )


# --- writing ------------------------------------------------------------------------------------------------------


def write(value: Column, shape: FieldShape, ch: ClickHouseType, to_clickhouse: ToClickHouse) -> Column:
    """A typed value of `shape` made ready for an Arrow insert into `ch` (a Nested column: see `nested_parts`)."""
    base = ch.base()
    if shape.kind == SCALAR:
        return to_clickhouse(value, shape.name, ch)[0]
    if base.name in ("String", "JSON"):
        return F.to_json(value)
    if base.name == "Array":
        return F.transform(value, lambda x: write(x, shape.elem, base.args[0], to_clickhouse))
    if base.name == "Nested":
        return F.transform(value, lambda x: _write_tuple(x, shape.elem, base, to_clickhouse))
    if base.name == "Map":
        return F.transform_values(value, lambda _k, v: write(v, shape.elem, base.args[1], to_clickhouse))
    return _write_tuple(value, shape, base, to_clickhouse)


def _write_tuple(value: Column, shape: FieldShape, ch: ClickHouseType, to_clickhouse: ToClickHouse) -> Column:
    """A struct as a named Tuple: the Tuple's elements in its order, by name (ClickHouse matches Arrow's by name)."""
    parts = []
    for name, element in tuple_members(ch):
        member = shape.member(str(name))
        assert member is not None  # the spec check refuses a Tuple element the struct lacks
        parts.append(write(value.getField(str(name)), member, element, to_clickhouse).alias(str(name)))
    return F.when(value.isNotNull(), F.struct(*parts))


def nested_parts(
    value: Column, shape: FieldShape, ch: ClickHouseType, to_clickhouse: ToClickHouse
) -> list[tuple[str, Column]]:
    """A Nested(a T, b U) column is stored as arrays `col.a`, `col.b`: (suffix, array) for each element."""
    base = ch.base()
    parts = []
    for name, element in tuple_members(base):
        member = shape.elem.member(str(name))
        assert member is not None
        parts.append((str(name), F.transform(value, _member_writer(str(name), member, element, to_clickhouse))))
    return parts


def _member_writer(
    name: str, shape: FieldShape, ch: ClickHouseType, to_clickhouse: ToClickHouse
) -> Callable[[Column], Column]:
    return lambda x: write(x.getField(name), shape, ch, to_clickhouse)


def write_reason(
    value: Column, shape: FieldShape, ch: ClickHouseType, path: Column, to_clickhouse: ToClickHouse
) -> Column:
    """The reason a typed value does not fit `ch`, naming the element (NULL when it fits)."""
    base = ch.base()
    if shape.kind == SCALAR:
        _out, valid = to_clickhouse(value, shape.name, ch)
        shown = value.cast("string")
        return F.when(
            ~valid,
            F.concat(
                F.lit("field '"),
                path,
                F.lit("': cannot write '"),
                F.substring(shown, 1, 200),
                F.lit(f"' to {ch.sql()}"),
            ),
        )
    if base.name in ("String", "JSON"):
        return _none()  # its JSON text (JSON takes a map's or a struct's only: the spec check says so)
    if base.name == "Array":
        return _first(
            F.transform(value, lambda x, i: write_reason(x, shape.elem, base.args[0], _index(path, i), to_clickhouse))
        )
    if base.name == "Nested":
        return _first(
            F.transform(value, lambda x, i: _tuple_reason(x, shape.elem, base, _index(path, i), to_clickhouse))
        )
    if base.name == "Map":
        return _first(
            F.map_values(
                F.transform_values(
                    value, lambda k, v: write_reason(v, shape.elem, base.args[1], _key(path, k), to_clickhouse)
                )
            )
        )
    return _tuple_reason(value, shape, base, path, to_clickhouse)


def _tuple_reason(
    value: Column, shape: FieldShape, ch: ClickHouseType, path: Column, to_clickhouse: ToClickHouse
) -> Column:
    reasons = []
    for name, element in tuple_members(ch):
        member = shape.member(str(name))
        assert member is not None
        reasons.append(
            write_reason(value.getField(str(name)), member, element, _member(path, str(name)), to_clickhouse)
        )
    return F.coalesce(*reasons)


__all__ = [
    "convert_reason",
    "nested_parts",
    "not_of_shape_reason",
    "read_text",
    "text_schema",
    "typed",
    "write",
    "write_reason",
]
