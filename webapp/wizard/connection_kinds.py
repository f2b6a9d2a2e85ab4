"""The wizard's view of the two kinds of connection: `webapp.connections.kinds` plus the choice between a saved
connection and a new one (steps 1 and 6 and their "Test connection" partials)."""

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
