"""The pipeline spec, version 2: ClearFlow's public contract between the web app and the streaming job (a
version 1 spec, the same without `join`, still loads).

No Spark import here: the web app validates specs with this module alone.

Entry points:
- `parse_spec(data)` -> `PipelineSpec`, or `SpecError` whose `errors` are `SpecIssue(path, message)` with
  paths such as `sink.columns[2].type`;
- `PipelineSpec.to_dict(reveal_secrets=False)` / `to_json(...)`. Secrets (Kafka `sasl_password`, `ssl_key_pem`,
  ClickHouse `password`) are `SecretStr`: their repr is masked, and `to_dict()` writes them as
  `SECRET_MASK` unless `reveal_secrets=True` (only the job's spec file needs the real values);
- `parse_window`, `expression_issues`, and, re-exported for the spec's readers, the field types
  (`clearflow_spec.field_types`: `FIELD_TYPES`, `field_type_compatible`, `default_clickhouse_type`) and ClickHouse
  types (`clearflow_spec.clickhouse_types`: `parse_clickhouse_type`, `clickhouse_type_error`), and `expression_error`
  (`clearflow_spec.expressions`).

Where the sections live (this module re-exports their names, so readers import from here alone):
- the errors, windows, a source with its fields and its dedup, and their checks: `clearflow_spec.spec_base`;
- the `join` section and its checks: `clearflow_spec.join_spec`;
- the connection sections (`KafkaConnectionSpec`, `SchemaRegistryConnectionSpec`, `ClickHouseConnectionSpec`):
  `clearflow_spec.connections`, with the functions that turn them into client settings;
- here: the transforms, the sink, the whole `PipelineSpec` with the rules that span sections, and `parse_spec`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from clearflow_spec.clickhouse_types import ClickHouseType, clickhouse_type_error, parse_clickhouse_type
from clearflow_spec.connections import (
    SECRET_MASK,
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
)
from clearflow_spec.expressions import KnownNames, expression_error
from clearflow_spec.field_types import (
    FIELD_TYPES,
    FieldType,
    default_clickhouse_type,
    field_type_compatible,
    field_type_shape,
    is_nested,
)
from clearflow_spec.join_spec import (
    JOIN_SIDES,
    JoinKeySpec,
    JoinSpec,
    JoinType,
    join_section_issues,
    joined_field_types,
)
from clearflow_spec.limits import size_issues
from clearflow_spec.nested_types import ARRAY, STRUCT
from clearflow_spec.spec_base import (
    DEDUP_WINDOWS,
    JOIN_METADATA_FIELDS,
    KAFKA_HEADERS,
    KAFKA_KEY,
    KAFKA_METADATA_FIELDS,
    MAX_WINDOW_SECONDS,
    RESERVED_PREFIXES,
    SOURCE_FORMATS,
    STATE_STORES,
    STRICT,
    DedupSpec,
    FieldSpec,
    SourceFormat,
    SourceSpec,
    SpecError,
    SpecIssue,
    StateStore,
    ValidationBudget,
    check_ident,
    dedup_issues,
    field_issues,
    kafka_header_fields,
    kafka_record_fields,
    parse_window,
    schema_field_issues,
    source_issues,
)

# Version 2 added `join` (a second topic joined in time); a version 1 spec is a version 2 spec without it.
SPEC_VERSION = 2
SPEC_VERSIONS = (1, 2)
# `sink.insert_dedup_window` was called this until the rename; parse_spec still accepts it (an alias).
OLD_INSERT_DEDUP_WINDOW = "deduplication_window"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\Z")


def _loc_to_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def version_for(data: Any) -> int:
    """The version a spec is written with when none is given: 2 with a join (what version 2 added), else 1, so a
    spec without a join stays what it was for every reader."""
    return 2 if isinstance(data, dict) and data.get("join") else 1


# --- the sections of this module ---------------------------------------------------------------------------


class TransformSpec(BaseModel):
    model_config = STRICT

    name: str
    expression: str = Field(min_length=1)
    type: FieldType

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        check_ident(value, "transform name")
        if value.startswith(RESERVED_PREFIXES):
            raise ValueError(f"names starting with {' or '.join(RESERVED_PREFIXES)} are reserved")
        return value


class ColumnSpec(BaseModel):
    model_config = STRICT

    field: str
    column: str
    type: str

    @field_validator("column")
    @classmethod
    def _column(cls, value: str) -> str:
        return check_ident(value, "column name")

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        return parse_clickhouse_type(value).sql()

    @property
    def clickhouse_type(self) -> ClickHouseType:
        return parse_clickhouse_type(self.type)


class SinkSpec(BaseModel):
    model_config = STRICT

    clickhouse: ClickHouseConnectionSpec
    table: str
    create_table: bool = True
    engine: Literal["MergeTree", "ReplacingMergeTree"] = "MergeTree"
    order_by: list[str] = Field(default_factory=list)
    columns: list[ColumnSpec] = Field(min_length=1)
    # Dead letters go to `<table>_dlq` in the same database unless named here. Optional.
    dlq_table: str | None = None
    # How many recent inserts (not a time span, unlike `dedup.window`) a table ClearFlow creates remembers to
    # drop a replayed one: its `non_replicated_deduplication_window`. Called `deduplication_window` before;
    # that name is still read (see `_old_names`).
    insert_dedup_window: int = Field(default=1000, ge=100, le=100_000)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """Specs stored, and clients written, before the rename send `deduplication_window`: read it as
        `insert_dedup_window` (the spec is written back with the new name)."""
        if isinstance(data, dict) and OLD_INSERT_DEDUP_WINDOW in data:
            data = dict(data)
            old = data.pop(OLD_INSERT_DEDUP_WINDOW)
            if "insert_dedup_window" in data and data["insert_dedup_window"] != old:
                raise ValueError(
                    f"{OLD_INSERT_DEDUP_WINDOW} is the old name of insert_dedup_window: give only one of them"
                )
            data["insert_dedup_window"] = old
        return data

    @field_validator("table", "dlq_table")
    @classmethod
    def _table(cls, value: str | None) -> str | None:
        return None if value is None else check_ident(value, "table name")

    @property
    def dead_letter_table(self) -> str:
        return self.dlq_table or f"{self.table}_dlq"


class PipelineSpec(BaseModel):
    model_config = STRICT

    version: Literal[1, 2]
    name: str
    source: SourceSpec
    dedup: DedupSpec | None = None
    join: JoinSpec | None = None
    # An array field whose elements become one row each, with the event's other fields (ClickHouse's ARRAY JOIN):
    # after dedup (one event, one key), before the filter; the field's path then names the element. An event
    # whose array is empty or null writes no row.
    explode: str | None = None
    filter: str | None = None
    transforms: list[TransformSpec] = Field(default_factory=list)
    sink: SinkSpec

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(f"invalid pipeline name {value!r}: letters, digits, '-', '_', '.' (max 100)")
        return value

    @field_validator("filter")
    @classmethod
    def _filter(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else value

    @model_validator(mode="wrap")
    @classmethod
    def _bounded(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> PipelineSpec:
        """Caps on counts and lengths first (on the raw input, before any item is validated), then the
        sections' own checks, then the rules that span sections, all within the time budget."""
        budget = ValidationBudget()
        if too_large := size_issues(data):
            raise SpecError([SpecIssue(path, message) for path, message in too_large])
        spec = handler(data)
        budget.check()
        issues = _cross_check(spec, budget)
        if issues:
            raise SpecError(issues)
        return spec

    # -- typed accessors the job uses --

    def field_types(self) -> dict[str, str]:
        """Every name a column may map: field paths, Kafka metadata, then transforms (in order)."""
        if self.join is not None:
            types = joined_field_types(self.source.fields, self.join.source.fields)
        else:
            types = {f.path: f.type for f in self.source.fields}
            if self.explode is not None and self.explode in types and is_nested(types[self.explode]):
                types[self.explode] = field_type_shape(types[self.explode]).elem.ddl()
            types.update(member_paths(types))
            types.update(KAFKA_METADATA_FIELDS)
            keys = self.dedup.keys if self.dedup else []
            types.update(kafka_header_fields([*keys, *(c.field for c in self.sink.columns)]))
        types.update({t.name: t.type for t in self.transforms})
        return types

    def to_dict(self, *, reveal_secrets: bool = False) -> dict[str, Any]:
        """A JSON-ready dict. Secrets are `SECRET_MASK` unless `reveal_secrets=True` (for the job's spec file)."""
        data = self.model_dump(mode="python")
        _walk_secrets(data, reveal_secrets)
        return data

    def to_json(self, *, reveal_secrets: bool = False, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(reveal_secrets=reveal_secrets), indent=indent)


