"""Map source fields to ClickHouse columns by name, and flag what does not fit (pure functions, no I/O).

A field maps to a column of the same name, compared without case and with the dots of nested paths read
as underscores (`customer.name` -> `customer_name`). For a new table every field gets a column with the
spec module's default type (Nullable when the field is optional).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from spark_jobs.spec import default_clickhouse_type, field_type_compatible, parse_clickhouse_type
from webapp.connections.clickhouse_client import ColumnInfo


@dataclass(frozen=True)
class SourceField:
    path: str
    type: str
    nullable: bool = False


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


def column_name_for(path: str) -> str:
    return path.replace(".", "_")


def _key(name: str) -> str:
    return column_name_for(name).lower()


def _nullable(type_sql: str) -> str:
    parsed = parse_clickhouse_type(type_sql)
    if parsed.nullable or parsed.name in ("JSON", "Array", "Map", "LowCardinality"):
        return type_sql
    return f"Nullable({type_sql})"


def suggest_mapping(fields: Sequence[SourceField], columns: Sequence[ColumnInfo] | None) -> MappingSuggestion:
    """Columns for `fields`: into the existing `columns`, or (None) for a table yet to be created."""
    if columns is None:
        mapped = []
        for source in fields:
            type_sql = default_clickhouse_type(source.type)
            mapped.append(
                ColumnMapping(
                    field=source.path,
                    column=column_name_for(source.path),
                    type=_nullable(type_sql) if source.nullable else type_sql,
                    compatible=True,
                )
            )
        return MappingSuggestion(columns=mapped)

    by_key = {_key(source.path): source for source in fields}
    mapped, used = [], set()
    for column in columns:
        source = by_key.get(_key(column.name))
        if source is None or column.default_kind in ("MATERIALIZED", "ALIAS"):
            continue
        used.add(source.path)
        compatible = field_type_compatible(source.type, column.type)
        problem = "" if compatible else f"a {source.type} field cannot be written to {column.type}"
        if compatible and source.nullable and not column.nullable and not column.default_kind:
            problem = f"'{source.path}' is sometimes missing but '{column.name}' is not Nullable and has no default"
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
