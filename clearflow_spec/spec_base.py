"""The parts of the pipeline spec (`clearflow_spec.spec`) that its sections share: the errors (`SpecIssue`,
`SpecError`, `ValidationBudget`), windows (`parse_window`, `Windowed`), and a source with its fields and its dedup
(`SourceSpec`, `FieldSpec`, `DedupSpec`) with their checks, which a pipeline's source and a join's right side
(`clearflow_spec.join_spec`) both go through.

No Spark import here: the web app and the client package validate specs with these modules alone. Readers import
these names from `clearflow_spec.spec`, which re-exports them.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from clearflow_spec.avro_schema import AvroSchemaError, SchemaField, fields_by_path
from clearflow_spec.connections import KafkaConnectionSpec, SchemaRegistryConnectionSpec
from clearflow_spec.field_types import FieldType, is_nested
from clearflow_spec.limits import VALIDATION_SECONDS
from clearflow_spec.regex_safety import regex_problem

# Kafka record metadata, usable as a column's `field` and in expressions (read from the record, not the JSON).
# `_kafka_key`: the record's key as UTF-8 text (NULL when the record has none), also a dedup key.
KAFKA_METADATA_FIELDS: dict[str, str] = {
    "_kafka_topic": "string",
    "_kafka_partition": "int",
    "_kafka_offset": "int",
    "_kafka_timestamp": "datetime",
    "_kafka_key": "string",
}
KAFKA_KEY = "_kafka_key"
# What a join side's events carry of the record: kept in the join's state, whose schema a checkpoint of an earlier
# version holds, so the key (added since) is not among them.
JOIN_METADATA_FIELDS: dict[str, str] = {name: kind for name, kind in KAFKA_METADATA_FIELDS.items() if name != KAFKA_KEY}
# The record's headers, a map<string,string> (values as UTF-8 text; of a header sent twice, the last). In
# expressions `_kafka_headers['trace-id']`; one header is the string field `_kafka_headers.<name>` (a column's
# `field`, a dedup key; NULL when the record lacks it).
KAFKA_HEADERS = "_kafka_headers"
RESERVED_PREFIXES = ("_kafka_", "_cf_")

MAX_WINDOW_SECONDS = 7 * 24 * 3600
_WINDOW_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_WINDOW_RE = re.compile(r"^\s*(\d+)\s*([smhd])\s*\Z")
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
# What earlier versions chose for the dedup state (DedupSpec.state_store): still accepted, no longer used nor
# written; removed in ClearFlow 0.2.0.
StateStore = Literal["auto", "memory", "rocksdb"]
STATE_STORES: tuple[str, ...] = get_args(StateStore)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_IDENT_RE = re.compile(rf"^{_IDENT}\Z")  # \Z, not $: "name\n" is no name
_PATH_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*\Z")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}\Z")
_HEADER_FIELD_RE = re.compile(rf"^{KAFKA_HEADERS}\.{_IDENT}\Z")


def kafka_header_fields(names: Iterable[str]) -> dict[str, str]:
    """The header fields among `names` (`_kafka_headers.trace_id`), each a string field."""
    return {name: "string" for name in names if _HEADER_FIELD_RE.match(name)}


def kafka_record_fields(names: Iterable[str]) -> dict[str, str]:
    """What a dedup key may name besides the source's fields: the record's key, and the headers among `names`."""
    return {KAFKA_KEY: KAFKA_METADATA_FIELDS[KAFKA_KEY], **kafka_header_fields(names)}


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
    """The time one spec's checks may take (`clearflow_spec.limits.VALIDATION_SECONDS`). Every check is linear in
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


# --- windows -----------------------------------------------------------------------------------------------


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

STRICT = ConfigDict(extra="forbid", str_strip_whitespace=False, validate_default=True)


def check_ident(value: str, what: str) -> str:
    if not _IDENT_RE.match(value):
        raise ValueError(f"invalid {what} {value!r}: use letters, digits and '_', not starting with a digit")
    return value


class FieldSpec(BaseModel):
    model_config = STRICT

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


# Unix milliseconds below this are 1973 or earlier: seconds given where milliseconds were meant.
_MIN_TIMESTAMP_MS = 10**11


