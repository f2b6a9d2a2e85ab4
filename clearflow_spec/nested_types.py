"""The nested field types: `array<T>`, `map<string,T>` and `struct<name:T,...>` in Spark's DDL spelling, over the
scalar types of `clearflow_spec.field_types`. Parsed once into a `FieldShape`; what each shape is in Spark, which
ClickHouse columns take it (`Array`, `Map`, named `Tuple`, `Nested`, or its JSON text in `String`/`JSON`), the
column proposed for it, and how a JSON value's shape is inferred and two shapes merged. No Spark, no Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clearflow_spec.clickhouse_types import MAX_TYPE_LENGTH, MAX_TYPE_NESTING, ClickHouseType

SCALAR = "scalar"
ARRAY = "array"
MAP = "map"
STRUCT = "struct"
# A member name written plain in `struct<...>`; any other name is written in backquotes.
_PLAIN_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN_RE = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<quoted>`(?:[^`]|``)+`)|(?P<p>[<>,:]))")


@dataclass(frozen=True)
class FieldShape:
    """A parsed field type: a scalar (`name` from the field-type table), or an array/map of `element`, or a
    struct of `members` (name, shape) in their order."""

    kind: str
    name: str = ""
    element: FieldShape | None = None
    members: tuple[tuple[str, FieldShape], ...] = ()

    @property
    def nested(self) -> bool:
        return self.kind != SCALAR

    def ddl(self) -> str:
        """The type in its one spelling (no spaces): `array<struct<sku:string,qty:int>>`."""
        if self.kind == SCALAR:
            return self.name
        if self.kind == ARRAY:
            return f"array<{self.elem.ddl()}>"
        if self.kind == MAP:
            return f"map<string,{self.elem.ddl()}>"
        return "struct<" + ",".join(f"{member_name(n)}:{s.ddl()}" for n, s in self.members) + ">"

    @property
    def elem(self) -> FieldShape:
        if self.element is None:
            raise ValueError(f"a {self.kind} type has no element type")
        return self.element

    def member(self, name: str) -> FieldShape | None:
        return next((shape for member, shape in self.members if member == name), None)

    def scalars(self) -> set[str]:
        """The scalar type names it holds."""
        if self.kind == SCALAR:
            return {self.name}
        if self.kind == STRUCT:
            return set().union(*(shape.scalars() for _, shape in self.members))
        return self.elem.scalars()

    def __str__(self) -> str:
        return self.ddl()


def member_name(name: str) -> str:
    return name if _PLAIN_NAME_RE.match(name) else "`" + name.replace("`", "``") + "`"


def scalar(name: str) -> FieldShape:
    return FieldShape(SCALAR, name=name)


def array_of(element: FieldShape) -> FieldShape:
    return FieldShape(ARRAY, element=element)


def map_of(element: FieldShape) -> FieldShape:
    return FieldShape(MAP, element=element)


def struct_of(members: list[tuple[str, FieldShape]] | tuple[tuple[str, FieldShape], ...]) -> FieldShape:
    return FieldShape(STRUCT, members=tuple(members))


class _ShapeParser:
    def __init__(self, text: str, scalars: frozenset[str]) -> None:
        self.text, self.scalars = text, scalars
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while text[pos:].strip():
            match = _TOKEN_RE.match(text, pos)
            if not match:
                raise self.fail(f"unexpected {text[pos:].strip()[:10]!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0

    def fail(self, why: str) -> ValueError:
        return ValueError(f"invalid field type {self.text!r}: {why}")

    def take(self, value: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise self.fail(f"unexpected end (missing {value or '>'!r}?)")
        token = self.tokens[self.i]
        if value is not None and token[1] != value:
            raise self.fail(f"expected {value!r}, got {token[1]!r}")
        self.i += 1
        return token

    def parse(self) -> FieldShape:
        shape = self.shape(1)
        if self.i < len(self.tokens):
            raise self.fail(f"unexpected {self.tokens[self.i][1]!r}")
        return shape

    def shape(self, depth: int) -> FieldShape:
        if depth > MAX_TYPE_NESTING:
            raise self.fail(f"nested too deeply: at most {MAX_TYPE_NESTING} levels")
        kind, word = self.take()
        if kind != "name":
            raise self.fail(f"expected a type name, got {word!r}")
        lowered = word.lower()
        if lowered == ARRAY:
            self.take("<")
            element = self.shape(depth + 1)
            self.take(">")
            return array_of(element)
        if lowered == MAP:
            self.take("<")
            key = self.take()[1]
            if key.lower() != "string":
                raise self.fail(f"a map's keys are strings: map<string,T>, not map<{key},...>")
            self.take(",")
            element = self.shape(depth + 1)
            self.take(">")
            return map_of(element)
        if lowered == STRUCT:
            self.take("<")
            members: list[tuple[str, FieldShape]] = []
            while True:
                kind, name = self.take()
                if kind == "quoted":
                    name = name[1:-1].replace("``", "`")
                elif kind != "name":
                    raise self.fail(f"expected a member name, got {name!r}")
                if any(name == seen for seen, _ in members):
                    raise self.fail(f"member {name!r} is named twice")
                self.take(":")
                members.append((name, self.shape(depth + 1)))
                if self.take()[1] == ">":
                    return struct_of(members)
                self.i -= 1
                self.take(",")
        if word not in self.scalars:
            raise ValueError(
                f"unknown field type {word!r}; expected one of {', '.join(sorted(self.scalars))}, "
                "array<T>, map<string,T> or struct<name:T,...>"
            )
        return scalar(word)


def parse_shape(text: str, scalars: frozenset[str]) -> FieldShape:
    """A field type's text -> its shape; ValueError in words for a type that is not one."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty field type")
    if len(text) > MAX_TYPE_LENGTH:
        raise ValueError(f"field type is too long: {len(text):,} characters, at most {MAX_TYPE_LENGTH:,}")
    return _ShapeParser(text, scalars).parse()


