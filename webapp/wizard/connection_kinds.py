"""The two kinds of connection as the wizard sees them: the forms, selectors and services of each.

The Kafka step (1) and the ClickHouse step (6), their "Test connection" partials and the connections page
do the same things with either kind; they take one of these instead of naming each function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms as django_forms
from django.http import Http404

from webapp.connections import selectors as conn_selectors
from webapp.connections import services as conn_services
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.wizard import forms


@dataclass(frozen=True)
class ConnectionKind:
    slug: str  # the wizard step and the connections page's `kind`
    label: str
    choice_form: type[django_forms.Form]
    new_form: type[django_forms.ModelForm]
    secrets: tuple[str, ...]
    list: Callable[..., Any]
    get: Callable[..., Any]
    build: Callable[..., Any]
    create: Callable[..., Any]
    update: Callable[..., Any]
    delete: Callable[..., Any]
    test: Callable[..., Any]


KAFKA = ConnectionKind(
    slug="kafka",
    label="Kafka",
    choice_form=forms.KafkaChoiceForm,
    new_form=forms.KafkaConnectionForm,
    secrets=KafkaConnection.SECRET_FIELDS,
    list=conn_selectors.kafka_connection_list,
    get=conn_selectors.kafka_connection_get,
    build=conn_services.kafka_connection_build,
    create=conn_services.kafka_connection_create,
    update=conn_services.kafka_connection_update,
    delete=conn_services.kafka_connection_delete,
    test=conn_services.kafka_connection_test,
)
CLICKHOUSE = ConnectionKind(
    slug="clickhouse",
    label="ClickHouse",
    choice_form=forms.ClickHouseChoiceForm,
    new_form=forms.ClickHouseConnectionForm,
    secrets=ClickHouseConnection.SECRET_FIELDS,
    list=conn_selectors.clickhouse_connection_list,
    get=conn_selectors.clickhouse_connection_get,
    build=conn_services.clickhouse_connection_build,
    create=conn_services.clickhouse_connection_create,
    update=conn_services.clickhouse_connection_update,
    delete=conn_services.clickhouse_connection_delete,
    test=conn_services.clickhouse_connection_test,
)


def connection_kind(slug: str) -> ConnectionKind:
    """The kind named in a URL; Http404 for any other."""
    for kind in (KAFKA, CLICKHOUSE):
        if kind.slug == slug:
            return kind
    raise Http404("No such kind of connection.")


def connection_data(form: django_forms.ModelForm, names: Any = None) -> dict[str, Any]:
    """The service's `data` from a valid connection form: its fields (or `names`), empty text for None."""
    values = {name: form.cleaned_data.get(name) for name in (form._meta.fields if names is None else names)}
    return {k: ("" if v is None and k != "port" else v) for k, v in values.items()}
