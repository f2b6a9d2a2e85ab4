"""Map source fields to ClickHouse columns by name, and flag what does not fit (pure functions, no I/O).

The one implementation of the mapping: the API (`POST /pipelines/mapping/`, through
`selectors.pipeline_mapping_suggest`) and the wizard's mapping step both call it, so they propose the same
columns and types and flag the same problems.

A field maps to a column of the same name, compared without case and with the dots of nested paths read
as underscores (`customer.name` -> `customer_name`). Columns that ClickHouse computes itself
(MATERIALIZED, ALIAS) are never written. For a new table every field gets a column with the type its schema
proposes (Avro: `Decimal(P, S)` for a decimal, `DateTime64(3, 'UTC')` for timestamp-millis, `Date`, `UUID`,
`LowCardinality(String)` for an enum, Nullable for a union with null; `clearflow_spec.avro_schema`), else the spec
module's default type for the field's type; Nullable when the field is sometimes missing, except in the ORDER BY
(a sorting key cannot be Nullable).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from clearflow_spec.clickhouse_types import ClickHouseType, parse_clickhouse_type
from clearflow_spec.field_types import default_clickhouse_type, field_type_compatible
from webapp.connections.clickhouse_client import ColumnInfo

# Columns whose value ClickHouse computes: an INSERT may not name them.
COMPUTED_KINDS = ("MATERIALIZED", "ALIAS")


@dataclass(frozen=True)
class SourceField:
    path: str
    type: str
    nullable: bool = False
    clickhouse_type: str | None = None  # the column type its schema proposes (Avro); None: the field type's default


@dataclass(frozen=True)
class ColumnMapping:
    field: str
    column: str
    type: str
    compatible: bool
    problem: str = ""


@dataclass(frozen=True)
class MappingSuggestion:
    columns: list[ColumnMapping]
    unmapped_required: list[str] = field(default_factory=list)  # existing columns that need a value
    unmapped_fields: list[str] = field(default_factory=list)
    create_table: bool = False  # the columns are proposed for a table yet to be created


def column_name_for(path: str) -> str:
    return path.replace(".", "_")


def _key(name: str) -> str:
    return column_name_for(name).lower()


def writable(column: ColumnInfo) -> bool:
    """Whether an insert can give `column` a value (MATERIALIZED and ALIAS columns are computed)."""
    return column.default_kind not in COMPUTED_KINDS


def proposed_type(source: SourceField, *, in_order_by: bool = False) -> str:
    """The column type proposed for a new table: the one the field's schema proposes, else the spec module's
    default for its type; Nullable when the field is sometimes missing (so a missing value stays NULL), but never
    for a column of the ORDER BY."""
    type_sql = source.clickhouse_type or default_clickhouse_type(source.type)
    if in_order_by:
        return _not_nullable(type_sql)
    if not source.nullable:
        return type_sql
    parsed = parse_clickhouse_type(type_sql)
    if parsed.nullable or parsed.name in ("JSON", "Array", "Map", "Tuple", "Nested", "LowCardinality"):
        return type_sql
    return f"Nullable({type_sql})"


def _not_nullable(type_sql: str) -> str:
    """`type_sql` without Nullable (also inside LowCardinality): a sorting key's column cannot be Nullable."""
    parsed = parse_clickhouse_type(type_sql)
    if parsed.nullable:
        return parsed.args[0].sql()
    if parsed.name == "LowCardinality" and parsed.args[0].nullable:
        return ClickHouseType("LowCardinality", (parsed.args[0].args[0],)).sql()
    return type_sql


def check_column(source: SourceField, column: ColumnInfo) -> tuple[bool, str]:
    """(compatible, problem) for writing `source` into the existing `column`; compatible with a problem is a
    warning (a field sometimes missing, into a column that needs a value)."""
    if not writable(column):
        return False, (
            f"'{column.name}' is a {column.default_kind} column: ClickHouse computes it, an insert cannot write it"
        )
    if not field_type_compatible(source.type, column.type):
        return False, f"a {source.type} field cannot be written to {column.type}"
    if source.nullable and not column.nullable and not column.default_kind:
        return True, f"'{source.path}' is sometimes missing but '{column.name}' is not Nullable and has no default"
    return True, ""


def suggest_mapping(
    fields: Sequence[SourceField], columns: Sequence[ColumnInfo] | None, *, order_by: Collection[str] = ()
) -> MappingSuggestion:
    """Columns for `fields`: into the existing `columns`, or (None) for a table yet to be created, whose
    ORDER BY holds the fields `order_by`."""
    if columns is None:
        mapped = [
            ColumnMapping(
                field=source.path,
                column=column_name_for(source.path),
                type=proposed_type(source, in_order_by=source.path in order_by),
                compatible=True,
            )
            for source in fields
        ]
        return MappingSuggestion(columns=mapped, create_table=True)

    by_key = {_key(source.path): source for source in fields}
    mapped, used = [], set()
    for column in columns:
        source = by_key.get(_key(column.name))
        if source is None or not writable(column):
            continue
        used.add(source.path)
        compatible, problem = check_column(source, column)
        mapped.append(
            ColumnMapping(
                field=source.path, column=column.name, type=column.type, compatible=compatible, problem=problem
            )
        )
    mapped_columns = {m.column for m in mapped}
    return MappingSuggestion(
        columns=mapped,
        unmapped_required=[c.name for c in columns if c.required and c.name not in mapped_columns],
        unmapped_fields=[s.path for s in fields if s.path not in used],
    )
