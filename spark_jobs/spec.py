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
  (`spark_jobs.field_types`: `FIELD_TYPES`, `field_type_compatible`, `default_clickhouse_type`) and ClickHouse
  types (`spark_jobs.clickhouse_types`: `parse_clickhouse_type`, `clickhouse_type_error`), and `expression_error`
  (`spark_jobs.expressions`).

The connection sections (`KafkaConnectionSpec`, `SchemaRegistryConnectionSpec`, `ClickHouseConnectionSpec`) live
in `spark_jobs.connections`,
with the functions that turn them into client settings.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from spark_jobs.avro_schema import AvroSchemaError, SchemaField, fields_by_path
from spark_jobs.clickhouse_types import ClickHouseType, clickhouse_type_error, parse_clickhouse_type
from spark_jobs.connections import (
    SECRET_MASK,
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
)
from spark_jobs.expressions import KnownNames, expression_error
from spark_jobs.field_types import FIELD_TYPES, FieldType, default_clickhouse_type, field_type_compatible
from spark_jobs.limits import VALIDATION_SECONDS, size_issues

# Version 2 added `join` (a second topic joined in time); a version 1 spec is a version 2 spec without it.
SPEC_VERSION = 2
SPEC_VERSIONS = (1, 2)
# `sink.insert_dedup_window` was called this until the rename; parse_spec still accepts it (an alias).
OLD_INSERT_DEDUP_WINDOW = "deduplication_window"

# Kafka record metadata, usable as a column's `field` and in expressions (read from the record, not the JSON).
KAFKA_METADATA_FIELDS: dict[str, str] = {
    "_kafka_topic": "string",
    "_kafka_partition": "int",
    "_kafka_offset": "int",
    "_kafka_timestamp": "datetime",
}
RESERVED_PREFIXES = ("_kafka_", "_cf_")

MAX_WINDOW_SECONDS = 7 * 24 * 3600
_WINDOW_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_WINDOW_RE = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
# The dedup windows the wizard offers and key advice recommends from (any other valid window can be typed).
DEDUP_WINDOWS: tuple[tuple[str, str], ...] = (
    ("1m", "1 minute"),
    ("5m", "5 minutes"),
    ("15m", "15 minutes"),
    ("1h", "1 hour"),
    ("6h", "6 hours"),
    ("12h", "12 hours"),
    ("1d", "1 day"),
    ("7d", "7 days"),
)
# What earlier versions chose for the dedup state (DedupSpec.state_store): still accepted, no longer used.
StateStore = Literal["auto", "memory", "rocksdb"]
STATE_STORES: tuple[str, ...] = get_args(StateStore)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_IDENT_RE = re.compile(rf"^{_IDENT}$")
_PATH_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


# --- errors ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecIssue:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(Exception):
    """An invalid spec. `errors` lists every problem found, each with the path of the bad field.

    Deliberately not a ValueError: raised from inside a pydantic validator it passes through unchanged.
    """

    def __init__(self, errors: list[SpecIssue]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(issue) for issue in self.errors))


class ValidationBudget:
    """The time one spec's checks may take (`spark_jobs.limits.VALIDATION_SECONDS`). Every check is linear in
    the spec's size and the sizes are capped, so this is a safety net: a step that finds the time spent refuses
    the spec instead of holding a web request (or a job's start) any longer."""

    def __init__(self, seconds: float = VALIDATION_SECONDS.maximum) -> None:
        self.deadline = time.monotonic() + seconds

    def check(self, path: str = "") -> None:
        if time.monotonic() > self.deadline:
            message = (
                f"checking this spec took longer than {VALIDATION_SECONDS.maximum} seconds "
                f"(cap: {VALIDATION_SECONDS.name}): make it smaller"
            )
            raise SpecError([SpecIssue(path, message)])


def _loc_to_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


# --- windows -----------------------------------------------------------------------------------------------


def version_for(data: Any) -> int:
    """The version a spec is written with when none is given: 2 with a join (what version 2 added), else 1, so a
    spec without a join stays what it was for every reader."""
    return 2 if isinstance(data, dict) and data.get("join") else 1


