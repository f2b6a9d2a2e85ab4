"""Step 7: ClickHouse connection, database and table (existing, or created from the mapping).

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from django.http import HttpRequest

from clearflow_spec.spec import JOIN_SIDES
from webapp.connections import selectors as conn_selectors
from webapp.connections.clickhouse_client import ColumnInfo
from webapp.core.exceptions import ApplicationError
from webapp.pipelines.mapping import column_name_for
from webapp.wizard import forms
from webapp.wizard.connection_kinds import CLICKHOUSE
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step, draft_update_section
from webapp.wizard.steps.common import (
    clickhouse_connection_of,
    computed_fields,
    draft_join,
    draft_topics,
    initial_from,
    row_fields,
)
from webapp.wizard.steps.connection import SAVE_ANYWAY, connection_step_forms, submit_connection
from webapp.wizard.steps.exactly_once import ACCEPT_FIELD, exactly_once_problem


def source_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """Everything a column can be filled from: sample fields (with a join, both sides' named by side: `left.x`,
    `right.y`), computed fields (Kafka metadata separately)."""
    fields = [{"path": f["path"], "type": f["type"], "nullable": f.get("nullable", False)} for f in row_fields(draft)]
    fields += [{"path": c["name"], "type": c["type"], "nullable": True} for c in computed_fields(draft)]
    return fields


def _destination_form(draft, data=None, initial=None):
    paths = [f["path"] for f in source_fields(draft)]
    return forms.DestinationForm(data, initial=initial, field_paths=paths)


def _table_exists(request: HttpRequest, draft: WizardDraft, database: str, table: str) -> bool:
    connection = clickhouse_connection_of(request, draft)
    if connection is None or not table:
        return False
    try:
        return any(
            t.name == table for t in conn_selectors.clickhouse_table_list(connection=connection, database=database)
        )
    except ApplicationError:  # cannot tell: the step shows what the spec says, the user can pick otherwise
        return False


def table_mode(request: HttpRequest, draft: WizardDraft) -> str:
    """ "existing" or "new", as the user chose it; for an edited pipeline, from its spec: a table its job
    creates (`create_table`) that exists by now is the pipeline's own, existing table."""
    chosen = draft.section("clickhouse").get("table_mode")
    if chosen in ("existing", "new"):
        return chosen
    sink = draft.spec.sink
    if not sink.table:
        return "new"
    if sink.create_table is False:
        return "existing"
    database = sink.clickhouse.database or "default"
    return "existing" if _table_exists(request, draft, database, sink.table) else "new"


def _destination_initial(request: HttpRequest, draft: WizardDraft) -> dict[str, Any]:
    """The table step's form values from the partial spec."""
    initial: dict[str, Any] = {}
    sink = draft.spec.sink
    if sink.clickhouse.database:
        initial["database"] = sink.clickhouse.database
    mode = table_mode(request, draft)
    initial["table_mode"] = mode
    if sink.table:
        initial["table" if mode == "existing" else "new_table"] = sink.table
    if sink.engine:
        initial["engine"] = sink.engine
    # A new table is sorted by the dedup key unless the user chose otherwise: rows of one key sit together, and a
    # ReplacingMergeTree merges away what dedup let through.
    initial["order_by"] = draft.section("clickhouse").get("order_by") or dedup_keys(draft)
    return initial


def dedup_keys(draft: WizardDraft) -> list[str]:
    """The dedup key fields that can be a column of the table (none when deduplication is off)."""
    dedup = draft.spec.dedup if draft.spec.is_set("dedup") else None
    paths = {f["path"] for f in source_fields(draft)}
    side = f"{JOIN_SIDES[0]}." if draft_join(draft) is not None else ""  # dedup's keys are the left side's
    return [side + key for key in dedup.keys if side + key in paths] if dedup else []


def clickhouse_show(request, draft, source):
    connection = clickhouse_connection_of(request, draft)
    context: dict[str, Any] = {"connection": connection}
    if connection is None or (source and source.get("phase") == "connect"):
        choice, new = connection_step_forms(request, draft, source, CLICKHOUSE)
        context.update({"phase": "connect", "choice_form": choice, "new_form": new, "connection": None})
        return context
    initial = initial_from(source, forms.DestinationForm) if source else _destination_initial(request, draft)
    initial.setdefault("database", connection.database or "default")
    if not initial.get("new_table"):
        topics = draft_topics(draft)
        initial["new_table"] = re.sub(r"[^A-Za-z0-9_]", "_", topics[0]) if topics else "events"
    context.update({"phase": "destination", "form": _destination_form(draft, initial=initial)})
    return context