def member_paths(types: dict[str, str]) -> dict[str, str]:
    """The members of struct fields as paths of their own (`order.total` of a `struct<total:float>` field `order`),
    to any depth: a column may map one, a filter may read one."""
    found: dict[str, str] = {}
    pending = [(path, field_type) for path, field_type in types.items() if is_nested(field_type)]
    while pending:
        path, field_type = pending.pop()
        shape = field_type_shape(field_type)
        if shape.kind != STRUCT:
            continue
        for name, member in shape.members:
            found[f"{path}.{name}"] = member.ddl()
            if member.kind == STRUCT:
                pending.append((f"{path}.{name}", member.ddl()))
    return found


def explode_issues(spec: PipelineSpec) -> list[SpecIssue]:
    if spec.explode is None:
        return []
    fields = {f.path: f.type for f in spec.source.fields}
    if spec.join is not None:
        return [SpecIssue("explode", "explode is for a pipeline without a join")]
    if spec.explode not in fields:
        return [SpecIssue("explode", f"unknown field '{spec.explode}'; name an array field of source.fields")]
    if not is_nested(fields[spec.explode]) or field_type_shape(fields[spec.explode]).kind != ARRAY:
        return [SpecIssue("explode", f"field '{spec.explode}' is a {fields[spec.explode]}, not an array<...>")]
    return []