def parse_window(window: str) -> int:
    """'30s', '5m', '1h', '7d' -> seconds (1 second to 7 days). Raises ValueError with a readable message."""
    match = _WINDOW_RE.match(window) if isinstance(window, str) else None
    if not match:
        raise ValueError(f"invalid window {window!r}: use a number and a unit s, m, h or d, e.g. '30s', '1h'")
    seconds = int(match.group(1)) * _WINDOW_UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"invalid window {window!r}: must be greater than zero")
    if seconds > MAX_WINDOW_SECONDS:
        raise ValueError(f"window {window!r} is longer than the maximum of 7d")
    return seconds


# --- the models --------------------------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", str_strip_whitespace=False, validate_default=True)


def _check_ident(value: str, what: str) -> str:
    if not _IDENT_RE.match(value):
        raise ValueError(f"invalid {what} {value!r}: use letters, digits and '_', not starting with a digit")
    return value


class FieldSpec(BaseModel):
    model_config = _STRICT

    path: str
    type: FieldType

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not _PATH_RE.match(value):
            raise ValueError(
                f"invalid field path {value!r}: dot-separated names of letters, digits and '_', e.g. 'user.id'"
            )
        if value.split(".")[0].startswith(RESERVED_PREFIXES):
            raise ValueError(f"field names starting with {' or '.join(RESERVED_PREFIXES)} are reserved")
        return value


# How record values are encoded. avro: Confluent's wire format with `schema_registry`, or plain Avro bodies of
# the one `avro_schema` given. protobuf: Confluent's wire format with `schema_registry`.
SourceFormat = Literal["json", "avro", "protobuf"]
SOURCE_FORMATS: tuple[str, ...] = get_args(SourceFormat)


class SourceSpec(BaseModel):
    model_config = _STRICT

    kafka: KafkaConnectionSpec
    topics: list[str] = Field(min_length=1)
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    format: SourceFormat = "json"
    # format avro, Confluent wire format: where the writer schemas are (subjects `<topic>-value`).
    schema_registry: SchemaRegistryConnectionSpec | None = None
    # format avro without a registry: the writer schema of every record (JSON text of an Avro record schema).
    avro_schema: str | None = None
    fields: list[FieldSpec] = Field(min_length=1)
    # Upper bound on Kafka records read per micro-batch (admission control). Optional, with a default.
    max_records_per_batch: int = Field(default=500_000, ge=1, le=50_000_000)

    @field_validator("topics")
    @classmethod
    def _topics(cls, value: list[str]) -> list[str]:
        for topic in value:
            if not _TOPIC_RE.match(topic):
                raise ValueError(f"invalid topic name {topic!r}")
        if len(set(value)) != len(value):
            raise ValueError("topics are listed twice")
        return value

    @property
    def uses_registry(self) -> bool:
        return self.format in ("avro", "protobuf") and self.schema_registry is not None

    @property
    def registry_schema_type(self) -> str:
        """The registry's name for the format's schemas (AVRO, PROTOBUF)."""
        return self.format.upper()


class _Windowed(BaseModel):
    """A section with a `window` ("30m", "1h", "7d"; each subclass declares the field and its default): checked
    once here, and its length in seconds. The field is declared by each subclass, so it keeps its place among
    their fields (and in the spec's JSON)."""

    @field_validator("window", check_fields=False)
    @classmethod
    def _window(cls, value: str) -> str:
        parse_window(value)
        return value.strip()

    @property
    def window_seconds(self) -> int:
        return parse_window(self.window)  # type: ignore[attr-defined]  # declared by the subclass


class DedupSpec(_Windowed):
    model_config = _STRICT

    keys: list[str] = Field(min_length=1)
    window: str = "1h"
    time: Literal["ingestion", "event"] = "ingestion"
    event_time_field: str | None = None
    # Accepted for specs written by earlier versions, which chose a memory or RocksDB store here. The dedup
    # state is always on RocksDB now, with bounded memory (spark_jobs.pipeline.state_store_conf).
    state_store: StateStore = "auto"

    @model_validator(mode="after")
    def _event_time(self) -> DedupSpec:
        if self.time == "event" and not self.event_time_field:
            raise ValueError("time 'event' needs event_time_field")
        return self


