"""Writes and actions on Kafka, ClickHouse and schema registry connections (HackSoft services: keyword-only, typed).

Validation errors raise Django's `ValidationError` keyed by field name; a connection in use raises
`ConflictError`; an unreachable or refusing server raises `KafkaClientError` / `ClickHouseClientError` /
`SchemaRegistryClientError` (all `ExternalServiceError`, API status 502) with a plain-words message.

Secrets: `*_update` changes a secret only when its key is present in `data` with a value that is not
None; an empty string clears it. So a form's "change" button sends the key, and leaving it alone keeps it.

Every kind of connection is built, created, updated and deleted the same way: the public functions below
name the model and call one private implementation (`_build`, `_create`, `_update`, `_delete`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from webapp.connections import clickhouse_client, kafka_client, registry_client
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.connections.throttle import count_connection_request
from webapp.core.exceptions import ConflictError
from webapp.core.services import model_update

# The keys `data` may hold (defined once, on the models).
KAFKA_FIELDS = KafkaConnection.EDITABLE_FIELDS
CLICKHOUSE_FIELDS = ClickHouseConnection.EDITABLE_FIELDS
SCHEMA_REGISTRY_FIELDS = SchemaRegistryConnection.EDITABLE_FIELDS

Connection = TypeVar("Connection", KafkaConnection, ClickHouseConnection, SchemaRegistryConnection)
AnyConnection = KafkaConnection | ClickHouseConnection | SchemaRegistryConnection


def _check_unique_name(model: type, *, owner: AbstractBaseUser, name: str, exclude_pk: int | None) -> None:
    others = model.objects.filter(owner=owner, name=name)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if others.exists():
        raise ValidationError({"name": f"You already have a connection named {name!r}."})


def _save_new(connection: AnyConnection) -> None:
    try:
        with transaction.atomic():
            connection.save()
    except IntegrityError:  # a concurrent request took the name between the check and the insert
        raise ValidationError({"name": f"You already have a connection named {connection.name!r}."}) from None


def _clean_data(model: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` without secrets given as None (kept); ValidationError for keys that are not the model's fields."""
    unknown = sorted(set(data) - set(model.EDITABLE_FIELDS))
    if unknown:
        raise ValidationError({name: "Unknown field." for name in unknown})
    return {k: v for k, v in data.items() if not (k in model.SECRET_FIELDS and v is None)}


def _build(model: type[Connection], *, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Connection:
    connection = model(owner=owner, **_clean_data(model, data))
    connection.full_clean(exclude=["owner"], validate_constraints=False)
    return connection


def _create(model: type[Connection], *, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Connection:
    connection = _build(model, owner=owner, data=data)
    _check_unique_name(model, owner=owner, name=connection.name, exclude_pk=None)
    connection.full_clean()
    _save_new(connection)
    return connection


def _update(model: type[Connection], *, connection: Connection, data: Mapping[str, Any]) -> Connection:
    cleaned = _clean_data(model, data)
    if "name" in cleaned:
        _check_unique_name(model, owner=connection.owner, name=cleaned["name"], exclude_pk=connection.pk)
    connection, _ = model_update(instance=connection, fields=model.EDITABLE_FIELDS, data=cleaned)
    return connection


def _delete(connection: AnyConnection) -> None:
    users = list(connection.pipelines.order_by("name").values_list("name", flat=True)[:5])
    if users:
        raise ConflictError(
            f"The connection is used by pipeline(s): {', '.join(users)}. Change or delete them first.",
            extra={"pipelines": users},
        )
    connection.delete()


# -- Kafka ----------------------------------------------------------------------------------------------


def kafka_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> KafkaConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(KafkaConnection, owner=owner, data=data)


@transaction.atomic
def kafka_connection_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> KafkaConnection:
    """Create a saved Kafka connection from `data` (keys: KAFKA_FIELDS). Raises ValidationError."""
    return _create(KafkaConnection, owner=owner, data=data)


@transaction.atomic
def kafka_connection_update(*, connection: KafkaConnection, data: Mapping[str, Any]) -> KafkaConnection:
    """Change the fields present in `data`; secrets only when given (see module doc). Raises ValidationError."""
    return _update(KafkaConnection, connection=connection, data=data)


@transaction.atomic
def kafka_connection_delete(*, connection: KafkaConnection) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection)


def kafka_connection_test(
    *, connection: KafkaConnection, timeout: float = kafka_client.DEFAULT_TIMEOUT
) -> kafka_client.KafkaClusterInfo:
    """Brokers and topic count of the cluster (saved or unsaved connection). Raises KafkaClientError."""
    count_connection_request(connection.owner)
    return kafka_client.check_connection(connection.client_settings(), timeout=timeout)


# -- ClickHouse -----------------------------------------------------------------------------------------


def clickhouse_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> ClickHouseConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(ClickHouseConnection, owner=owner, data=data)


@transaction.atomic
def clickhouse_connection_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> ClickHouseConnection:
    """Create a saved ClickHouse connection from `data` (keys: CLICKHOUSE_FIELDS). Raises ValidationError."""
    return _create(ClickHouseConnection, owner=owner, data=data)


@transaction.atomic
def clickhouse_connection_update(*, connection: ClickHouseConnection, data: Mapping[str, Any]) -> ClickHouseConnection:
    """Change the fields present in `data`; the password only when given. Raises ValidationError."""
    return _update(ClickHouseConnection, connection=connection, data=data)


@transaction.atomic
def clickhouse_connection_delete(*, connection: ClickHouseConnection) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection)


def clickhouse_connection_test(
    *, connection: ClickHouseConnection, timeout: float = clickhouse_client.DEFAULT_TIMEOUT
) -> clickhouse_client.ClickHouseServerInfo:
    """Server version and database count (saved or unsaved connection). Raises ClickHouseClientError."""
    count_connection_request(connection.owner)
    return clickhouse_client.check_connection(connection.client_settings(), timeout=timeout)


# -- Schema registry ------------------------------------------------------------------------------------


def schema_registry_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> SchemaRegistryConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(SchemaRegistryConnection, owner=owner, data=data)


@transaction.atomic
def schema_registry_connection_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> SchemaRegistryConnection:
    """Create a saved schema registry connection from `data` (keys: SCHEMA_REGISTRY_FIELDS). Raises
    ValidationError."""
    return _create(SchemaRegistryConnection, owner=owner, data=data)


@transaction.atomic
def schema_registry_connection_update(
    *, connection: SchemaRegistryConnection, data: Mapping[str, Any]
) -> SchemaRegistryConnection:
    """Change the fields present in `data`; the password only when given. Raises ValidationError."""
    return _update(SchemaRegistryConnection, connection=connection, data=data)


@transaction.atomic
def schema_registry_connection_delete(*, connection: SchemaRegistryConnection) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection)


def schema_registry_connection_test(
    *, connection: SchemaRegistryConnection, timeout: float = registry_client.DEFAULT_TIMEOUT
) -> registry_client.SchemaRegistryInfo:
    """The registry's subjects (saved or unsaved connection). Raises SchemaRegistryClientError."""
    count_connection_request(connection.owner)
    return registry_client.check_connection(connection.client_settings(), timeout=timeout)