def shape_spark_type(shape: FieldShape, spark_of: Any) -> str:
    """The Spark SQL type of a value of `shape`, `spark_of(name)` giving each scalar's."""
    if shape.kind == SCALAR:
        return str(spark_of(shape.name))
    if shape.kind == ARRAY:
        return f"array<{shape_spark_type(shape.elem, spark_of)}>"
    if shape.kind == MAP:
        return f"map<string,{shape_spark_type(shape.elem, spark_of)}>"
    members = ",".join(f"`{n.replace('`', '``')}`:{shape_spark_type(s, spark_of)}" for n, s in shape.members)
    return f"struct<{members}>"


def tuple_members(ch: ClickHouseType) -> list[tuple[str | None, ClickHouseType]]:
    """(name, type) of a Tuple's or Nested's elements (name None in an unnamed Tuple)."""
    return [(arg[0], arg[1]) if isinstance(arg, tuple) else (None, arg) for arg in ch.args]


def shape_compatible(shape: FieldShape, ch: ClickHouseType, scalar_compatible: Any) -> bool:
    """Whether values of a nested shape can be written to `ch`: an array to Array (a struct array to Nested too),
    a map to Map(String, _), a struct to a named Tuple whose every element is a member, and any of them to
    String or JSON (as JSON text; JSON takes objects only, so not an array)."""
    base = ch.base()
    if shape.kind == SCALAR:
        return bool(scalar_compatible(shape.name, ch))
    if base.name == "String":
        return True
    if base.name == "JSON":
        return shape.kind in (MAP, STRUCT)
    if shape.kind == ARRAY:
        if base.name == "Array":
            return _element_compatible(shape.elem, base.args[0], scalar_compatible)
        if base.name == "Nested":
            return shape.elem.kind == STRUCT and _members_compatible(shape.elem, base, scalar_compatible)
        return False
    if shape.kind == MAP:
        return (
            base.name == "Map"
            and base.args[0].base().name == "String"
            and _element_compatible(shape.elem, base.args[1], scalar_compatible)
        )
    return base.name == "Tuple" and _members_compatible(shape, base, scalar_compatible)


def _element_compatible(shape: FieldShape, ch: ClickHouseType, scalar_compatible: Any) -> bool:
    return shape_compatible(shape, ch, scalar_compatible)


def _members_compatible(shape: FieldShape, ch: ClickHouseType, scalar_compatible: Any) -> bool:
    members = tuple_members(ch)
    if not members or any(name is None for name, _ in members):
        return False  # a struct is written by member name: an unnamed Tuple has none
    for name, element in members:
        member = shape.member(str(name))
        if member is None or not shape_compatible(member, element, scalar_compatible):
            return False
    return True