class TransformSpec(BaseModel):
    model_config = _STRICT

    name: str
    expression: str = Field(min_length=1)
    type: FieldType

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        _check_ident(value, "transform name")
        if value.startswith(RESERVED_PREFIXES):
            raise ValueError(f"names starting with {' or '.join(RESERVED_PREFIXES)} are reserved")
        return value


class ColumnSpec(BaseModel):
    model_config = _STRICT

    field: str
    column: str
    type: str

    @field_validator("column")
    @classmethod
    def _column(cls, value: str) -> str:
        return _check_ident(value, "column name")

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        return parse_clickhouse_type(value).sql()

    @property
    def clickhouse_type(self) -> ClickHouseType:
        return parse_clickhouse_type(self.type)


class SinkSpec(BaseModel):
    model_config = _STRICT

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
        return None if value is None else _check_ident(value, "table name")

    @property
    def dead_letter_table(self) -> str:
        return self.dlq_table or f"{self.table}_dlq"


JoinType = Literal["inner", "left"]
JOIN_SIDES = ("left", "right")  # the prefixes of the joined fields: `left.<path>`, `right.<path>`


class JoinKeySpec(BaseModel):
    model_config = _STRICT

    left: str  # a field of `source.fields`
    right: str  # a field of `join.source.fields`


class JoinSpec(_Windowed):
    """A second topic (the right side) joined to the source (the left side) on keys, within a time window.

    Each side is deduplicated first (`dedup`, `join.dedup`). The joined row's fields are `left.<path>` and
    `right.<path>` (Kafka metadata too: `right._kafka_offset`). inner: a row per left and right event whose join
    times are within `window` of each other; left: also each left event that nothing matched, with empty right
    fields, once `window` has passed since it arrived. The join time is the Kafka timestamp (ingestion) or a
    datetime field of each side (event). State is kept for `window` of processing time on each side."""

    model_config = _STRICT

    source: SourceSpec
    dedup: DedupSpec | None = None
    keys: list[JoinKeySpec] = Field(min_length=1)
    window: str = "30m"
    type: JoinType = "inner"
    time: Literal["ingestion", "event"] = "ingestion"
    left_time_field: str | None = None
    right_time_field: str | None = None

    @model_validator(mode="after")
    def _event_time(self) -> JoinSpec:
        if self.time == "event" and not (self.left_time_field and self.right_time_field):
            raise ValueError("time 'event' needs left_time_field and right_time_field")
        return self


class PipelineSpec(BaseModel):
    model_config = _STRICT

    version: Literal[1, 2]
    name: str
    source: SourceSpec
    dedup: DedupSpec | None = None
    join: JoinSpec | None = None
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
            types.update(KAFKA_METADATA_FIELDS)
        types.update({t.name: t.type for t in self.transforms})
        return types

    def to_dict(self, *, reveal_secrets: bool = False) -> dict[str, Any]:
        """A JSON-ready dict. Secrets are `SECRET_MASK` unless `reveal_secrets=True` (for the job's spec file)."""
        data = self.model_dump(mode="python")
        _walk_secrets(data, reveal_secrets)
        return data

    def to_json(self, *, reveal_secrets: bool = False, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(reveal_secrets=reveal_secrets), indent=indent)


def joined_field_types(left: Sequence[FieldSpec], right: Sequence[FieldSpec]) -> dict[str, str]:
    """The names a joined row offers, prefixed by side: `left.<path>`, `left._kafka_topic`, `right.<path>`..."""
    types: dict[str, str] = {}
    for side, fields in zip(JOIN_SIDES, (left, right), strict=True):
        types.update({f"{side}.{f.path}": f.type for f in fields})
        types.update({f"{side}.{name}": kind for name, kind in KAFKA_METADATA_FIELDS.items()})
    return types


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
    known = KnownNames([*field_paths, *KAFKA_METADATA_FIELDS])
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


