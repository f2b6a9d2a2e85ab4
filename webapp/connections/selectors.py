"""Reads: the connections of the user's workspaces, and what their Kafka clusters and ClickHouse servers hold.

`*_get` raise `Http404` for objects that do not exist or belong to another workspace (both look the same).
The Kafka and ClickHouse reads raise `KafkaClientError` / `ClickHouseClientError` (API 502) when the
server fails, and `KafkaTopicNotFoundError` / `ClickHouseNotFoundError` (API 404) for unknown names.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from clearflow_spec.avro_schema import AvroSchemaError
from clearflow_spec.limits import LimitError
from clearflow_spec.proto_parser import ProtobufSchemaError
from webapp.connections import clickhouse_client, kafka_client, kafka_span, registry_client, schema
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.connections.throttle import count_connection_request
from webapp.core.changes import Change
from webapp.core.exceptions import ApplicationError
from webapp.workspaces.models import Workspace
from webapp.workspaces.policy import visible_workspaces

Connection = TypeVar("Connection", KafkaConnection, ClickHouseConnection, SchemaRegistryConnection)


def _named(connections: QuerySet[Connection], name: str | None) -> QuerySet[Connection]:
    return connections if name is None else connections.filter(name=name)


# What a search looks in besides the name: where each kind of connection points.
SEARCHED_ADDRESS = {KafkaConnection: "bootstrap_servers", ClickHouseConnection: "host", SchemaRegistryConnection: "url"}


def _visible(
    model: type[Connection],
    user: AbstractBaseUser,
    workspace: Workspace | None,
    name: str | None,
    search: str | None = None,
) -> QuerySet[Connection]:
    """The connections of the caller's workspaces (only `workspace`'s, only the one called `name`, only those
    whose name or address contains `search` in any case, when given)."""
    connections = model.objects.filter(workspace__in=visible_workspaces(user))
    if workspace is not None:
        connections = connections.filter(workspace=workspace)
    if search and search.strip():
        words = search.strip()
        address = SEARCHED_ADDRESS[model]
        connections = connections.filter(Q(name__icontains=words) | Q(**{f"{address}__icontains": words}))
    return _named(connections, name).order_by("name", "id")


def kafka_connection_list(
    *,
    user: AbstractBaseUser,
    name: str | None = None,
    workspace: Workspace | None = None,
    search: str | None = None,
) -> QuerySet[KafkaConnection]:
    """The Kafka connections of the user's workspaces, by name."""
    return _visible(KafkaConnection, user, workspace, name, search)


def connections_by_use(connections: QuerySet[Connection]) -> QuerySet[Connection]:
    """`connections` with the workspace's default first, then the most used (by how many pipelines read or write
    through each), then by name: the order the wizard offers them in."""
    return connections.annotate(pipeline_uses=Count("pipelines")).order_by(
        "-is_default", "-pipeline_uses", "name", "id"
    )


def kafka_connection_get(*, user: AbstractBaseUser, pk: Any) -> KafkaConnection:
    """The connection `pk`; Http404 if missing, of a workspace the user is not in, or `pk` is not a number."""
    return get_object_or_404(kafka_connection_list(user=user), pk=_int_pk(pk))


def clickhouse_connection_list(
    *,
    user: AbstractBaseUser,
    name: str | None = None,
    workspace: Workspace | None = None,
    search: str | None = None,
) -> QuerySet[ClickHouseConnection]:
    """The ClickHouse connections of the user's workspaces, by name."""
    return _visible(ClickHouseConnection, user, workspace, name, search)


def clickhouse_connection_get(*, user: AbstractBaseUser, pk: Any) -> ClickHouseConnection:
    return get_object_or_404(clickhouse_connection_list(user=user), pk=_int_pk(pk))


def schema_registry_connection_list(
    *,
    user: AbstractBaseUser,
    name: str | None = None,
    workspace: Workspace | None = None,
    search: str | None = None,
) -> QuerySet[SchemaRegistryConnection]:
    """The schema registry connections of the user's workspaces, by name."""
    return _visible(SchemaRegistryConnection, user, workspace, name, search)