def shape_clickhouse_type(shape: FieldShape, scalar_default: Any) -> str:
    """The column proposed for a value of `shape`: Array(T), Map(String, T), Tuple(name T, ...); a scalar inside is
    `scalar_default(name)` made Nullable where ClickHouse allows it (elements can be null in JSON)."""
    if shape.kind == SCALAR:
        return str(scalar_default(shape.name))
    if shape.kind == ARRAY:
        return f"Array({_inner_column(shape.elem, scalar_default)})"
    if shape.kind == MAP:
        return f"Map(String, {_inner_column(shape.elem, scalar_default)})"
    members = ", ".join(f"{_tuple_name(n)} {_inner_column(s, scalar_default)}" for n, s in shape.members)
    return f"Tuple({members})"


def _tuple_name(name: str) -> str:
    return name if _PLAIN_NAME_RE.match(name) else "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _inner_column(shape: FieldShape, scalar_default: Any) -> str:
    column = shape_clickhouse_type(shape, scalar_default)
    if shape.kind != SCALAR or column.startswith(("JSON", "Nullable", "LowCardinality")):
        return column
    return f"Nullable({column})"


def shape_tree(shape: FieldShape) -> list[tuple[int, str, str]]:
    """(depth, name, type) for every part of a nested shape below its top, for an indented tree: an array's
    element is `[]`, a map's value `{}`, a struct's members by name."""
    rows: list[tuple[int, str, str]] = []

    def walk(node: FieldShape, depth: int) -> None:
        if node.kind in (ARRAY, MAP):
            rows.append((depth, "[]" if node.kind == ARRAY else "{}", node.elem.ddl()))
            walk(node.elem, depth + 1)
        elif node.kind == STRUCT:
            for name, member in node.members:
                rows.append((depth, name, member.ddl()))
                walk(member, depth + 1)

    walk(shape, 1)
    return rows


# --- inference from JSON values --------------------------------------------------------------------------------


def merge_shapes(a: FieldShape | None, b: FieldShape | None, merge_scalar: Any) -> FieldShape | None:
    """The narrowest shape holding both (None: not seen yet; a scalar `json` when they cannot be one): arrays and
    maps merge their elements, structs take both members' union."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a.kind == SCALAR and b.kind == SCALAR:
        merged = merge_scalar(a.name, b.name)
        return scalar(merged) if merged else None
    if a.kind != b.kind or a.kind == SCALAR:
        return scalar("json")
    if a.kind in (ARRAY, MAP):
        element = merge_shapes(a.element, b.element, merge_scalar)
        return FieldShape(a.kind, element=element)
    members = dict(a.members)
    for name, shape in b.members:
        members[name] = merge_shapes(members.get(name), shape, merge_scalar) or scalar("string")
    return struct_of(list(members.items()))


def infer_shape(value: Any, scalar_of: Any, merge_scalar: Any, depth: int = 1) -> FieldShape | None:
    """The shape of one JSON value (None for null): a list is an array of its elements' merged shape, an object
    inside a list a struct; an empty list an array of strings. Deeper than the nesting limit: `json`."""
    if value is None:
        return None
    if depth > MAX_TYPE_NESTING // 2:
        return scalar("json")
    if isinstance(value, list):
        element: FieldShape | None = None
        for item in value:
            element = merge_shapes(element, infer_shape(item, scalar_of, merge_scalar, depth + 1), merge_scalar)
        return array_of(_filled(element))
    if isinstance(value, dict) and value and depth > 1:
        members = [(str(k), _filled(infer_shape(v, scalar_of, merge_scalar, depth + 1))) for k, v in value.items()]
        return struct_of(members)
    return scalar(scalar_of(value))


def _filled(shape: FieldShape | None) -> FieldShape:
    """A shape with every part not seen yet (only nulls, empty lists) as `string`."""
    if shape is None:
        return scalar("string")
    if shape.kind in (ARRAY, MAP):
        return FieldShape(shape.kind, element=_filled(shape.element))
    if shape.kind == STRUCT:
        return struct_of([(n, _filled(s)) for n, s in shape.members])
    return shape


__all__ = [
    "ARRAY",
    "MAP",
    "SCALAR",
    "STRUCT",
    "FieldShape",
    "array_of",
    "infer_shape",
    "map_of",
    "member_name",
    "merge_shapes",
    "parse_shape",
    "scalar",
    "shape_clickhouse_type",
    "shape_compatible",
    "shape_spark_type",
    "shape_tree",
    "struct_of",
    "tuple_members",
]