# A schema's json fields (arrays, maps, unions of several types) are read as their JSON text: as text or json.
_FROM_SCHEMA_JSON = ("string", "json")


def schema_field_issues(
    fields: Sequence[FieldSpec],
    known: dict[str, SchemaField],
    *,
    where: str = "the Avro schema",
    prefix: str = "source",
) -> list[SpecIssue]:
    """`source.fields` against a schema's fields (`spark_jobs.avro_schema`): a path the schema lacks is an error
    under `source.fields[i].path`, a type its values cannot be read as under `source.fields[i].type`."""
    issues = []
    for i, field in enumerate(fields):
        found = known.get(field.path)
        if found is None:
            issues.append(SpecIssue(f"{prefix}.fields[{i}].path", f"field '{field.path}' is not in {where}"))
        elif found.type == "json" and field.type not in _FROM_SCHEMA_JSON:
            issues.append(
                SpecIssue(
                    f"{prefix}.fields[{i}].type",
                    f"field '{field.path}' is {found.describe()} in {where}: read it as string or json, "
                    f"not {field.type}",
                )
            )
    return issues


def _source_issues(source: SourceSpec, prefix: str = "source") -> list[SpecIssue]:
    if source.format == "json":
        if source.schema_registry is not None:
            return [
                SpecIssue(
                    f"{prefix}.schema_registry",
                    "a schema registry is for formats avro and protobuf; this source is json",
                )
            ]
        if source.avro_schema is not None:
            return [SpecIssue(f"{prefix}.avro_schema", "an Avro schema is for format avro; this source is json")]
        return []
    if source.format == "protobuf":
        if source.avro_schema is not None:
            return [SpecIssue(f"{prefix}.avro_schema", "an Avro schema is for format avro; this source is protobuf")]
        if source.schema_registry is None:
            return [
                SpecIssue(
                    f"{prefix}.schema_registry",
                    "format protobuf needs a schema registry (Confluent wire format, subjects <topic>-value)",
                )
            ]
        return []  # checked against the registry when the job starts and when the web app saves the spec
    if source.schema_registry is not None and source.avro_schema is not None:
        return [SpecIssue(f"{prefix}.avro_schema", "give a schema registry or an Avro schema, not both")]
    if source.schema_registry is None and source.avro_schema is None:
        return [
            SpecIssue(
                f"{prefix}.schema_registry",
                "format avro needs a schema registry (Confluent wire format) or avro_schema (plain Avro)",
            )
        ]
    if source.avro_schema is not None:
        try:
            known = fields_by_path(source.avro_schema)
        except AvroSchemaError as exc:
            return [SpecIssue(f"{prefix}.avro_schema", str(exc))]
        return schema_field_issues(source.fields, known, prefix=prefix)
    return []  # checked against the registry when the job starts and when the web app saves the spec


def _field_issues(fields: Sequence[FieldSpec], prefix: str = "source") -> list[SpecIssue]:
    """Fields listed twice, and a field that is also the parent of another (`user` and `user.id`): one pass
    over the paths and their prefixes, linear in their total length."""
    paths = [f.path for f in fields]
    counts = Counter(paths)
    parents = {path[:index] for path in paths for index, char in enumerate(path) if char == "."}
    issues = []
    for i, path in enumerate(paths):
        if counts[path] > 1:
            issues.append(SpecIssue(f"{prefix}.fields[{i}].path", f"field '{path}' is listed twice"))
        elif path in parents:
            issues.append(
                SpecIssue(f"{prefix}.fields[{i}].path", f"'{path}' is both a field and the parent of another field")
            )
    return issues