def starting_timestamp_ms(text: str) -> int:
    """`source.starting_offsets` as a time: unix milliseconds ("1764547200000") or ISO 8601
    ("2026-12-01T00:00:00Z"; without an offset, UTC). Raises ValueError saying what to write instead."""
    usage = "use earliest, latest, or a time: ISO 8601 ('2026-12-01T00:00:00Z') or unix milliseconds"
    text = text.strip()
    if text.isdigit():
        millis = int(text)
        if millis < _MIN_TIMESTAMP_MS:
            raise ValueError(
                f"starting_offsets {text} reads as milliseconds before 1973: give unix milliseconds (seconds x 1000)"
            )
        return millis
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"invalid starting_offsets {text!r}: {usage}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _starting_offsets(value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and value not in ("earliest", "latest"):
        starting_timestamp_ms(value)
    return value


# The check travels with the type, so a partial spec (the wizard's draft) checks it too.
StartingOffsets = Annotated[str, BeforeValidator(_starting_offsets)]


def check_topic_pattern(value: object) -> object:
    """A source's `topic_pattern` is a regular expression (Python's and Java's syntax agree on the usual ones:
    `orders\\..*`, `(eu|us)-clicks`). Raises ValueError saying what is wrong."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        raise ValueError("topic_pattern is empty: give a regular expression such as 'orders\\..*', or list topics")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"topic_pattern {value!r} is not a regular expression: {exc}") from None
    # The web app and the worker match it against every topic name of a cluster: no pattern that can backtrack
    # without end on a crafted name (the rule the expressions' regular expressions follow).
    problem = regex_problem(value)
    if problem is not None:
        raise ValueError(f"topic_pattern: {problem}")
    return value


TopicPattern = Annotated[str, BeforeValidator(check_topic_pattern)]


def topic_matches(pattern: str, topic: str) -> bool:
    """Whether a topic pattern takes `topic`: its whole name matches, as Kafka's consumer matches a pattern."""
    return re.fullmatch(pattern, topic) is not None


# How record values are encoded. avro: Confluent's wire format with `schema_registry`, or plain Avro bodies of
# the one `avro_schema` given. protobuf: Confluent's wire format with `schema_registry`.
SourceFormat = Literal["json", "avro", "protobuf"]
SOURCE_FORMATS: tuple[str, ...] = get_args(SourceFormat)


class SourceSpec(BaseModel):
    model_config = STRICT

    kafka: KafkaConnectionSpec
    # The topics read: listed by name, or every topic whose whole name matches `topic_pattern` (a regular
    # expression, Spark's `subscribePattern`), also topics created later. One of the two.
    topics: list[str] = Field(default_factory=list)
    topic_pattern: TopicPattern | None = None
    # "earliest", "latest", or a time (ISO 8601, or unix milliseconds): each partition starts at its first record
    # at or after it. Used on a start without a checkpoint only (the first, or after a reset); afterwards the
    # checkpoint decides.
    starting_offsets: StartingOffsets = "earliest"
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

    @model_validator(mode="after")
    def _topics_or_pattern(self) -> SourceSpec:
        if self.topics and self.topic_pattern is not None:
            raise ValueError("give topics or topic_pattern, not both")
        if not self.topics and self.topic_pattern is None:
            raise ValueError("give topics (a list of names) or topic_pattern (a regular expression)")
        return self

    def reads_topic(self, topic: str) -> bool:
        """Whether this source reads `topic`: it is listed, or its whole name matches the pattern (as Kafka's
        consumer matches a pattern subscription)."""
        if self.topic_pattern is None:
            return topic in self.topics
        return topic_matches(self.topic_pattern, topic)

    def topics_read(self, existing: Iterable[str]) -> list[str]:
        """The topics this source reads among `existing` (the cluster's topics now): the listed ones, in their
        order, or those the pattern matches, by name."""
        if self.topic_pattern is None:
            return list(self.topics)
        return sorted(t for t in set(existing) if self.reads_topic(t))

    @property
    def starting_timestamp_ms(self) -> int | None:
        """The time to start from in unix milliseconds; None for `earliest` or `latest`."""
        if self.starting_offsets in ("earliest", "latest"):
            return None
        return starting_timestamp_ms(self.starting_offsets)

    @property
    def uses_registry(self) -> bool:
        return self.format in ("avro", "protobuf") and self.schema_registry is not None

    @property
    def registry_schema_type(self) -> str:
        """The registry's name for the format's schemas (AVRO, PROTOBUF)."""
        return self.format.upper()


