"""The caps on what a pipeline spec may hold and on the work it may ask for, each described once.

A spec is checked by the web app on every request and by the job before it starts; without caps, one request
could hold the server for minutes (a 55,000-field spec) and one expression could ask a job for terabytes per row
(`repeat` inside `repeat`). Every layer reads this table: the spec's checks (`clearflow_spec.spec`), the expression
checks (`clearflow_spec.expressions`, `clearflow_spec.expression_bounds`), the engine's row check
(`spark_jobs.column_mapping.map_columns`), the schema readers (`clearflow_spec.avro_schema`,
`clearflow_spec.protobuf_schema` and the web app's inference from sampled JSON, through `FlattenBudget`) and the
documentation (docs/pipeline-spec.md lists each cap; a test keeps the two in step). No Spark and no Django here.

A refusal names the cap (`Limit.name`) and the spec path it applies to, e.g.
`source.fields: too many fields: 55,000, at most 1,000 (cap: fields)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limit:
    name: str  # how errors and docs call it
    maximum: int
    unit: str  # what is counted, plural ("fields", "characters")
    paths: tuple[str, ...]  # where it applies: spec paths, `[]` for every item of a list; () for none in the spec
    what: str  # one line for the docs

    def exceeded(self) -> str:
        """What a refusal says when counting stopped at the cap, e.g. "too many fields: more than 10,000 (cap:
        schema_fields)"."""
        return f"too many {self.unit}: more than {self.maximum:,} (cap: {self.name})"

    def refusal(self, count: int) -> str:
        """What a refusal says, e.g. "too many fields: 55,000, at most 1,000 (cap: fields)"."""
        if self.unit == "characters":
            return f"too long: {count:,} characters, at most {self.maximum:,} (cap: {self.name})"
        return f"too many {self.unit}: {count:,}, at most {self.maximum:,} (cap: {self.name})"


_NAMES = (
    "source.fields[].path",
    "dedup.keys[]",
    "dedup.event_time_field",
    "join.source.fields[].path",
    "join.dedup.keys[]",
    "join.keys[].left",
    "join.keys[].right",
    "transforms[].name",
    "sink.table",
    "sink.dlq_table",
    "sink.order_by[]",
    "sink.columns[].field",
    "sink.columns[].column",
)

FIELDS = Limit("fields", 1_000, "fields", ("source.fields", "join.source.fields"), "fields a source declares")
TOPICS = Limit("topics", 100, "topics", ("source.topics", "join.source.topics"), "topics a pipeline reads")
DEDUP_KEYS = Limit("dedup_keys", 10, "keys", ("dedup.keys", "join.dedup.keys", "join.keys"), "fields of the dedup key")
TRANSFORMS = Limit("transforms", 100, "computed fields", ("transforms",), "computed fields")
COLUMNS = Limit("columns", 1_000, "columns", ("sink.columns",), "columns a pipeline writes")
ORDER_BY = Limit("order_by", 16, "columns", ("sink.order_by",), "columns of a new table's ORDER BY")
NAME_LENGTH = Limit("name_length", 255, "characters", _NAMES, "a field path, key, computed field, table or column name")
TYPE_LENGTH = Limit("type_length", 1_000, "characters", ("sink.columns[].type",), "a ClickHouse column type")
EXPRESSION_LENGTH = Limit(
    "expression_length", 10_000, "characters", ("filter", "transforms[].expression"), "one filter or expression"
)
EXPRESSIONS_LENGTH = Limit(
    "expressions_length", 50_000, "characters", ("filter", "transforms"), "the filter and all expressions together"
)
EXPRESSION_NESTING = Limit(
    "expression_nesting", 64, "levels", ("filter", "transforms[].expression"), "brackets nested in an expression"
)
EXPRESSION_DEPTH = Limit(
    "expression_depth", 512, "levels", ("filter", "transforms[].expression"), "operators chained in an expression"
)
EXPRESSION_GROWTH = Limit(
    "expression_growth",
    10_000,
    "times its input",
    ("filter", "transforms[].expression"),
    "how much larger than the event's values an expression's value may be (repeat, lpad, array_repeat... nested "
    "multiply); also the largest count `repeat`, `lpad`, `space`... may take",
)
EXPRESSION_OUTPUT = Limit(
    "expression_output",
    1_000_000,
    "characters",
    ("filter", "transforms[].expression"),
    "the largest value an expression may build from constants alone (e.g. `repeat('ab', 500000)`)",
)
ROW_BYTES = Limit(
    "row_bytes",
    4 * 1024 * 1024,
    "bytes",
    (),
    "an event's row after conversion to its ClickHouse columns; a larger one goes to the dead-letter table",
)
VALIDATION_SECONDS = Limit(
    "validation_seconds", 5, "seconds", (), "time one spec's checks may take before it is refused as too large"
)
SCHEMA_FIELDS = Limit(
    "schema_fields",
    10_000,
    "fields",
    (),
    "fields one Avro or Protobuf schema, or the JSON events of one sample, flatten to (each nested record or "
    "message counted too)",
)
SCHEMA_DEPTH = Limit("schema_depth", 32, "levels", (), "records or messages nested in an Avro or Protobuf schema")
JSON_DEPTH = Limit(
    "json_depth",
    16,
    "levels",
    (),
    "objects nested in a sampled JSON event that become dotted paths; a deeper object is one `json` field",
)