def _dedup_issues(dedup: DedupSpec, fields: dict[str, str], path: str, source_path: str) -> list[SpecIssue]:
    """One side's dedup keys and event time field against that side's fields."""
    issues = []
    for i, key in enumerate(dedup.keys):
        if key not in fields:
            issues.append(SpecIssue(f"{path}.keys[{i}]", f"unknown field '{key}'; add it to {source_path}.fields"))
        elif fields[key] == "json":
            issues.append(SpecIssue(f"{path}.keys[{i}]", f"a json field ('{key}') cannot be a dedup key"))
    if len(set(dedup.keys)) != len(dedup.keys):
        issues.append(SpecIssue(f"{path}.keys", "a key is listed twice"))
    if dedup.time == "event" and dedup.event_time_field:
        issues += _time_field_issues(dedup.event_time_field, fields, f"{path}.event_time_field", source_path)
    return issues


def _time_field_issues(name: str, fields: dict[str, str], path: str, source_path: str) -> list[SpecIssue]:
    if name not in fields:
        return [SpecIssue(path, f"unknown field '{name}'; add it to {source_path}.fields")]
    if fields[name] != "datetime":
        return [SpecIssue(path, f"field '{name}' must have type datetime, not {fields[name]}")]
    return []


def _join_issues(spec: PipelineSpec, left: dict[str, str]) -> list[SpecIssue]:
    """The right side as a source of its own, then the keys (same type on both sides) and the time fields."""
    join = spec.join
    assert join is not None
    if spec.version < 2:
        return [SpecIssue("version", "a join needs version 2 (version 1 has no join)")]
    issues = _source_issues(join.source, "join.source") + _field_issues(join.source.fields, "join.source")
    right = {f.path: f.type for f in join.source.fields}
    if join.dedup is not None:
        issues += _dedup_issues(join.dedup, right, "join.dedup", "join.source")
    for i, key in enumerate(join.keys):
        for side, fields, source_path in (("left", left, "source"), ("right", right, "join.source")):
            name = getattr(key, side)
            if name not in fields:
                issues.append(
                    SpecIssue(f"join.keys[{i}].{side}", f"unknown field '{name}'; add it to {source_path}.fields")
                )
            elif fields[name] == "json":
                issues.append(SpecIssue(f"join.keys[{i}].{side}", f"a json field ('{name}') cannot be a join key"))
        if key.left in left and key.right in right and left[key.left] != right[key.right]:
            issues.append(
                SpecIssue(
                    f"join.keys[{i}].right",
                    f"key types differ: '{key.right}' is {right[key.right]} on the right, "
                    f"'{key.left}' is {left[key.left]} on the left; join fields of the same type",
                )
            )
    if join.time == "event":
        if join.left_time_field:
            issues += _time_field_issues(join.left_time_field, left, "join.left_time_field", "source")
        if join.right_time_field:
            issues += _time_field_issues(join.right_time_field, right, "join.right_time_field", "join.source")
    return issues


def join_issues(spec: PipelineSpec) -> list[SpecIssue]:
    """The join section's own rules (the right side, the keys' types, the time fields), as validation runs them:
    for a form that edits the join before the rest of the spec exists (the wizard's join step). Reads only
    `spec.version`, `spec.source.fields` and `spec.join`."""
    return _join_issues(spec, {f.path: f.type for f in spec.source.fields})


def _cross_check(spec: PipelineSpec, budget: ValidationBudget) -> list[SpecIssue]:
    """Rules that span sections; each issue names the path of the field to fix. Every rule is one pass (sets
    and dicts, no list searched per item), so the time grows with the spec's size, not with its square."""
    issues = _source_issues(spec.source) + _field_issues(spec.source.fields)
    fields = {f.path: f.type for f in spec.source.fields}
    budget.check("source.fields")
    if spec.dedup is not None:
        issues += _dedup_issues(spec.dedup, fields, "dedup", "source")
    if spec.join is not None:
        issues += _join_issues(spec, fields)
        budget.check("join")

    names = list(fields)
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
    "JOIN_SIDES",
    "KAFKA_METADATA_FIELDS",
    "MAX_WINDOW_SECONDS",
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
    "parse_clickhouse_type",
    "parse_spec",
    "parse_window",
    "schema_field_issues",
    "version_for",
]