class Windowed(BaseModel):
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


class DedupSpec(Windowed):
    model_config = STRICT

    keys: list[str] = Field(min_length=1)
    window: str = "1h"
    time: Literal["ingestion", "event"] = "ingestion"
    event_time_field: str | None = None
    # Deprecated, removed in ClearFlow 0.2.0: accepted for specs written by earlier versions, which chose a
    # memory or RocksDB store here, and never written again (`exclude`: not in `to_dict()`, the stored spec, the
    # API's answers nor `clearflow export`). The dedup state is always on RocksDB, with bounded memory
    # (spark_jobs.session.state_store_conf).
    state_store: StateStore = Field(default="auto", exclude=True)

    @model_validator(mode="after")
    def _event_time(self) -> DedupSpec:
        if self.time == "event" and not self.event_time_field:
            raise ValueError("time 'event' needs event_time_field")
        return self


# --- checks ------------------------------------------------------------------------------------------------


# A schema's json fields (arrays, maps, unions of several types) are read as their JSON text: as text or json.
_FROM_SCHEMA_JSON = ("string", "json")


def schema_field_issues(
    fields: Sequence[FieldSpec],
    known: dict[str, SchemaField],
    *,
    where: str = "the Avro schema",
    prefix: str = "source",
) -> list[SpecIssue]:
    """`source.fields` against a schema's fields (`clearflow_spec.avro_schema`): a path the schema lacks is an error
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
        elif is_nested(found.type) and field.type not in (found.type, *_FROM_SCHEMA_JSON):
            issues.append(
                SpecIssue(
                    f"{prefix}.fields[{i}].type",
                    f"field '{field.path}' is {found.describe()} in {where}: read it as {found.type}, string or "
                    f"json, not {field.type}",
                )
            )
    return issues


def source_issues(source: SourceSpec, prefix: str = "source") -> list[SpecIssue]:
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


def field_issues(fields: Sequence[FieldSpec], prefix: str = "source") -> list[SpecIssue]:
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


def dedup_issues(dedup: DedupSpec, fields: dict[str, str], path: str, source_path: str) -> list[SpecIssue]:
    """One side's dedup keys and event time field against that side's fields."""
    issues = []
    for i, key in enumerate(dedup.keys):
        if key not in fields:
            issues.append(SpecIssue(f"{path}.keys[{i}]", f"unknown field '{key}'; add it to {source_path}.fields"))
        elif fields[key] == "json" or is_nested(fields[key]):
            issues.append(SpecIssue(f"{path}.keys[{i}]", f"a {fields[key]} field ('{key}') cannot be a dedup key"))
    if len(set(dedup.keys)) != len(dedup.keys):
        issues.append(SpecIssue(f"{path}.keys", "a key is listed twice"))
    if dedup.time == "event" and dedup.event_time_field:
        issues += time_field_issues(dedup.event_time_field, fields, f"{path}.event_time_field", source_path)
    return issues


def time_field_issues(name: str, fields: dict[str, str], path: str, source_path: str) -> list[SpecIssue]:
    if name not in fields:
        return [SpecIssue(path, f"unknown field '{name}'; add it to {source_path}.fields")]
    if fields[name] != "datetime":
        return [SpecIssue(path, f"field '{name}' must have type datetime, not {fields[name]}")]
    return []


__all__ = [
    "DEDUP_WINDOWS",
    "JOIN_METADATA_FIELDS",
    "KAFKA_HEADERS",
    "KAFKA_KEY",
    "KAFKA_METADATA_FIELDS",
    "MAX_WINDOW_SECONDS",
    "RESERVED_PREFIXES",
    "SOURCE_FORMATS",
    "STATE_STORES",
    "STRICT",
    "DedupSpec",
    "FieldSpec",
    "SourceFormat",
    "SourceSpec",
    "SpecError",
    "SpecIssue",
    "StateStore",
    "ValidationBudget",
    "Windowed",
    "check_ident",
    "check_topic_pattern",
    "dedup_issues",
    "field_issues",
    "kafka_header_fields",
    "kafka_record_fields",
    "parse_window",
    "schema_field_issues",
    "source_issues",
    "starting_timestamp_ms",
    "time_field_issues",
    "topic_matches",
]