def _walk_secrets(node: Any, reveal: bool) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, SecretStr):
                node[key] = value.get_secret_value() if reveal else SECRET_MASK
            else:
                _walk_secrets(value, reveal)
    elif isinstance(node, list):
        for item in node:
            _walk_secrets(item, reveal)


def expression_issues(
    field_paths: Sequence[str],
    filter_expression: str | None,
    transforms: Sequence[tuple[str, str]],
    budget: ValidationBudget | None = None,
) -> list[SpecIssue]:
    """The filter's and the transforms' problems (paths `filter`, `transforms[i].name|expression`): the
    checks `parse_spec` makes, for a caller that checks them before the rest of the spec exists (the wizard's
    filter step). `transforms` are (name, expression) pairs in order; each may use the ones before it."""
    budget = budget or ValidationBudget()
    issues: list[SpecIssue] = []
    known = KnownNames([*field_paths, *KAFKA_METADATA_FIELDS, KAFKA_HEADERS])
    if filter_expression is not None and filter_expression.strip():
        error = expression_error(filter_expression, known)
        if error:
            issues.append(SpecIssue("filter", error))
    paths = set(field_paths)
    roots = {p.split(".")[0] for p in field_paths}
    seen_transforms: set[str] = set()
    for i, (name, expression) in enumerate(transforms):
        budget.check(f"transforms[{i}].expression")
        if name in paths or name.split(".")[0] in roots:
            issues.append(SpecIssue(f"transforms[{i}].name", f"'{name}' clashes with a field of the same name"))
        elif name in seen_transforms:
            issues.append(SpecIssue(f"transforms[{i}].name", f"transform '{name}' is defined twice"))
        error = expression_error(expression, known)
        if error:
            issues.append(SpecIssue(f"transforms[{i}].expression", error))
        seen_transforms.add(name)
        known.add(name)
    return issues


def join_issues(spec: PipelineSpec) -> list[SpecIssue]:
    """The join section's own rules (the right side, the keys' types, the time fields), as validation runs them:
    for a form that edits the join before the rest of the spec exists (the wizard's join step). Reads only
    `spec.version`, `spec.source.fields` and `spec.join` (which must be there)."""
    assert spec.join is not None
    return join_section_issues(spec.join, {f.path: f.type for f in spec.source.fields}, version=spec.version)


