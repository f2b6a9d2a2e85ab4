"""The "add a table" form of the Audits page; the service checks the table and its columns in ClickHouse."""

from __future__ import annotations

from typing import Any

from django import forms

from clearflow_spec.spec import parse_window
from webapp.audits.models import MAX_KEY_COLUMNS
from webapp.connections.models import ClickHouseConnection


class AuditedTableForm(forms.Form):
    connection = forms.ModelChoiceField(queryset=ClickHouseConnection.objects.none(), label="ClickHouse connection")
    database = forms.CharField(max_length=255, required=False, help_text="Empty: the connection's database.")
    table = forms.CharField(max_length=255)
    key_columns = forms.CharField(
        max_length=2000, label="Key columns", help_text="The columns that identify an event, separated by commas."
    )
    time_column = forms.CharField(
        max_length=255, label="Time column", help_text="A Date or DateTime column: only recent rows are counted."
    )
    extra_window = forms.CharField(
        max_length=10,
        required=False,
        label="Second window",
        help_text="Also check e.g. <code>6h</code> or <code>1d</code>.",
    )

    def __init__(self, *args: Any, connections: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["connection"].queryset = connections

    def clean_key_columns(self) -> list[str]:
        keys = [k.strip() for k in self.cleaned_data["key_columns"].split(",") if k.strip()]
        if not keys:
            raise forms.ValidationError("Give at least one key column.")
        if len(keys) > MAX_KEY_COLUMNS:
            raise forms.ValidationError(f"At most {MAX_KEY_COLUMNS} key columns.")
        return keys

    def clean_extra_window(self) -> int | None:
        text = self.cleaned_data.get("extra_window", "").strip()
        if not text:
            return None
        try:
            return parse_window(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
