"""The wizard's view of the kinds of connection: `webapp.connections.kinds` plus the wizard's forms.

Steps 1 and 6, their "Test connection" partials and the connections page do the same things with either
kind; they take one of these instead of naming each function and form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms as django_forms
from django.http import Http404

from webapp.connections import kinds
from webapp.wizard import forms


@dataclass(frozen=True)
class ConnectionKind(kinds.ConnectionKind):
    choice_form: type[django_forms.Form]  # a saved connection or a new one
    new_form: type[django_forms.ModelForm]  # a new connection's fields; the connections page's edit form


KAFKA = ConnectionKind(**vars(kinds.KAFKA), choice_form=forms.KafkaChoiceForm, new_form=forms.KafkaConnectionForm)
CLICKHOUSE = ConnectionKind(
    **vars(kinds.CLICKHOUSE), choice_form=forms.ClickHouseChoiceForm, new_form=forms.ClickHouseConnectionForm
)
SCHEMA_REGISTRY = ConnectionKind(
    **vars(kinds.SCHEMA_REGISTRY),
    choice_form=forms.SchemaRegistryChoiceForm,
    new_form=forms.SchemaRegistryConnectionForm,
)


def connection_kind(slug: str) -> ConnectionKind:
    """The kind named in a URL; Http404 for any other."""
    for kind in (KAFKA, CLICKHOUSE, SCHEMA_REGISTRY):
        if kind.slug == slug:
            return kind
    raise Http404("No such kind of connection.")


def connection_data(form: django_forms.ModelForm, names: Any = None) -> dict[str, Any]:
    """The service's `data` from a valid connection form: its fields (or `names`), empty text for None."""
    values = {name: form.cleaned_data.get(name) for name in (form._meta.fields if names is None else names)}
    return {k: ("" if v is None and k != "port" else v) for k, v in values.items()}


def test_error_field(kind: ConnectionKind, message: str) -> str | None:
    """The form field a failed connection test points at, from the client's plain-words message (None: the form
    as a whole, e.g. too many tests)."""
    lowered = message.lower()
    if "too many connection tests" in lowered:
        return None
    if "user name or password" in lowered:
        return "sasl_password" if kind.slug == "kafka" else "password"
    if kind.slug == "kafka":
        if "client certificate" in lowered:
            return "ssl_certificate_pem"
        if "certificate" in lowered or "tls" in lowered:
            return "ssl_ca_pem"
        if "security protocol" in lowered or "sasl" in lowered:
            return "security_protocol"
        return "bootstrap_servers"
    if kind.slug == SCHEMA_REGISTRY.slug:
        if "certificate" in lowered or "tls" in lowered:
            return "ssl_ca_pem"
        return "url"
    if "database" in lowered:
        return "database"
    if "https" in lowered or "certificate" in lowered:
        return "ssl_ca_pem"
    if "connection refused" in lowered:
        return "port"
    return "host"
