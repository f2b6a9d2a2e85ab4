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

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.activity.services import activity_record, changed, secret_changes, snapshot
from webapp.connections import clickhouse_client, kafka_client, registry_client
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.connections.throttle import count_connection_request
from webapp.core.exceptions import ApplicationError, ConflictError
from webapp.core.services import model_update
from webapp.workspaces.models import Workspace
from webapp.workspaces.services import workspace_for_new_objects

# The keys `data` may hold (defined once, on the models).
KAFKA_FIELDS = KafkaConnection.EDITABLE_FIELDS
CLICKHOUSE_FIELDS = ClickHouseConnection.EDITABLE_FIELDS
SCHEMA_REGISTRY_FIELDS = SchemaRegistryConnection.EDITABLE_FIELDS

Connection = TypeVar("Connection", KafkaConnection, ClickHouseConnection, SchemaRegistryConnection)
AnyConnection = KafkaConnection | ClickHouseConnection | SchemaRegistryConnection
Info = TypeVar("Info")
LAST_TEST_MESSAGE_CHARS = 500


def _check_unique_name(model: type, *, workspace_id: int, name: str, exclude_pk: int | None) -> None:
    others = model.objects.filter(workspace_id=workspace_id, name=name)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if others.exists():
        raise ValidationError({"name": f"The workspace already has a connection named {name!r}."})


def _save_new(connection: AnyConnection) -> None:
    try:
        with transaction.atomic():
            connection.save()
    except IntegrityError:  # a concurrent request took the name between the check and the insert
        raise ValidationError({"name": f"The workspace already has a connection named {connection.name!r}."}) from None