def schema_registry_connection_get(*, user: AbstractBaseUser, pk: Any) -> SchemaRegistryConnection:
    return get_object_or_404(schema_registry_connection_list(user=user), pk=_int_pk(pk))


@dataclass(frozen=True)
class ConnectionChanges:
    """What saving a connection's settings under its name would do: create it, or change these fields."""

    # The saved one of that name; None: it would be new.
    connection: KafkaConnection | ClickHouseConnection | SchemaRegistryConnection | None
    changes: list[Change] = field(default_factory=list)  # a secret's change has `secret` set and no values


def connection_changes(
    *,
    model: type[Connection],
    owner: AbstractBaseUser,
    workspace: Workspace,
    data: Mapping[str, Any],
    compare_secrets: bool = True,
) -> ConnectionChanges:
    """Compare `data` (the fields a user sets, with `name`) with the workspace's connection of that name, as the
    services would save it: validated the same way (Django's ValidationError by field). A secret given as None or
    left out stays as it is, as in an update; secrets are compared here and never returned. Without
    `compare_secrets` (a read-only token) the secrets given are not looked at: "differs" or not would let a reader
    guess a stored password one try at a time."""
    existing = _named(model.objects.filter(workspace=workspace), data["name"]).first()
    proposed = copy.copy(existing) if existing is not None else model(owner=owner, workspace=workspace)
    for name in model.EDITABLE_FIELDS:
        secret = name in model.SECRET_FIELDS
        if name in data and not (secret and (data[name] is None or not compare_secrets)):
            setattr(proposed, name, data[name])
    proposed.full_clean(exclude=["owner", "workspace"], validate_constraints=False)
    if existing is None:
        return ConnectionChanges(connection=None)
    changes = []
    for name in model.EDITABLE_FIELDS:
        old, new = getattr(existing, name), getattr(proposed, name)
        if old != new:
            secret = name in model.SECRET_FIELDS
            changes.append(Change(name, None if secret else old, None if secret else new, secret=secret))
    return ConnectionChanges(connection=existing, changes=changes)


def _int_pk(pk: Any) -> int:
    from django.http import Http404

    try:
        return int(pk)
    except (TypeError, ValueError):
        raise Http404("No such object.") from None


# -- what a Kafka cluster holds -------------------------------------------------------------------------


def kafka_topic_list(*, connection: KafkaConnection) -> list[kafka_client.TopicInfo]:
    """Topics with partition and (estimated) message counts, sorted by name. Every read of a server here counts
    towards the owner's connection requests (`throttle`): TooManyRequestsError past the minute's limit."""
    count_connection_request(connection.owner)
    return kafka_client.list_topics(connection.client_settings())


def kafka_event_sample(
    *,
    connection: KafkaConnection,
    topics: Sequence[str],
    count: int = 20,
    position: Literal["newest", "oldest"] = "newest",
    schema_registry_connection: SchemaRegistryConnection | None = None,
    span: tuple[int, int] | None = None,
) -> list[kafka_client.SampledEvent]:
    """Up to `count` (1..500) newest or oldest events across `topics`, oldest first (given a `span`, (start, end)
    in ms since the epoch: its first events written within it instead); with a schema registry, their values
    decoded from Avro in the Confluent wire format (`avro_event_sample`)."""
    if schema_registry_connection is not None:
        return avro_event_sample(
            connection=connection,
            schema_registry_connection=schema_registry_connection,
            topics=topics,
            count=count,
            position=position,
            span=span,
        ).events
    count_connection_request(connection.owner)
    return _sampled(connection, topics=topics, count=count, position=position, span=span)


def _sampled(
    connection: KafkaConnection,
    *,
    topics: Sequence[str],
    count: int,
    position: Literal["newest", "oldest"],
    span: tuple[int, int] | None,
) -> list[kafka_client.SampledEvent]:
    settings = connection.client_settings()
    if span is None:
        return kafka_client.sample_events(settings, topics=topics, count=count, position=position)
    return kafka_span.sample_span(settings, topics=topics, start_ms=span[0], end_ms=span[1], count=count)


