"""The three kinds of saved connection, each with its model, selectors and services, named once.

The REST API's connection views and the wizard (steps 1 and 6, their "Test connection" partials, the
connections page) do the same things with either kind: they take a `ConnectionKind` instead of naming the
Kafka or ClickHouse functions. Each adds its own serializers or forms in a subclass, e.g.
`ApiKind(**vars(KAFKA), input=...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webapp.connections import selectors, services
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection


@dataclass(frozen=True)
class ConnectionKind:
    slug: str  # "kafka" | "clickhouse" | "schema-registry": the URL part, the wizard step
    label: str
    model: type[KafkaConnection] | type[ClickHouseConnection] | type[SchemaRegistryConnection]
    list: Callable[..., Any]  # the `*_connection_list` selector, and so on
    get: Callable[..., Any]
    build: Callable[..., Any]
    create: Callable[..., Any]
    update: Callable[..., Any]
    delete: Callable[..., Any]
    test: Callable[..., Any]

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.model.SECRET_FIELDS


KAFKA = ConnectionKind(
    slug="kafka",
    label="Kafka",
    model=KafkaConnection,
    list=selectors.kafka_connection_list,
    get=selectors.kafka_connection_get,
    build=services.kafka_connection_build,
    create=services.kafka_connection_create,
    update=services.kafka_connection_update,
    delete=services.kafka_connection_delete,
    test=services.kafka_connection_test,
)
CLICKHOUSE = ConnectionKind(
    slug="clickhouse",
    label="ClickHouse",
    model=ClickHouseConnection,
    list=selectors.clickhouse_connection_list,
    get=selectors.clickhouse_connection_get,
    build=services.clickhouse_connection_build,
    create=services.clickhouse_connection_create,
    update=services.clickhouse_connection_update,
    delete=services.clickhouse_connection_delete,
    test=services.clickhouse_connection_test,
)
SCHEMA_REGISTRY = ConnectionKind(
    slug="schema-registry",
    label="Schema registry",
    model=SchemaRegistryConnection,
    list=selectors.schema_registry_connection_list,
    get=selectors.schema_registry_connection_get,
    build=services.schema_registry_connection_build,
    create=services.schema_registry_connection_create,
    update=services.schema_registry_connection_update,
    delete=services.schema_registry_connection_delete,
    test=services.schema_registry_connection_test,
)
