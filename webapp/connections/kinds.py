"""The three kinds of saved connection, each with its model, selectors, services and form, named once.

The REST API's connection views, the connections pages and the wizard (steps 1 and 7, their "Test connection"
partials) do the same things with either kind: they take a `ConnectionKind` instead of naming the Kafka or
ClickHouse functions. Each adds what is its own in a subclass, e.g. `ApiKind(**vars(KAFKA), input=...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms as django_forms
from django.core.exceptions import ValidationError
from django.http import Http404

from webapp.connections import forms, selectors, services
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.connections.throttle import TOO_MANY
from webapp.core.exceptions import ApplicationError
from webapp.core.forms import add_validation_errors


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
    form: type[django_forms.ModelForm]  # the connection's fields: a new one in the wizard, the edit page's form

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.model.SECRET_FIELDS

    def test_before_saving(self, user: Any, data: dict[str, Any], form: Any) -> str:
        """Test the connection `data` describes: "ok"; "unreachable" (the test's error is put next to the field
        that caused it); or "invalid" (not even a valid connection: the service's errors are put next to the
        fields)."""
        try:
            self.test(connection=self.build(owner=user, data=data))
        except ValidationError as exc:
            add_validation_errors(form, exc)
            return "invalid"
        except ApplicationError as exc:
            field = self.test_error_field(exc.message)
            form.add_error(field if field in form.fields else None, exc.message)
            return "unreachable"
        return "ok"

    def test_error_field(self, message: str) -> str | None:
        """The form field a failed connection test points at, from the client's plain-words message (None: the
        form as a whole, e.g. too many tests)."""
        lowered = message.lower()
        if TOO_MANY.lower() in lowered:
            return None
        if "user name or password" in lowered:
            return "sasl_password" if self.slug == "kafka" else "password"
        if self.slug == "kafka":
            if "token endpoint" in lowered:
                return "sasl_oauthbearer_client_secret"
            if "client certificate" in lowered:
                return "ssl_certificate_pem"
            if "certificate" in lowered or "tls" in lowered:
                return "ssl_ca_pem"
            if "security protocol" in lowered or "sasl" in lowered:
                return "security_protocol"
            return "bootstrap_servers"
        if self.slug == "schema-registry":
            return "ssl_ca_pem" if "certificate" in lowered or "tls" in lowered else "url"
        if "database" in lowered:
            return "database"
        if "https" in lowered or "certificate" in lowered:
            return "ssl_ca_pem"
        if "connection refused" in lowered:
            return "port"
        return "host"


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
    form=forms.KafkaConnectionForm,
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
    form=forms.ClickHouseConnectionForm,
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
    form=forms.SchemaRegistryConnectionForm,
)


def connection_kind(slug: str) -> ConnectionKind:
    """The kind named in a URL; Http404 for any other."""
    for kind in (KAFKA, CLICKHOUSE, SCHEMA_REGISTRY):
        if kind.slug == slug:
            return kind
    raise Http404("No such kind of connection.")
