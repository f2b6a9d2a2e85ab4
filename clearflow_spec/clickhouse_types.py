"""ClickHouse column types: the parser, the families of type names, identifier quoting. No Spark, no Django.

Shared by the spec (`clearflow_spec.spec` checks a column's type), the engine (`spark_jobs.transforms` converts
values for a column) and the web app (the mapping, the dead-letter queries).
Entry points: `parse_clickhouse_type(text)` -> `ClickHouseType`, `clickhouse_type_error(text)`, `quote_ident`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_INT_BITS = (8, 16, 32, 64, 128, 256)
_SIMPLE_TYPES = {
    "String",
    "Float32",
    "Float64",
    "BFloat16",
    "Bool",
    "UUID",
    "Date",
    "Date32",
    "IPv4",
    "IPv6",
    *(f"UInt{b}" for b in _INT_BITS),
    *(f"Int{b}" for b in _INT_BITS),
}
_KNOWN_NAMES = _SIMPLE_TYPES | {
    "Nullable",
    "LowCardinality",
    "FixedString",
    "Decimal",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Decimal256",
    "DateTime",
    "DateTime64",
    "JSON",
    "Array",
    "Map",
    "Tuple",
    "Nested",
    "Enum8",
    "Enum16",
}
MAX_TYPE_LENGTH = 1_000
MAX_TYPE_NESTING = 16  # Array(Map(String, Array(...))): the parser recurses once per level
MAX_FIXED_STRING_LENGTH = 65_535
_DECIMAL_MAX_PRECISION = {"Decimal32": 9, "Decimal64": 18, "Decimal128": 38, "Decimal256": 76}


@dataclass(frozen=True)
class ClickHouseType:
    """A parsed ClickHouse type. `args` holds nested types (Nullable, Array, Map...) or ints/strings; a named
    Tuple's and a Nested's elements are (name, type) pairs, an Enum's values (name, number) pairs."""

    name: str
    args: tuple[Any, ...] = ()

    def sql(self) -> str:
        if not self.args:
            return self.name
        parts = []
        for arg in self.args:
            if isinstance(arg, ClickHouseType):
                parts.append(arg.sql())
            elif isinstance(arg, tuple) and isinstance(arg[1], ClickHouseType):
                parts.append(f"{_element_name(arg[0])} {arg[1].sql()}")
            elif isinstance(arg, tuple):
                parts.append(f"{_quote_text(arg[0])} = {arg[1]}")
            elif isinstance(arg, str):
                parts.append(_quote_text(arg))
            else:
                parts.append(str(arg))
        return f"{self.name}({', '.join(parts)})"

    @property
    def nullable(self) -> bool:
        return self.name == "Nullable"

    def base(self) -> ClickHouseType:
        """The type without Nullable() and LowCardinality() wrappers."""
        current = self
        while current.name in ("Nullable", "LowCardinality"):
            current = current.args[0]
        return current

    def __str__(self) -> str:
        return self.sql()


def _quote_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_PLAIN_ELEMENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _element_name(name: str) -> str:
    return name if _PLAIN_ELEMENT_RE.match(name) else quote_ident(name)


def _unquote(token: str) -> str:
    return token[1:-1].replace("\\'", "'").replace("\\\\", "\\")


