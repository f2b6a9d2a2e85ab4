"""Pipeline specs as the web app stores them: the bridge between a pipeline's saved connections and
`spark_jobs.spec` (the engine's spec module, no Spark import). Validation with the connections merged in,
the stored (secret-free) JSON, the job's spec with real secrets, the live checks against Kafka and
ClickHouse, and whether a new version can continue from the old one's checkpoint.

A spec as clients send it may leave out `source.kafka`, `source.schema_registry` (format avro) and the
host/credentials of `sink.clickhouse`: they come from the pipeline's saved connections. `merge_connections`
puts them in (secrets as `SECRET_MASK` for validation and storage, real values only in `with_connections` for
the job's spec file), so the stored JSON never holds a secret. `sink.clickhouse.database` is the pipeline's
choice and is kept when given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from spark_jobs.connections import connection_dict
from spark_jobs.spec import (
    SPEC_VERSION,
    DedupSpec,
    PipelineSpec,
    SpecError,
    SpecIssue,
    field_type_compatible,
    parse_spec,
)

if TYPE_CHECKING:
    from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection

UNNAMED = "unnamed"

__all__ = [
    "PipelineSpec",
    "SpecError",
    "SpecIssue",
    "check_live",
    "checkpoint_incompatibilities",
    "merge_connections",
    "name_error",
    "parse",
    "to_stored",
    "with_connections",
]


def _section(
    connection: KafkaConnection | ClickHouseConnection | SchemaRegistryConnection, *, path: str, reveal: bool
) -> dict[str, Any]:
    """The connection's spec section (`connection.to_spec()`): every field the job needs, secrets masked
    unless `reveal`. A connection saved before a rule of the spec existed gets SpecError at `path`."""
    try:
        section = connection.to_spec()
    except pydantic.ValidationError as exc:
        issues = []
        for error in exc.errors(include_url=False, include_input=False):
            where = ".".join([path, *(str(part) for part in error["loc"])])
            issues.append(
                SpecIssue(where, f"connection '{connection.name}': {error['msg'].removeprefix('Value error, ')}")
            )
        raise SpecError(issues) from None
    return connection_dict(section, reveal_secrets=reveal)


def merge_connections(
    spec: Mapping[str, Any],
    *,
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
    reveal: bool = False,
) -> dict[str, Any]:
    """A copy of `spec` with `version`, `name` and the connection sections filled in from the models.

    Only the levels it changes are copied (the top, `source`, `sink`): the client's spec is left as it was, and
    a large one (thousands of fields, refused by the spec's caps) costs no deep copy on the way."""
    data: dict[str, Any] = dict(spec)
    data.setdefault("version", SPEC_VERSION)
    if name is not None:
        data["name"] = name
    source = data.get("source")
    if isinstance(source, dict) and (kafka_connection is not None or schema_registry_connection is not None):
        data["source"] = source = dict(source)
        if kafka_connection is not None:
            source["kafka"] = _section(kafka_connection, path="source.kafka", reveal=reveal)
        if schema_registry_connection is not None:
            source["schema_registry"] = _section(
                schema_registry_connection, path="source.schema_registry", reveal=reveal
            )
    if clickhouse_connection is not None:
        sink = data.get("sink")
        if isinstance(sink, dict):
            data["sink"] = sink = dict(sink)
            given = sink.get("clickhouse")
            database = given.get("database") if isinstance(given, dict) else None
            section = _section(clickhouse_connection, path="sink.clickhouse", reveal=reveal)
            if isinstance(database, str) and database:
                section["database"] = database  # the pipeline's target database, not the connection's default
            sink["clickhouse"] = section
    return data


def parse(
    spec: Mapping[str, Any] | Any,
    *,
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> PipelineSpec:
    """Validate a client's spec with the connections merged in. Raises SpecError (paths like `sink.table`)."""
    if not isinstance(spec, Mapping):
        raise SpecError([SpecIssue("", "a pipeline spec must be a JSON object")])
    data = merge_connections(
        spec,
        name=name,
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        schema_registry_connection=schema_registry_connection,
    )
    # Checking a draft before it has a name: the name is checked when the pipeline is saved.
    data.setdefault("name", UNNAMED)
    return parse_spec(data)


def name_error(name: str) -> str | None:
    """None when `name` is a valid pipeline name for the spec, else why not (checked by the spec module)."""
    try:
        parse_spec({"version": SPEC_VERSION, "name": name})
    except SpecError as exc:
        return next((issue.message for issue in exc.errors if issue.path == "name"), None)
    return None  # pragma: no cover - a spec with only a name is never valid


def to_stored(parsed: PipelineSpec) -> dict[str, Any]:
    """The JSON kept in `PipelineVersion.spec`: secrets masked."""
    return parsed.to_dict(reveal_secrets=False)


def with_connections(
    stored: Mapping[str, Any],
    *,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> dict[str, Any]:
    """The job's spec: the stored spec with the real secrets from the connections (validated again).

    Raises ForbiddenAddressError when a connection's host resolves into a forbidden network (checked now, at
    deploy time, as DNS may have changed since the connection was saved).
    """
    kafka_connection.client_settings()
    clickhouse_connection.client_settings()
    if schema_registry_connection is not None:
        schema_registry_connection.client_settings()
    data = merge_connections(
        stored,
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        schema_registry_connection=schema_registry_connection,
        reveal=True,
    )
    return parse_spec(data).to_dict(reveal_secrets=True)


def check_live(
    parsed: PipelineSpec,
    *,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> None:
    """Check the spec against the systems: topics exist; with a schema registry, each topic's value subject has
    Avro versions and every field is in one of them; an existing target table has the mapped columns with
    compatible types and every column that needs a value is mapped. Raises SpecError with paths;
    KafkaClientError / ClickHouseClientError / SchemaRegistryClientError when a system cannot be asked.
    """
    from spark_jobs.schema_registry import registry_field_issues
    from webapp.connections import clickhouse_client, kafka_client, registry_client
    from webapp.pipelines.mapping import writable

    issues: list[SpecIssue] = []
    topics = set(kafka_client.list_topic_names(kafka_connection.client_settings()))
    for i, topic in enumerate(parsed.source.topics):
        if topic not in topics:
            issues.append(SpecIssue(f"source.topics[{i}]", f"topic '{topic}' does not exist on the cluster"))
    if schema_registry_connection is not None and parsed.source.uses_registry:
        registry = schema_registry_connection.client_settings()
        subjects = {}
        for topic in parsed.source.topics:
            found = registry_client.topic_schemas(registry, topic)
            subjects[found.subject] = found.versions
        issues += registry_field_issues(parsed.source.fields, subjects)

    sink = parsed.sink
    settings = clickhouse_connection.client_settings()
    database = sink.clickhouse.database
    databases = clickhouse_client.list_databases(settings)
    if database not in databases and database != "default":
        issues.append(SpecIssue("sink.clickhouse.database", f"database '{database}' does not exist"))
    else:
        tables = {t.name for t in clickhouse_client.list_tables(settings, database=database)}
        if sink.table not in tables:
            if not sink.create_table:
                issues.append(
                    SpecIssue("sink.table", f"table '{database}.{sink.table}' does not exist; set create_table")
                )
        else:
            columns = {c.name: c for c in clickhouse_client.list_columns(settings, database=database, table=sink.table)}
            types = parsed.field_types()
            mapped = set()
            for i, column in enumerate(sink.columns):
                mapped.add(column.column)
                actual = columns.get(column.column)
                if actual is None:
                    issues.append(
                        SpecIssue(
                            f"sink.columns[{i}].column",
                            f"table '{sink.table}' has no column '{column.column}'",
                        )
                    )
                elif not writable(actual):
                    issues.append(
                        SpecIssue(
                            f"sink.columns[{i}].column",
                            f"column '{column.column}' is {actual.default_kind}: ClickHouse computes it, "
                            "an insert cannot write it",
                        )
                    )
                elif column.field in types and not field_type_compatible(types[column.field], actual.type):
                    issues.append(
                        SpecIssue(
                            f"sink.columns[{i}].type",
                            f"a {types[column.field]} field ('{column.field}') cannot be written to column "
                            f"'{column.column}' of type {actual.type}",
                        )
                    )
            for name, column in columns.items():
                if column.required and name not in mapped:
                    issues.append(
                        SpecIssue(
                            "sink.columns",
                            f"column '{name}' ({column.type}) is not Nullable and has no default: map a field to it",
                        )
                    )
    if issues:
        raise SpecError(issues)


def checkpoint_incompatibilities(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Why a job of spec `new` cannot continue from the checkpoint of spec `old` ([] when it can).

    The checkpoint holds the Kafka offsets per topic and the dedup state, whose layout follows the dedup keys
    and time mode. Filters, computed fields, the mapping and the table do not live in it.
    """
    reasons = []
    old_source, new_source = old.get("source") or {}, new.get("source") or {}
    if sorted(old_source.get("topics") or []) != sorted(new_source.get("topics") or []):
        reasons.append("the topics changed (the checkpoint keeps offsets per topic)")
    old_dedup, new_dedup = old.get("dedup"), new.get("dedup")
    if bool(old_dedup) != bool(new_dedup):
        reasons.append("deduplication was switched " + ("on" if new_dedup else "off"))
    elif old_dedup and new_dedup:
        if list(old_dedup.get("keys") or []) != list(new_dedup.get("keys") or []):
            reasons.append("the dedup keys changed (the dedup state is kept by key)")
        old_time = (old_dedup.get("time"), old_dedup.get("event_time_field"))
        new_time = (new_dedup.get("time"), new_dedup.get("event_time_field"))
        if old_time != new_time:
            reasons.append("the dedup time (ingestion or event time field) changed")
        if _rocksdb(old_dedup) != _rocksdb(new_dedup):
            reasons.append("the dedup state store changed")
    return reasons


def _rocksdb(dedup: Mapping[str, Any]) -> bool | None:
    try:
        return DedupSpec.model_validate(dict(dedup)).use_rocksdb
    except ValueError:
        return None