def _clean_data(model: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` without secrets given as None (kept); ValidationError for keys that are not the model's fields."""
    unknown = sorted(set(data) - set(model.EDITABLE_FIELDS))
    if unknown:
        raise ValidationError({name: "Unknown field." for name in unknown})
    return {k: v for k, v in data.items() if not (k in model.SECRET_FIELDS and v is None)}


def _build(model: type[Connection], *, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Connection:
    connection = model(owner=owner, **_clean_data(model, data))
    connection.full_clean(exclude=["owner", "workspace"], validate_constraints=False)
    return connection


def _snapshot(connection: AnyConnection) -> dict[str, Any]:
    return snapshot(connection, connection.EDITABLE_FIELDS, connection.SECRET_FIELDS)


def secrets_changed(connection: AnyConnection, data: Mapping[str, Any]) -> list[str]:
    """The saved secrets that `data` would replace or clear (a new value, or "" for one that is set): changing
    them takes the workspace's admin (`connection.secret` in webapp.workspaces.policy)."""
    return [
        name
        for name in connection.SECRET_FIELDS
        if name in data and data[name] is not None and data[name] != getattr(connection, name)
    ]


@transaction.atomic
def _create(
    model: type[Connection], *, owner: AbstractBaseUser, data: Mapping[str, Any], workspace: Workspace | None
) -> Connection:
    connection = _build(model, owner=owner, data=data)
    connection.workspace = workspace_for_new_objects(user=owner, workspace=workspace)
    _check_unique_name(model, workspace_id=connection.workspace_id, name=connection.name, exclude_pk=None)
    connection.full_clean()
    _save_new(connection)
    activity_record(actor=owner, action="connection.create", target=connection, after=_snapshot(connection))
    return connection


@transaction.atomic
def _update(model: type[Connection], *, connection: Connection, data: Mapping[str, Any], actor: Any) -> Connection:
    cleaned = _clean_data(model, data)
    if "name" in cleaned:
        _check_unique_name(model, workspace_id=connection.workspace_id, name=cleaned["name"], exclude_pk=connection.pk)
    before, replaced = _snapshot(connection), secrets_changed(connection, cleaned)
    connection, _ = model_update(instance=connection, fields=model.EDITABLE_FIELDS, data=cleaned)
    old, new = changed(before, _snapshot(connection))
    if replaced:  # its own entry: changing a secret takes an admin
        old_secrets, new_secrets = secret_changes(replaced)
        activity_record(
            actor=actor, action="connection.secret", target=connection, before=old_secrets, after=new_secrets
        )
    old = {name: value for name, value in old.items() if name not in connection.SECRET_FIELDS}
    new = {name: value for name, value in new.items() if name not in connection.SECRET_FIELDS}
    if new:
        activity_record(actor=actor, action="connection.edit", target=connection, before=old, after=new)
    return connection


@transaction.atomic
def _delete(connection: AnyConnection, *, actor: Any) -> None:
    users = list(connection.pipelines.order_by("name").values_list("name", flat=True)[:5])
    if users:
        raise ConflictError(
            f"The connection is used by pipeline(s): {', '.join(users)}. Change or delete them first.",
            extra={"pipelines": users},
        )
    activity_record(actor=actor, action="connection.delete", target=connection, before=_snapshot(connection))
    connection.delete()


def _tested(connection: AnyConnection, test: Callable[[], Info]) -> Info:
    """Run `test` (a client's check of `connection`); a saved connection keeps the outcome: when, whether it
    answered, and the error in the client's words. A refused request (too many tests) is not the connection's."""
    try:
        info = test()
    except ApplicationError as exc:
        _record_test(connection, ok=False, message=exc.message)
        raise
    _record_test(connection, ok=True, message="")
    return info


def _record_test(connection: AnyConnection, *, ok: bool, message: str) -> None:
    if connection.pk is None:  # "Test connection" before saving: nothing to keep it on
        return
    values = {
        "last_tested_at": timezone.now(),
        "last_test_ok": ok,
        "last_test_message": message[:LAST_TEST_MESSAGE_CHARS],
    }
    type(connection).objects.filter(pk=connection.pk).update(**values)  # no save(): `updated_at` is for edits
    for name, value in values.items():
        setattr(connection, name, value)


@transaction.atomic
def connection_make_default(*, connection: AnyConnection, actor: Any = None) -> AnyConnection:
    """Make `connection` its workspace's default of its kind (the one before it no longer is)."""
    if connection.is_default:
        return connection  # nothing changes, nothing to record
    model = type(connection)
    # Two statements: the one-default constraint is checked per row, so the old default goes first.
    model.objects.filter(workspace_id=connection.workspace_id, is_default=True).update(is_default=False)
    model.objects.filter(pk=connection.pk).update(is_default=True)
    connection.is_default = True
    activity_record(
        actor=actor,
        action="connection.edit",
        target=connection,
        before={"is_default": False},
        after={"is_default": True},
    )
    return connection


# -- Kafka ----------------------------------------------------------------------------------------------


def kafka_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> KafkaConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(KafkaConnection, owner=owner, data=data)


@transaction.atomic
def kafka_connection_create(
    *, owner: AbstractBaseUser, data: Mapping[str, Any], workspace: Workspace | None = None
) -> KafkaConnection:
    """Create a saved Kafka connection from `data` (keys: KAFKA_FIELDS). Raises ValidationError."""
    return _create(KafkaConnection, owner=owner, data=data, workspace=workspace)


@transaction.atomic
def kafka_connection_update(
    *, connection: KafkaConnection, data: Mapping[str, Any], actor: Any = None
) -> KafkaConnection:
    """Change the fields present in `data`; secrets only when given (see module doc). Raises ValidationError."""
    return _update(KafkaConnection, connection=connection, data=data, actor=actor)


@transaction.atomic
def kafka_connection_delete(*, connection: KafkaConnection, actor: Any = None) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection, actor=actor)


def kafka_connection_test(
    *, connection: KafkaConnection, timeout: float = kafka_client.DEFAULT_TIMEOUT
) -> kafka_client.KafkaClusterInfo:
    """Brokers and topic count of the cluster (saved or unsaved connection). Raises KafkaClientError."""
    count_connection_request(connection.owner)
    return _tested(connection, lambda: kafka_client.check_connection(connection.client_settings(), timeout=timeout))


# -- ClickHouse -----------------------------------------------------------------------------------------


def clickhouse_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> ClickHouseConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(ClickHouseConnection, owner=owner, data=data)


@transaction.atomic
def clickhouse_connection_create(
    *, owner: AbstractBaseUser, data: Mapping[str, Any], workspace: Workspace | None = None
) -> ClickHouseConnection:
    """Create a saved ClickHouse connection from `data` (keys: CLICKHOUSE_FIELDS). Raises ValidationError."""
    return _create(ClickHouseConnection, owner=owner, data=data, workspace=workspace)


@transaction.atomic
def clickhouse_connection_update(
    *, connection: ClickHouseConnection, data: Mapping[str, Any], actor: Any = None
) -> ClickHouseConnection:
    """Change the fields present in `data`; the password only when given. Raises ValidationError."""
    return _update(ClickHouseConnection, connection=connection, data=data, actor=actor)


@transaction.atomic
def clickhouse_connection_delete(*, connection: ClickHouseConnection, actor: Any = None) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection, actor=actor)


def clickhouse_connection_test(
    *, connection: ClickHouseConnection, timeout: float = clickhouse_client.DEFAULT_TIMEOUT
) -> clickhouse_client.ClickHouseServerInfo:
    """Server version and database count (saved or unsaved connection). Raises ClickHouseClientError."""
    count_connection_request(connection.owner)
    return _tested(
        connection, lambda: clickhouse_client.check_connection(connection.client_settings(), timeout=timeout)
    )


# -- Schema registry ------------------------------------------------------------------------------------


def schema_registry_connection_build(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> SchemaRegistryConnection:
    """A validated, unsaved connection (for "Test connection" before saving). Raises ValidationError."""
    return _build(SchemaRegistryConnection, owner=owner, data=data)


@transaction.atomic
def schema_registry_connection_create(
    *, owner: AbstractBaseUser, data: Mapping[str, Any], workspace: Workspace | None = None
) -> SchemaRegistryConnection:
    """Create a saved schema registry connection from `data` (keys: SCHEMA_REGISTRY_FIELDS). Raises
    ValidationError."""
    return _create(SchemaRegistryConnection, owner=owner, data=data, workspace=workspace)


@transaction.atomic
def schema_registry_connection_update(
    *, connection: SchemaRegistryConnection, data: Mapping[str, Any], actor: Any = None
) -> SchemaRegistryConnection:
    """Change the fields present in `data`; the password only when given. Raises ValidationError."""
    return _update(SchemaRegistryConnection, connection=connection, data=data, actor=actor)


@transaction.atomic
def schema_registry_connection_delete(*, connection: SchemaRegistryConnection, actor: Any = None) -> None:
    """Delete a connection no pipeline uses. Raises ConflictError naming the pipelines that use it."""
    _delete(connection, actor=actor)


def schema_registry_connection_test(
    *, connection: SchemaRegistryConnection, timeout: float = registry_client.DEFAULT_TIMEOUT
) -> registry_client.SchemaRegistryInfo:
    """The registry's subjects (saved or unsaved connection). Raises SchemaRegistryClientError."""
    count_connection_request(connection.owner)
    return _tested(connection, lambda: registry_client.check_connection(connection.client_settings(), timeout=timeout))