@dataclass(frozen=True)
class AvroSample:
    """Sampled events decoded with their writer schemas, the subjects' versions, and which ones the sample used."""

    events: list[kafka_client.SampledEvent]
    undecodable: int
    subjects: list[registry_client.TopicSchemas]
    used: list[SchemaVersionUsed]
    schema: str | None  # the schema the fields are read from: the newest version the sample used, else the latest

    @property
    def decoded_values(self) -> list[Any]:
        return [event.value for event in self.events if event.decode_error is None]


@dataclass(frozen=True)
class SchemaVersionUsed:
    subject: str | None  # None: an id no subject of the topics lists (registered under another subject)
    version: int | None
    schema_id: int
    events: int


def avro_event_sample(
    *,
    connection: KafkaConnection,
    schema_registry_connection: SchemaRegistryConnection,
    topics: Sequence[str],
    count: int = 20,
    position: Literal["newest", "oldest"] = "newest",
    span: tuple[int, int] | None = None,
) -> AvroSample:
    """Sampled events (as `kafka_event_sample` reads them) decoded with the registry's schemas (magic byte 0,
    schema id, Avro body); which subject version each schema id is; and the schema the pipeline's fields come
    from."""
    count_connection_request(connection.owner)
    registry = schema_registry_connection.client_settings()
    events = _sampled(connection, topics=topics, count=count, position=position, span=span)
    subjects = [registry_client.topic_schemas(registry, topic) for topic in topics]
    decoded = registry_client.decode_events(registry, events)
    counts: dict[int, int] = {}
    for event in decoded.events:
        if event.decode_error is None and event.schema_id is not None:
            counts[event.schema_id] = counts.get(event.schema_id, 0) + 1
    used = []
    for schema_id in sorted(counts):
        where = next(((s.subject, s.version_of(schema_id)) for s in subjects if s.version_of(schema_id)), None)
        used.append(
            SchemaVersionUsed(
                subject=where[0] if where else None,
                version=where[1].version if where else None,
                schema_id=schema_id,
                events=counts[schema_id],
            )
        )
    newest_used = max(used, key=lambda u: (u.version or 0, u.schema_id), default=None)
    if newest_used is not None:
        schema = decoded.schemas[newest_used.schema_id]
    else:
        latest = next((s.latest for s in subjects if s.latest and s.latest.schema_type in ("AVRO", "PROTOBUF")), None)
        schema = latest.schema if latest else None
    return AvroSample(
        events=decoded.events, undecodable=decoded.undecodable, subjects=subjects, used=used, schema=schema
    )


def schema_infer(*, values: Sequence[Any], avro_schema: str | None = None) -> list[schema.InferredField]:
    """Fields (dotted paths, types, nullability, examples) inferred from sampled event values; with an Avro
    schema, the fields are the schema's and the values give examples only. ApplicationError (400) for a schema
    that does not read or is over a cap (`limits.SCHEMA_FIELDS`, `SCHEMA_DEPTH`), in words naming it."""
    try:
        if avro_schema is not None:
            return schema.infer_from_avro_schema(avro_schema, values)
        return schema.infer_schema(values)
    except (AvroSchemaError, ProtobufSchemaError, LimitError) as exc:
        raise ApplicationError(f"ClearFlow cannot propose fields from this sample: {str(exc).rstrip('.')}.") from None


# -- what a ClickHouse server holds ---------------------------------------------------------------------


def clickhouse_database_list(*, connection: ClickHouseConnection) -> list[str]:
    count_connection_request(connection.owner)
    return clickhouse_client.list_databases(connection.client_settings())


def clickhouse_table_list(*, connection: ClickHouseConnection, database: str) -> list[clickhouse_client.TableInfo]:
    count_connection_request(connection.owner)
    return clickhouse_client.list_tables(connection.client_settings(), database=database)


def clickhouse_column_list(
    *, connection: ClickHouseConnection, database: str, table: str
) -> list[clickhouse_client.ColumnInfo]:
    count_connection_request(connection.owner)
    return clickhouse_client.list_columns(connection.client_settings(), database=database, table=table)