def _cross_check(spec: PipelineSpec, budget: ValidationBudget) -> list[SpecIssue]:
    """Rules that span sections; each issue names the path of the field to fix. Every rule is one pass (sets
    and dicts, no list searched per item), so the time grows with the spec's size, not with its square."""
    issues = source_issues(spec.source) + field_issues(spec.source.fields)
    fields = {f.path: f.type for f in spec.source.fields}
    budget.check("source.fields")
    if spec.dedup is not None:
        keyable = {**fields, **kafka_record_fields(spec.dedup.keys)}
        issues += dedup_issues(spec.dedup, keyable, "dedup", "source")
    if spec.join is not None:
        issues += join_section_issues(spec.join, fields, version=spec.version)
        budget.check("join")

    issues += explode_issues(spec)
    names = [name for name in spec.field_types() if name not in KAFKA_METADATA_FIELDS]
    names = [name for name in names if name not in {t.name for t in spec.transforms}]
    if spec.join is not None:
        names = list(joined_field_types(spec.source.fields, spec.join.source.fields))
    issues += expression_issues(
        names, spec.filter, [(transform.name, transform.expression) for transform in spec.transforms], budget
    )
    budget.check("sink.columns")

    types = spec.field_types()
    sink = spec.sink
    column_names: set[str] = set()
    for i, column in enumerate(sink.columns):
        if column.column in column_names:
            issues.append(SpecIssue(f"sink.columns[{i}].column", f"column '{column.column}' is mapped twice"))
        column_names.add(column.column)
        if column.field not in types:
            sides = [f"{side}.{column.field}" for side in JOIN_SIDES if f"{side}.{column.field}" in types]
            hint = (
                f"with a join, name it by its side: {' or '.join(sides)}"
                if sides
                else "map a source field, a transform or Kafka metadata"
            )
            issues.append(SpecIssue(f"sink.columns[{i}].field", f"unknown field '{column.field}'; {hint}"))
        elif not field_type_compatible(types[column.field], column.type):
            issues.append(
                SpecIssue(
                    f"sink.columns[{i}].type",
                    f"a {types[column.field]} field ('{column.field}') cannot be written to {column.type}",
                )
            )

    by_name = {c.column: c for c in sink.columns}
    for i, name in enumerate(sink.order_by):
        if name not in by_name:
            issues.append(SpecIssue(f"sink.order_by[{i}]", f"unknown column '{name}'; use a sink column name"))
        elif by_name[name].clickhouse_type.nullable:
            issues.append(SpecIssue(f"sink.order_by[{i}]", f"column '{name}' is Nullable and cannot be in ORDER BY"))
    if sink.dead_letter_table == sink.table:
        issues.append(SpecIssue("sink.dlq_table", "the dead-letter table must differ from the table"))
    budget.check()
    return issues


def parse_spec(data: dict[str, Any] | str | bytes) -> PipelineSpec:
    """Validate a spec (a dict or JSON text). Raises SpecError listing every problem with its path."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            raise SpecError([SpecIssue("", message)]) from None
    if not isinstance(data, dict):
        raise SpecError([SpecIssue("", "a pipeline spec must be a JSON object")])
    try:
        return PipelineSpec.model_validate(data)
    except ValidationError as exc:
        issues = []
        for error in exc.errors(include_url=False):
            message = error["msg"]
            message = message.removeprefix("Value error, ")
            issues.append(SpecIssue(_loc_to_path(error["loc"]), message))
        raise SpecError(issues) from None


__all__ = [
    "DEDUP_WINDOWS",
    "FIELD_TYPES",
    "JOIN_METADATA_FIELDS",
    "JOIN_SIDES",
    "KAFKA_HEADERS",
    "KAFKA_KEY",
    "KAFKA_METADATA_FIELDS",
    "MAX_WINDOW_SECONDS",
    "OLD_INSERT_DEDUP_WINDOW",
    "RESERVED_PREFIXES",
    "SECRET_MASK",
    "SOURCE_FORMATS",
    "SPEC_VERSION",
    "SPEC_VERSIONS",
    "STATE_STORES",
    "ClickHouseConnectionSpec",
    "ClickHouseType",
    "ColumnSpec",
    "DedupSpec",
    "FieldSpec",
    "FieldType",
    "JoinKeySpec",
    "JoinSpec",
    "JoinType",
    "KafkaConnectionSpec",
    "PipelineSpec",
    "SchemaRegistryConnectionSpec",
    "SinkSpec",
    "SourceFormat",
    "SourceSpec",
    "SpecError",
    "SpecIssue",
    "StateStore",
    "TransformSpec",
    "ValidationBudget",
    "clickhouse_type_error",
    "default_clickhouse_type",
    "expression_error",
    "expression_issues",
    "field_type_compatible",
    "join_issues",
    "joined_field_types",
    "member_paths",
    "parse_clickhouse_type",
    "parse_spec",
    "parse_window",
    "schema_field_issues",
    "version_for",
]