LIMITS: tuple[Limit, ...] = (
    FIELDS,
    TOPICS,
    DEDUP_KEYS,
    TRANSFORMS,
    COLUMNS,
    ORDER_BY,
    NAME_LENGTH,
    TYPE_LENGTH,
    EXPRESSION_LENGTH,
    EXPRESSIONS_LENGTH,
    EXPRESSION_NESTING,
    EXPRESSION_DEPTH,
    EXPRESSION_GROWTH,
    EXPRESSION_OUTPUT,
    ROW_BYTES,
    VALIDATION_SECONDS,
    SCHEMA_FIELDS,
    SCHEMA_DEPTH,
    JSON_DEPTH,
)
# Caps on a count, then on a text's length, checked on the raw spec before anything else is (`size_issues`).
_SIZE_LIMITS = (FIELDS, TOPICS, DEDUP_KEYS, TRANSFORMS, COLUMNS, ORDER_BY, NAME_LENGTH, TYPE_LENGTH, EXPRESSION_LENGTH)


class LimitError(ValueError):
    """Work over one of the caps above; the message is the cap's refusal."""


class FlattenBudget:
    """The fields a schema's flattening has visited and how deep it is, checked at each step: a schema that reuses
    one type at each level names 2^levels fields in a few hundred bytes, so the walk stops at the cap instead of
    after the last field. `error` is what it raises (the schema reader's own error: AvroSchemaError...)."""

    def __init__(self, what: str, error: type[ValueError] = LimitError) -> None:
        self.what, self.error, self.fields = what, error, 0

    def visit(self, depth: int) -> None:
        """Count one field, `depth` levels down (1 at the top); raise `error` once a cap is passed."""
        self.fields += 1
        if self.fields > SCHEMA_FIELDS.maximum:
            raise self.error(f"{self.what}: {SCHEMA_FIELDS.exceeded()}")
        if depth > SCHEMA_DEPTH.maximum:
            raise self.error(f"{self.what} nests records too deep: {SCHEMA_DEPTH.exceeded()}")


def _values_at(data: Any, parts: list[str], path: str) -> Iterator[tuple[str, Any]]:
    """(concrete path, value) for every value at a path such as `sink.columns[].type` (absent ones skipped)."""
    if not parts:
        yield path, data
        return
    part, rest = parts[0], parts[1:]
    if part.endswith("[]"):
        key = part[:-2]
        items = data.get(key) if isinstance(data, dict) else None
        if isinstance(items, list):
            prefix = f"{path}.{key}" if path else key
            for index, item in enumerate(items):
                yield from _values_at(item, rest, f"{prefix}[{index}]")
        return
    if isinstance(data, dict) and part in data:
        yield from _values_at(data[part], rest, f"{path}.{part}" if path else part)


def size_issues(data: Any) -> list[tuple[str, str]]:
    """(path, message) for every count or length over its cap in a raw spec (parsed JSON, not yet validated).

    One pass over the capped places only: linear in the spec's size, and it stops a huge list before any of
    its items is looked at. Values of the wrong type are left to the spec's own checks."""
    issues: list[tuple[str, str]] = []
    for limit in _SIZE_LIMITS:
        if limit.unit == "characters" and issues:
            break  # a list over its cap is refused as a whole: its items' lengths are not read
        for pattern in limit.paths:
            for path, value in _values_at(data, pattern.split("."), ""):
                if isinstance(value, list | str) and len(value) > limit.maximum:
                    issues.append((path, limit.refusal(len(value))))
    if not issues and (total := expressions_length(data)) > EXPRESSIONS_LENGTH.maximum:
        issues.append(("transforms", EXPRESSIONS_LENGTH.refusal(total)))
    return issues


def expressions_length(data: Any) -> int:
    """The characters of the filter and every transform's expression together, in a raw spec."""
    total = 0
    for pattern in ("filter", "transforms[].expression"):
        for _, value in _values_at(data, pattern.split("."), ""):
            if isinstance(value, str):
                total += len(value)
    return total


__all__ = [
    "COLUMNS",
    "DEDUP_KEYS",
    "EXPRESSIONS_LENGTH",
    "EXPRESSION_DEPTH",
    "EXPRESSION_GROWTH",
    "EXPRESSION_LENGTH",
    "EXPRESSION_NESTING",
    "EXPRESSION_OUTPUT",
    "FIELDS",
    "JSON_DEPTH",
    "LIMITS",
    "NAME_LENGTH",
    "ORDER_BY",
    "ROW_BYTES",
    "SCHEMA_DEPTH",
    "SCHEMA_FIELDS",
    "TOPICS",
    "TRANSFORMS",
    "TYPE_LENGTH",
    "VALIDATION_SECONDS",
    "FlattenBudget",
    "Limit",
    "LimitError",
    "expressions_length",
    "size_issues",
]
