"""Pipeline specs and a pipeline's saved connections: the bridge between the web app and `clearflow_spec.spec` (the
engine's spec module, no Spark import).

- `parse`: a spec as a client sends it (JSON, the edge) -> `PipelineSpec`. It may leave out `source.kafka` and
  the host/credentials of `sink.clickhouse`: they come from the pipeline's saved connections
  (`merge_connections`, secrets masked). `sink.clickhouse.database` is the pipeline's choice and is kept.
- `with_connection_sections`: a typed spec with the connections' sections put in (masked: what is stored).
- `with_connections`: the job's spec, with the connections' real secrets (only for the job's spec file).
- `check_live`: the checks against Kafka and ClickHouse; `checkpoint_incompatibilities`: whether a new version
  can continue from the old one's checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from clearflow_spec.connections import connection_dict, spec_with_connections
from clearflow_spec.spec import (
    SPEC_VERSION,
    PipelineSpec,
    SpecError,
    SpecIssue,
    field_type_compatible,
    parse_spec,
    version_for,
)

if TYPE_CHECKING:
    from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection

    AnyConnection = KafkaConnection | ClickHouseConnection | SchemaRegistryConnection

UNNAMED = "unnamed"


def _source_format(spec: PipelineSpec | Mapping[str, Any] | None) -> Any:
    if isinstance(spec, PipelineSpec):
        return spec.source.format
    source = spec.get("source") if isinstance(spec, Mapping) else None
    return source.get("format", "json") if isinstance(source, Mapping) else "json"


def registry_after_update(
    *,
    current: SchemaRegistryConnection | None,
    given: SchemaRegistryConnection | None,
    spec: PipelineSpec | Mapping[str, Any] | None,
) -> SchemaRegistryConnection | None:
    """The schema registry connection a pipeline has after an update (and what a diff compares with): the one
    given, else the one it has, unless the spec no longer reads Avro (then the registry it used is let go)."""
    if given is None and _source_format(spec) not in ("avro", "protobuf"):
        return None
    return given or current


__all__ = [
    "PipelineSpec",
    "SpecError",
    "SpecIssue",
    "check_live",
    "checkpoint_incompatibilities",
    "join_live_issues",
    "merge_connections",
    "name_error",
    "parse",
    "registry_after_update",
    "with_connection_sections",
    "with_connections",
]


def _connection_spec(connection: AnyConnection, *, path: str, now: bool = False) -> Any:
    """The connection's spec section (`connection.to_spec()`; with `now`, `client_settings()`: the network guard
    first). A connection saved before a rule of the spec existed gets SpecError at `path`."""
    try:
        return connection.client_settings() if now else connection.to_spec()
    except pydantic.ValidationError as exc:
        issues = []
        for error in exc.errors(include_url=False, include_input=False):
            where = ".".join([path, *(str(part) for part in error["loc"])])
            issues.append(
                SpecIssue(where, f"connection '{connection.name}': {error['msg'].removeprefix('Value error, ')}")
            )
        raise SpecError(issues) from None


def _section(connection: AnyConnection, *, path: str) -> dict[str, Any]:
    """The connection's spec section as JSON, secrets masked."""
    return connection_dict(_connection_spec(connection, path=path), reveal_secrets=False)