class _TypeParser:
    _TOKEN_RE = re.compile(
        r"\s*(?:(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>-?\d+)|(?P<str>'(?:[^'\\]|\\.)*')"
        r"|(?P<quoted>`(?:[^`\\]|\\.)+`)|(?P<p>[(),=]))"
    )

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = self._TOKEN_RE.match(text, pos)
            if not match:
                raise ValueError(f"invalid ClickHouse type {text!r}: unexpected {text[pos:].strip()[:10]!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            if token is None:
                raise ValueError(f"invalid ClickHouse type {self.text!r}: unexpected end (missing ')'?)")
            raise ValueError(f"invalid ClickHouse type {self.text!r}: expected {value!r}, got {token[1]!r}")
        self.i += 1
        return token

    def parse(self) -> ClickHouseType:
        result = self.parse_type()
        if self.peek() is not None:
            raise ValueError(f"invalid ClickHouse type {self.text!r}: unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return result

    def parse_args(self) -> list[tuple[str, Any]]:
        """Parenthesised arguments, each ('type', ClickHouseType) | ('num', int) | ('str', str)."""
        args: list[tuple[str, Any]] = []
        if self.peek() != ("p", "("):
            return args
        self.take("(")
        while True:
            token = self.peek()
            if token is None:
                raise ValueError(f"invalid ClickHouse type {self.text!r}: missing ')'")
            following = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
            if token[0] == "num":
                self.take()
                args.append(("num", int(token[1])))
            elif token[0] == "str" and following == ("p", "="):
                self.take()
                self.take("=")
                kind, number = self.take()
                if kind != "num":
                    raise ValueError(f"invalid ClickHouse type {self.text!r}: an Enum value needs a number")
                args.append(("enum", (_unquote(token[1]), int(number))))
            elif token[0] == "str":
                self.take()
                args.append(("str", _unquote(token[1])))
            elif token[0] == "quoted" or (token[0] == "ident" and following is not None and following[0] == "ident"):
                self.take()
                name = token[1][1:-1].replace("\\`", "`").replace("\\\\", "\\") if token[0] == "quoted" else token[1]
                args.append(("element", (name, self.parse_type())))
            else:
                args.append(("type", self.parse_type()))
            token = self.take()
            if token[1] == ")":
                return args
            if token[1] != ",":
                raise ValueError(f"invalid ClickHouse type {self.text!r}: expected ',' or ')'")

    def parse_type(self) -> ClickHouseType:
        kind, name = self.take()
        if kind != "ident":
            raise ValueError(f"invalid ClickHouse type {self.text!r}: expected a type name, got {name!r}")
        if name not in _KNOWN_NAMES:
            hint = next((k for k in sorted(_KNOWN_NAMES) if k.lower() == name.lower()), None)
            suffix = f" (did you mean '{hint}'?)" if hint else ""
            raise ValueError(f"unknown ClickHouse type '{name}'{suffix}")
        args = self.parse_args()

        def fail(why: str) -> ValueError:
            return ValueError(f"invalid ClickHouse type {self.text!r}: {why}")

        kinds = [a[0] for a in args]
        values = [a[1] for a in args]
        if name in _SIMPLE_TYPES:
            if args:
                raise fail(f"{name} takes no arguments")
            return ClickHouseType(name)
        if name in ("Nullable", "LowCardinality", "Array"):
            if kinds != ["type"]:
                raise fail(f"{name} needs one type argument, e.g. {name}(String)")
            inner: ClickHouseType = values[0]
            if name == "Nullable" and inner.name in (
                "Nullable",
                "Array",
                "Map",
                "LowCardinality",
                "JSON",
                "Tuple",
                "Nested",
            ):
                raise fail(f"Nullable({inner.name}) is not allowed")
            if name == "LowCardinality" and inner.base().name not in (
                "String",
                "FixedString",
                "Date",
                "Date32",
                "DateTime",
                "UUID",
                "IPv4",
                "IPv6",
                *(f"UInt{b}" for b in _INT_BITS),
                *(f"Int{b}" for b in _INT_BITS),
                "Float32",
                "Float64",
            ):
                raise fail(f"LowCardinality({inner.sql()}) is not allowed")
            return ClickHouseType(name, (inner,))
        if name == "Map":
            if kinds != ["type", "type"]:
                raise fail("Map needs two type arguments, e.g. Map(String, UInt64)")
            if values[0].nullable:
                raise fail("a Map key cannot be Nullable")
            return ClickHouseType(name, tuple(values))
        if name == "FixedString":
            if kinds != ["num"] or not 1 <= values[0] <= MAX_FIXED_STRING_LENGTH:
                raise fail(f"FixedString needs a length 1..{MAX_FIXED_STRING_LENGTH}, e.g. FixedString(16)")
            return ClickHouseType(name, (values[0],))
        if name == "Decimal":
            if kinds not in (["num"], ["num", "num"]):
                raise fail("Decimal needs (precision, scale), e.g. Decimal(18, 4)")
            precision, scale = values[0], (values[1] if len(values) > 1 else 0)
            if not 1 <= precision <= 76 or not 0 <= scale <= precision:
                raise fail("Decimal precision must be 1..76 and scale 0..precision")
            return ClickHouseType(name, (precision, scale))
        if name in _DECIMAL_MAX_PRECISION:
            if kinds != ["num"] or not 0 <= values[0] <= _DECIMAL_MAX_PRECISION[name]:
                raise fail(f"{name} needs a scale 0..{_DECIMAL_MAX_PRECISION[name]}")
            return ClickHouseType(name, (values[0],))
        if name == "DateTime":
            if kinds not in ([], ["str"]):
                raise fail("DateTime takes an optional time zone, e.g. DateTime('UTC')")
            return ClickHouseType(name, tuple(values))
        if name == "DateTime64":
            if kinds not in (["num"], ["num", "str"]) or not 0 <= values[0] <= 9:
                raise fail("DateTime64 needs a precision 0..9 and an optional time zone, e.g. DateTime64(3, 'UTC')")
            return ClickHouseType(name, tuple(values))
        if name in ("Tuple", "Nested"):
            if not args or any(kind not in ("type", "element") for kind in kinds):
                raise fail(f"{name} needs element types, e.g. {name}(sku String, qty UInt32)")
            if name == "Nested" and "type" in kinds:
                raise fail("each element of a Nested is named, e.g. Nested(sku String, qty UInt32)")
            if "type" in kinds and "element" in kinds:
                raise fail("a Tuple's elements are all named or none is")
            names = [v[0] for k, v in args if k == "element"]
            if len(set(names)) != len(names):
                raise fail(f"an element of the {name} is named twice")
            return ClickHouseType(name, tuple(values))
        if name in ("Enum8", "Enum16"):
            bits = 8 if name == "Enum8" else 16
            low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            if not args or any(kind != "enum" for kind in kinds):
                raise fail(f"{name} needs its values, e.g. {name}('new' = 1, 'paid' = 2)")
            if any(not low <= number <= high for _, number in values):
                raise fail(f"an {name} value's number is {low}..{high}")
            if len({label for label, _ in values}) != len(values) or len({n for _, n in values}) != len(values):
                raise fail(f"an {name} names a value or a number twice")
            return ClickHouseType(name, tuple(values))
        if name == "JSON":
            if args:
                raise fail("JSON type parameters are not supported; use JSON")
            return ClickHouseType(name)
        raise fail("unsupported type")  # pragma: no cover - every known name is handled above


def parse_clickhouse_type(text: str) -> ClickHouseType:
    """Parse a ClickHouse column type; raises ValueError such as "unknown ClickHouse type 'Strng'"."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty ClickHouse type")
    if len(text) > MAX_TYPE_LENGTH:
        raise ValueError(f"ClickHouse type is too long: {len(text):,} characters, at most {MAX_TYPE_LENGTH:,}")
    depth = 0
    for char in text:  # quotes cannot hold parentheses in the types accepted (time zone names)
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth > MAX_TYPE_NESTING:
            raise ValueError(f"ClickHouse type is nested too deeply: at most {MAX_TYPE_NESTING} levels")
    return _TypeParser(text).parse()


def clickhouse_type_error(text: str) -> str | None:
    """None when `text` is a supported ClickHouse type, else the reason."""
    try:
        parse_clickhouse_type(text)
    except ValueError as exc:
        return str(exc)
    return None


# --- families of base type names (without Nullable/LowCardinality) -----------------------------------------

INTEGER_NAMES = frozenset({f"UInt{b}" for b in _INT_BITS} | {f"Int{b}" for b in _INT_BITS})
FLOAT_NAMES = frozenset({"Float32", "Float64", "BFloat16"})
DECIMAL_NAMES = frozenset({"Decimal", *_DECIMAL_MAX_PRECISION})
STRING_NAMES = frozenset({"String", "FixedString"})
ENUM_NAMES = frozenset({"Enum8", "Enum16"})
# The value range of each integer type (None: wider than Spark's bigint, so no bound is checked).
INT_RANGES: dict[str, tuple[int | None, int | None]] = {
    "UInt8": (0, 2**8 - 1),
    "UInt16": (0, 2**16 - 1),
    "UInt32": (0, 2**32 - 1),
    "UInt64": (0, None),
    "UInt128": (0, None),
    "UInt256": (0, None),
    "Int8": (-(2**7), 2**7 - 1),
    "Int16": (-(2**15), 2**15 - 1),
    "Int32": (-(2**31), 2**31 - 1),
    "Int64": (None, None),
    "Int128": (None, None),
    "Int256": (None, None),
}


# What a value written as text to an IPv4 / IPv6 column must look like (Java regex syntax, for Spark's rlike).
IPV4_PATTERN = r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"
IPV6_PATTERN = r"^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*$"


def decimal_precision_scale(parsed: ClickHouseType) -> tuple[int, int]:
    """(precision, scale) of a Decimal type: Decimal(P, S) or Decimal32/64/128/256(S)."""
    base = parsed.base()
    if base.name == "Decimal":
        return int(base.args[0]), int(base.args[1])
    return _DECIMAL_MAX_PRECISION[base.name], int(base.args[0])


def quote_ident(name: str) -> str:
    """A ClickHouse identifier in backquotes, backslashes and backquotes escaped (the one quoting in the code)."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


__all__ = [
    "DECIMAL_NAMES",
    "ENUM_NAMES",
    "FLOAT_NAMES",
    "INTEGER_NAMES",
    "INT_RANGES",
    "IPV4_PATTERN",
    "IPV6_PATTERN",
    "MAX_TYPE_LENGTH",
    "MAX_TYPE_NESTING",
    "STRING_NAMES",
    "ClickHouseType",
    "clickhouse_type_error",
    "decimal_precision_scale",
    "parse_clickhouse_type",
    "quote_ident",
]