def order_by_columns(draft: WizardDraft, fields: list[str]) -> list[str]:
    """The ORDER BY as spec column names: each field's column in the mapping (its default name before)."""
    column_of = {c.field: c.column for c in draft.spec.sink.columns or []}
    return [column_of.get(path) or column_name_for(path) for path in fields]


def clickhouse_submit(request, draft):
    action = request.POST.get("action")
    if action == "change_connection":
        draft_update_section(draft=draft, step="clickhouse", changes={"connection_id": None})
        return clickhouse_show(request, draft, None)
    if action in ("connect", SAVE_ANYWAY) or clickhouse_connection_of(request, draft) is None:
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
    existing = data["table_mode"] == "existing"
    table = data["table"] if existing else data["new_table"]
    previous = (draft.spec.sink.clickhouse.database, draft.spec.sink.table, table_mode(request, draft))
    try:
        if existing:
            columns = conn_selectors.clickhouse_column_list(
                connection=connection, database=data["database"], table=table
            )
            problem = exactly_once_problem(
                draft=draft,
                connection=connection,
                database=data["database"],
                table=table,
                accepted=request.POST.get(ACCEPT_FIELD) == "on",
            )
            if problem:
                form.add_error("table", problem)
                return context
        else:
            tables = conn_selectors.clickhouse_table_list(connection=connection, database=data["database"])
            if any(t.name == table for t in tables):
                form.add_error(
                    "new_table",
                    f"A table {table!r} already exists: choose it as an existing table, or pick another name.",
                )
                return context
            columns = []
    except ApplicationError as exc:
        form.add_error("database" if "database" in exc.message.lower() else None, exc.message)
        return context
    section = draft.section("clickhouse")
    order_by = section.get("order_by", []) if existing else data["order_by"]
    values = {
        "connection_id": connection.pk,
        "table_mode": data["table_mode"],
        "columns": columns_to_store(columns),
        "order_by": order_by,
    }
    spec = draft.spec.model_copy(deep=True)
    sink = spec.sink
    # The pipeline's own table (its job created it): how it was created stays in the spec.
    own_table = existing and previous[1] == table and sink.create_table is not False
    sink.clickhouse.database = data["database"]
    sink.table = table
    if not own_table:
        sink.create_table = not existing
        sink.order_by = [] if existing else order_by_columns(draft, order_by)
        if not existing:
            sink.engine = data["engine"] or "MergeTree"
    if previous != (data["database"], table, data["table_mode"]):
        sink.unset("columns")  # another table: the mapping step maps again
    draft_save_step(draft=draft, step="clickhouse", values=values, spec=spec, advance=True)
    return None


def columns_to_store(columns: list[ColumnInfo]) -> list[dict[str, Any]]:
    """An existing table's columns as draft data, for the mapping step (`stored_columns` reads them back)."""
    return [dataclasses.asdict(c) for c in columns]


def stored_columns(draft: WizardDraft) -> list[ColumnInfo]:
    """The existing table's columns kept by `columns_to_store`."""
    names = {f.name for f in dataclasses.fields(ColumnInfo)}
    blank = {"nullable": False, "default_kind": "", "default_expression": "", "in_sorting_key": False, "comment": ""}
    return [
        ColumnInfo(**{**blank, **{k: v for k, v in c.items() if k in names}})
        for c in draft.section("clickhouse").get("columns") or []
    ]


def ensure_columns(request: HttpRequest, draft: WizardDraft) -> str | None:
    """An edited pipeline's draft has no table mode nor column list for its table yet: ask ClickHouse once."""
    table = draft.spec.sink.table
    section = draft.section("clickhouse")
    if "table_mode" not in section:
        draft_update_section(draft=draft, step="clickhouse", changes={"table_mode": table_mode(request, draft)})
        section = draft.section("clickhouse")
    if section["table_mode"] != "existing" or section.get("columns") or not table:
        return None
    connection = clickhouse_connection_of(request, draft)
    if connection is None:
        return "The ClickHouse connection is gone: choose one in step 7."
    try:
        columns = conn_selectors.clickhouse_column_list(
            connection=connection, database=draft.spec.sink.clickhouse.database or "default", table=table
        )
    except ApplicationError as exc:
        return exc.message
    draft_update_section(draft=draft, step="clickhouse", changes={"columns": columns_to_store(columns)})
    return None
