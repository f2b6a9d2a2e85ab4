"""The wizard's view of the kinds of connection: `webapp.connections.kinds` plus the choice between a saved
connection and a new one (steps 1 and 7 and their "Test connection" partials; the schema registry of the sample
step)."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms as django_forms

from webapp.connections import kinds
from webapp.wizard import forms


@dataclass(frozen=True)
class ConnectionKind(kinds.ConnectionKind):
    choice_form: type[django_forms.Form]  # a saved connection or a new one


KAFKA = ConnectionKind(**vars(kinds.KAFKA), choice_form=forms.KafkaChoiceForm)
CLICKHOUSE = ConnectionKind(**vars(kinds.CLICKHOUSE), choice_form=forms.ClickHouseChoiceForm)
SCHEMA_REGISTRY = ConnectionKind(**vars(kinds.SCHEMA_REGISTRY), choice_form=forms.SchemaRegistryChoiceForm)
