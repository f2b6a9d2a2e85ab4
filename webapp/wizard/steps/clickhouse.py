"""Step 6: ClickHouse connection, database and table (existing, or created from the mapping).

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest

from webapp.connections import selectors as conn_selectors
from webapp.core.exceptions import ApplicationError
from webapp.wizard import forms
from webapp.wizard.connection_kinds import CLICKHOUSE
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step, draft_update_section
from webapp.wizard.steps.common import clickhouse_connection_of, computed_fields, initial_from, schema_fields
from webapp.wizard.steps.connection import connection_step_forms, submit_connection


def source_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """Everything a column can be filled from: sample fields, computed fields (Kafka metadata separately)."""
    fields = [
        {"path": f["path"], "type": f["type"], "nullable": f.get("nullable", False)} for f in schema_fields(draft)
    ]
    fields += [{"path": c["name"], "type": c["type"], "nullable": True} for c in computed_fields(draft)]
    return fields


def _destination_form(draft, data=None, initial=None):
    paths = [f["path"] for f in source_fields(draft)]
    return forms.DestinationForm(data, initial=initial, field_paths=paths)


def clickhouse_show(request, draft, source):
    section = draft.section("clickhouse")
    connection = clickhouse_connection_of(request, draft)
    context: dict[str, Any] = {"connection": connection}
    if connection is None or (source and source.get("phase") == "connect"):
        choice, new = connection_step_forms(request, draft, source, CLICKHOUSE)
        context.update({"phase": "connect", "choice_form": choice, "new_form": new, "connection": None})
        return context
    initial = (
        initial_from(source, forms.DestinationForm)
        if source
        else {
            k: section[k]
            for k in ("database", "table_mode", "table", "new_table", "engine", "order_by")
            if k in section
        }
    )
    initial.setdefault("database", connection.database or "default")
    if not initial.get("new_table"):
        topics = draft.section("topics").get("topics", [])
        initial["new_table"] = re.sub(r"[^A-Za-z0-9_]", "_", topics[0]) if topics else "events"
    context.update({"phase": "destination", "form": _destination_form(draft, initial=initial)})
    return context


def clickhouse_submit(request, draft):
    action = request.POST.get("action")
    if action == "change_connection":
        draft_update_section(draft=draft, step="clickhouse", changes={"connection_id": None})
        return clickhouse_show(request, draft, None)
    if action == "connect" or clickhouse_connection_of(request, draft) is None:
        connection, context = submit_connection(request, draft, CLICKHOUSE)
        if context is not None:
            return {**context, "phase": "connect", "connection": None}
        draft_update_section(draft=draft, step="clickhouse", changes={"connection_id": connection.pk})
        return clickhouse_show(request, draft, None)
    connection = clickhouse_connection_of(request, draft)
    form = _destination_form(draft, data=request.POST)
    context = {"phase": "destination", "form": form, "connection": connection}
    if not form.is_valid():
        return context
    data = form.cleaned_data
    values: dict[str, Any] = {
        "connection_id": connection.pk,
        "database": data["database"],
        "table_mode": data["table_mode"],
        "table": data["table"],
        "new_table": data["new_table"],
        "engine": data["engine"] or "MergeTree",
        "order_by": data["order_by"],
    }
    try:
        if data["table_mode"] == "existing":
            columns = conn_selectors.clickhouse_column_list(
                connection=connection, database=data["database"], table=data["table"]
            )
            values["columns"] = columns_to_store(columns)
        else:
            tables = conn_selectors.clickhouse_table_list(connection=connection, database=data["database"])
            if any(t.name == data["new_table"] for t in tables):
                form.add_error(
                    "new_table",
                    f"A table {data['new_table']!r} already exists: choose it as an "
                    "existing table, or pick another name.",
                )
                return context
            values["columns"] = []
    except ApplicationError as exc:
        form.add_error("database" if "database" in exc.message.lower() else None, exc.message)
        return context
    previous = draft.section("clickhouse")
    if (previous.get("table_mode"), previous.get("table"), previous.get("new_table")) != (
        values["table_mode"],
        values["table"],
        values["new_table"],
    ):
        draft_update_section(draft=draft, step="mapping", changes={"columns": None})
    draft_save_step(draft=draft, step="clickhouse", values=values, advance=True)
    return None


def columns_to_store(columns: list[Any]) -> list[dict[str, Any]]:
    """An existing table's columns (`ColumnInfo`s) as draft data, for the mapping step."""
    return [
        {"name": c.name, "type": c.type, "nullable": c.nullable, "required": c.required, "default_kind": c.default_kind}
        for c in columns
    ]


def ensure_columns(request: HttpRequest, draft: WizardDraft) -> str | None:
    """An edited pipeline's draft has no column list for its existing table yet: ask ClickHouse once."""
    ch = draft.section("clickhouse")
    if ch.get("table_mode") != "existing" or ch.get("columns") or not ch.get("table"):
        return None
    connection = clickhouse_connection_of(request, draft)
    if connection is None:
        return "The ClickHouse connection is gone: choose one in step 6."
    try:
        columns = conn_selectors.clickhouse_column_list(
            connection=connection, database=ch.get("database") or "default", table=ch["table"]
        )
    except ApplicationError as exc:
        return exc.message
    draft_update_section(draft=draft, step="clickhouse", changes={"columns": columns_to_store(columns)})
    return None