def merge_connections(
    spec: Mapping[str, Any],
    *,
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> dict[str, Any]:
    """A copy of a client's spec JSON with `version`, `name` and the connection sections (secrets masked) filled
    in from the models.

    Only the levels it changes are copied (the top, `source`, `sink`; `spec_with_connections`): the client's spec
    is left as it was, and a large one (thousands of fields, refused by the spec's caps) costs no deep copy."""
    data: dict[str, Any] = {**spec, "version": spec.get("version", version_for(spec))}
    if name is not None:
        data["name"] = name
    # A section is read from its connection only where the spec has a place for it (else validation says so).
    kafka = clickhouse = registry = None
    if kafka_connection is not None and isinstance(spec.get("source"), dict):
        kafka = _section(kafka_connection, path="source.kafka")
    if schema_registry_connection is not None and isinstance(spec.get("source"), dict):
        registry = _section(schema_registry_connection, path="source.schema_registry")
    if clickhouse_connection is not None and isinstance(spec.get("sink"), dict):
        clickhouse = _section(clickhouse_connection, path="sink.clickhouse")
    return spec_with_connections(data, kafka=kafka, clickhouse=clickhouse, schema_registry=registry)


def parse(
    spec: Mapping[str, Any] | Any,
    *,
    name: str | None = None,
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> PipelineSpec:
    """A client's spec JSON, validated with the connections merged in: where a spec enters as JSON (the API, the
    wizard's finished draft), it is parsed here once. Raises SpecError (paths like `sink.table`)."""
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


def _with_sections(
    spec: PipelineSpec, kafka: Any, clickhouse: Any, name: str | None, registry: Any = None
) -> PipelineSpec:
    """`spec` with these connection sections (each already a validated spec model) and `name`; the target
    database stays the pipeline's. Nothing else changes, so nothing needs checking again."""
    clickhouse = clickhouse.model_copy(update={"database": spec.sink.clickhouse.database})
    source = {"kafka": kafka, **({"schema_registry": registry} if registry is not None else {})}
    join = {}
    if spec.join is not None:  # the right side reads the same cluster and registry
        right = {
            "kafka": kafka,
            **({"schema_registry": registry} if registry and spec.join.source.format != "json" else {}),
        }
        join = {"join": spec.join.model_copy(update={"source": spec.join.source.model_copy(update=right)})}
    return spec.model_copy(
        update={
            "source": spec.source.model_copy(update=source),
            "sink": spec.sink.model_copy(update={"clickhouse": clickhouse}),
            **join,
            **({"name": name} if name is not None else {}),
        }
    )


def with_connection_sections(
    spec: PipelineSpec,
    *,
    name: str | None = None,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> PipelineSpec:
    """`spec` with the connections' current sections, secrets masked (what is stored), and `name` when given.
    SpecError for a connection saved before a rule of the spec existed."""
    kafka = _masked(_connection_spec(kafka_connection, path="source.kafka"))
    clickhouse = _masked(_connection_spec(clickhouse_connection, path="sink.clickhouse"))
    registry = None
    if schema_registry_connection is not None:
        registry = _masked(_connection_spec(schema_registry_connection, path="source.schema_registry"))
    return _with_sections(spec, kafka, clickhouse, name, registry)


def _masked(section: Any) -> Any:
    """A connection section with its secrets as `SECRET_MASK` (an empty one stays empty)."""
    return type(section).model_validate(connection_dict(section, reveal_secrets=False))


def with_connections(
    spec: PipelineSpec,
    *,
    name: str,
    kafka_connection: KafkaConnection,
    clickhouse_connection: ClickHouseConnection,
    schema_registry_connection: SchemaRegistryConnection | None = None,
) -> PipelineSpec:
    """The job's spec: `spec` named `name`, with the connections' real secrets. Only for the job's spec file.

    Raises ForbiddenAddressError when a connection's host resolves into a forbidden network (checked now, at
    deploy time, as DNS may have changed since the connection was saved).
    """
    kafka = _connection_spec(kafka_connection, path="source.kafka", now=True)
    clickhouse = _connection_spec(clickhouse_connection, path="sink.clickhouse", now=True)
    registry = None
    if schema_registry_connection is not None:
        registry = _connection_spec(schema_registry_connection, path="source.schema_registry", now=True)
    return _with_sections(spec, kafka, clickhouse, name, registry)


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
    from clearflow_spec.schema_registry import registry_field_issues
    from webapp.connections import clickhouse_client, kafka_client, registry_client
    from webapp.connections.throttle import count_connection_request
    from webapp.pipelines.mapping import writable

    count_connection_request(kafka_connection.owner)  # one of the requests that connect to a server (throttle)
    issues: list[SpecIssue] = []
    kafka = kafka_connection.client_settings()
    topics = set(kafka_client.list_topic_names(kafka))
    for i, topic in enumerate(parsed.source.topics):
        if topic not in topics:
            issues.append(SpecIssue(f"source.topics[{i}]", f"topic '{topic}' does not exist on the cluster"))
    pattern = parsed.source.topic_pattern
    if pattern is not None and not parsed.source.topics_read(topics):
        issues.append(
            SpecIssue(
                "source.topic_pattern",
                f"no topic on the cluster matches {pattern!r} (the whole name must match): create a topic it "
                "matches, or change the pattern",
            )
        )
    if parsed.join is not None:
        issues += join_live_issues(parsed, kafka_connection=kafka_connection, existing=topics)
    if schema_registry_connection is not None and parsed.source.uses_registry:
        registry = schema_registry_connection.client_settings()
        subjects = {}
        for topic in parsed.source.topics_read(topics):
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


def join_live_issues(
    parsed: PipelineSpec, *, kafka_connection: KafkaConnection, existing: set[str] | None = None
) -> list[SpecIssue]:
    """The join's checks against the cluster (`join_topic_issues`: the right topics exist, the window fits every
    topic's retention), asking Kafka for the topics (unless `existing` is given) and their retention. Reads only
    `parsed.source.topics` and `parsed.join` (the wizard's join step checks its section alone). Raises
    KafkaClientError when the cluster cannot be asked."""
    from webapp.connections import kafka_client

    kafka = kafka_connection.client_settings()
    if existing is None:
        existing = set(kafka_client.list_topic_names(kafka))
    return join_topic_issues(parsed, existing, kafka_client.topic_retention_ms(kafka, _join_topics(parsed, existing)))


def _join_topics(parsed: PipelineSpec, existing: set[str]) -> list[str]:
    assert parsed.join is not None
    return [t for t in [*parsed.source.topics_read(existing), *parsed.join.source.topics] if t in existing]


def join_topic_issues(
    parsed: PipelineSpec, existing: set[str], retention_ms: Mapping[str, int | None]
) -> list[SpecIssue]:
    """The right side's topics exist; the join window is no longer than any topic's retention (a restart after
    a pause as long as the window must still find the events the window holds). `retention_ms`: by topic, None
    or a negative value for no time limit."""
    join = parsed.join
    assert join is not None
    issues = [
        SpecIssue(f"join.source.topics[{i}]", f"topic '{topic}' does not exist on the cluster")
        for i, topic in enumerate(join.source.topics)
        if topic not in existing
    ]
    window_ms = join.window_seconds * 1000
    for side, topics in (("left", parsed.source.topics_read(existing)), ("right", join.source.topics)):
        for topic in topics:
            retention = retention_ms.get(topic)
            if retention is not None and 0 <= retention < window_ms:
                issues.append(
                    SpecIssue(
                        "join.window",
                        f"the window ({join.window}) is longer than the retention of the {side} topic '{topic}' "
                        f"({_duration(retention)}): shorten the window or raise the topic's retention.ms",
                    )
                )
    return issues


def _duration(ms: int) -> str:
    seconds = ms // 1000
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s" if ms % 1000 == 0 else f"{ms} ms"


def checkpoint_incompatibilities(old: PipelineSpec, new: PipelineSpec) -> list[str]:
    """Why a job of spec `new` cannot continue from the checkpoint of spec `old` ([] when it can).

    The checkpoint holds the Kafka offsets per topic and the dedup state, whose layout follows the dedup keys
    and time mode. Filters, computed fields, the mapping and the table do not live in it.
    """
    reasons = []
    if sorted(old.source.topics) != sorted(new.source.topics):
        reasons.append("the topics changed (the checkpoint keeps offsets per topic)")
    elif old.source.topic_pattern != new.source.topic_pattern:
        reasons.append("the topic pattern changed (the checkpoint keeps the subscription it started with)")
    if (old.join is None) != (new.join is None):
        reasons.append("the join was " + ("added" if new.join else "removed") + " (the checkpoint reads its sources)")
    elif old.join is not None and new.join is not None:
        if sorted(old.join.source.topics) != sorted(new.join.source.topics):
            reasons.append("the joined topics changed (the checkpoint keeps offsets per topic)")
        if old.join.keys != new.join.keys or old.join.type != new.join.type:
            reasons.append("the join keys or type changed (the join state is kept by key)")
        if old.join.dedup != new.join.dedup:
            reasons.append("the joined topic's dedup changed")
        # The join's state keeps each side's events whole (every field): its layout follows the fields.
        if old.source.fields != new.source.fields or old.join.source.fields != new.join.source.fields:
            reasons.append("the fields of a joined topic changed (the join state keeps the events with their fields)")
    old_dedup, new_dedup = old.dedup, new.dedup
    if (old_dedup is None) != (new_dedup is None):
        reasons.append("deduplication was switched " + ("on" if new_dedup else "off"))
    elif old_dedup is not None and new_dedup is not None:
        if old_dedup.keys != new_dedup.keys:
            reasons.append("the dedup keys changed (the dedup state is kept by key)")
        if (old_dedup.time, old_dedup.event_time_field) != (new_dedup.time, new_dedup.event_time_field):
            reasons.append("the dedup time (ingestion or event time field) changed")
    return reasons
