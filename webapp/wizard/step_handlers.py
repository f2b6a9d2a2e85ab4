"""What each wizard step shows and how it checks and stores a submission.

Every step has `show(request, draft, source)` -> template context and `submit(request, draft)` -> None when
the step was stored (the view then moves on), a context with the errors to show next to the fields, or (the
review step, once the pipeline is saved) a redirect.
`source` is what the user typed last time they left the step with Back (a MultiValueDict), or None.

The work itself is done by the connections and pipelines services and selectors, and by the spec module
(`spark_jobs.spec`); this module only turns forms into their arguments and their errors into messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest
from django.shortcuts import redirect
from django.utils.datastructures import MultiValueDict
from pydantic import ValidationError as PydanticValidationError

from spark_jobs import spec as specmod
from webapp.connections import selectors as conn_selectors
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import services as pipeline_services
from webapp.pipelines import specs as pipeline_specs
from webapp.wizard import forms, spec_builder
from webapp.wizard.connection_kinds import CLICKHOUSE, KAFKA, ConnectionKind, connection_data
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_discard, draft_save_step, draft_update_section
from webapp.wizard.steps import SLUGS, STEPS

FIELD_TYPES = specmod.FIELD_TYPES
_BASE_TYPES = (
    "String",
    "Int32",
    "Int64",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
    "Bool",
    "UUID",
    "Date",
    "DateTime",
    "DateTime64(3, 'UTC')",
)
# The column types offered for a new table: each plain and Nullable, plus a few without a Nullable form.
NEW_TABLE_TYPES = (
    *_BASE_TYPES,
    "LowCardinality(String)",
    "JSON",
    *(f"Nullable({t})" for t in _BASE_TYPES),
)


# -- helpers --------------------------------------------------------------------------------------------


def initial_from(source: MultiValueDict | None, form_class: type, prefix: str | None = None) -> dict[str, Any]:
    """Initial values for an unbound form from what was typed before (multi-value fields keep lists)."""
    if not source:
        return {}
    initial: dict[str, Any] = {}
    for name, field in form_class.base_fields.items():
        key = f"{prefix}-{name}" if prefix else name
        if key not in source:
            continue
        if isinstance(field, forms.forms.MultipleChoiceField):
            initial[name] = source.getlist(key)
        else:
            initial[name] = source.get(key)
    return initial


def add_validation_errors(form: Any, error: ValidationError) -> None:
    """Put a service's ValidationError next to the form's fields (unknown keys become form errors)."""
    if hasattr(error, "error_dict"):
        for name, messages in error.message_dict.items():
            form.add_error(name if name in form.fields else None, messages)
    else:
        form.add_error(None, error.messages)


def schema_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    return list(draft.section("sample").get("fields", []))


def computed_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    return list(draft.section("transform").get("computed", []))


def _connection_of(request: HttpRequest, draft: WizardDraft, kind: ConnectionKind):
    pk = draft.section(kind.slug).get("connection_id")
    if pk is None:
        return None
    try:
        return kind.get(user=request.user, pk=pk)
    except Http404:  # deleted since: the step asks for a connection again
        return None


def kafka_connection_of(request: HttpRequest, draft: WizardDraft):
    return _connection_of(request, draft, KAFKA)


def clickhouse_connection_of(request: HttpRequest, draft: WizardDraft):
    return _connection_of(request, draft, CLICKHOUSE)


def _rows(post: Any, prefix: str, names: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows posted as `<prefix><n>-<name>`, in the order they appear in the form."""
    pattern = re.compile(rf"^{prefix}(\d+)-{names[0]}$")
    rows = []
    for key in post:
        match = pattern.match(key)
        if not match:
            continue
        index = match.group(1)
        row = {"index": index}
        for name in names:
            row[name] = (post.get(f"{prefix}{index}-{name}") or "").strip()
        rows.append(row)
    return rows


# -- 1. Kafka connection --------------------------------------------------------------------------------


def _connection_step_forms(request, draft, source, kind: ConnectionKind, post=None):
    connections = kind.list(user=request.user)
    stored = draft.section(kind.slug)
    if post is not None:
        choice = kind.choice_form(post, connections=connections)
        new = kind.new_form(post)
    else:
        initial = {
            "source": "saved" if stored.get("connection_id") else None,
            "connection": stored.get("connection_id"),
        }
        initial = {k: v for k, v in initial.items() if v is not None}
        if "connection" not in initial and len(connections[:2]) == 1:
            initial.update({"source": "saved", "connection": connections[0].pk})  # the only one: preselected
        initial.update(initial_from(source, kind.choice_form))
        choice = kind.choice_form(initial=initial, connections=connections)
        new = kind.new_form(initial=initial_from(source, kind.new_form, prefix="new"))
    return choice, new


def kafka_show(request, draft, source):
    choice, new = _connection_step_forms(request, draft, source, KAFKA)
    return {"choice_form": choice, "new_form": new}


def _submit_connection(request, draft, kind: ConnectionKind):
    choice, new = _connection_step_forms(request, draft, None, kind, post=request.POST)
    if not choice.is_valid():
        new.is_valid()
        return None, {"choice_form": choice, "new_form": new}
    if choice.cleaned_data["source"] == "saved":
        return choice.cleaned_data["connection"], None
    if not new.is_valid():
        return None, {"choice_form": choice, "new_form": new}
    try:
        connection = kind.create(owner=request.user, data=connection_data(new))
    except ValidationError as exc:
        add_validation_errors(new, exc)
        return None, {"choice_form": choice, "new_form": new}
    return connection, None


def kafka_submit(request, draft):
    connection, context = _submit_connection(request, draft, KAFKA)
    if context is not None:
        return context
    draft_save_step(draft=draft, step="kafka", values={"connection_id": connection.pk}, advance=True)
    return None


# -- 2. Topics ------------------------------------------------------------------------------------------


def topics_show(request, draft, source):
    selected = source.getlist("topics") if source else draft.section("topics").get("topics", [])
    return {"selected": selected, "connection": kafka_connection_of(request, draft)}


def topics_submit(request, draft):
    selected = [t for t in request.POST.getlist("topics") if t]
    context = {"selected": selected, "connection": kafka_connection_of(request, draft)}
    if not selected:
        context["error"] = "Choose at least one topic."
        return context
    connection = context["connection"]
    if connection is None:
        context["error"] = "The Kafka connection is gone: go back to step 1 and choose one."
        return context
    try:
        known = {t.name for t in conn_selectors.kafka_topic_list(connection=connection)}
    except ApplicationError as exc:
        context["error"] = f"Could not check the topics: {exc.message}"
        return context
    missing = [t for t in selected if t not in known]
    if missing:
        context["error"] = f"No such topic on this cluster: {', '.join(missing)}."
        return context
    previous = draft.section("topics").get("topics", [])
    draft_save_step(draft=draft, step="topics", values={"topics": selected}, advance=True)
    if previous and previous != selected:
        # Another topic means another sample: the old one is dropped, the hand-edited schema is kept.
        draft_update_section(draft=draft, step="sample", changes={"events": [], "fetched_at": None})
    return None


# -- 3. Sample and schema -------------------------------------------------------------------------------


def field_rows_from(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "index": str(i),
            "path": f.get("path", ""),
            "type": f.get("type", "string"),
            "nullable": bool(f.get("nullable")),
            "examples": f.get("examples", []),
            "manual": bool(f.get("manual")),
            "errors": {},
        }
        for i, f in enumerate(fields)
    ]


def parse_field_rows(post: Any, known: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Schema rows as posted; `known` (the stored fields) gives back each path's example values."""
    examples: dict[str, list[Any]] = {}
    for known_field in known or []:
        if known_field.get("examples"):
            examples.setdefault(known_field.get("path"), known_field["examples"])
    rows = _rows(post, "f", ("path", "type", "manual"))
    for row in rows:
        row["nullable"] = post.get(f"f{row['index']}-nullable") == "on"
        row["manual"] = row["manual"] == "1"
        row["examples"] = examples.get(row["path"], [])
        row["errors"] = {}
    return rows


def validate_field_rows(rows: list[dict[str, Any]]) -> bool:
    ok = True
    seen: set[str] = set()
    for row in rows:
        try:
            specmod.FieldSpec(path=row["path"], type=row["type"])
        except PydanticValidationError as exc:
            for error in exc.errors():
                loc = error["loc"][0] if error["loc"] else "path"
                row["errors"][loc] = str(error["msg"]).removeprefix("Value error, ")
            ok = False
            continue
        if row["path"] in seen:
            row["errors"]["path"] = f"The field {row['path']!r} is listed twice."
            ok = False
        seen.add(row["path"])
    return ok


def _known_fields(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Stored fields plus what the stored sample shows (for the example values next to each field)."""
    values = [e.get("value") for e in section.get("events", [])]
    inferred = (
        [
            {"path": f.path, "examples": [_example(e) for e in f.examples]}
            for f in conn_selectors.schema_infer(values=values)
        ]
        if values
        else []
    )
    return inferred + list(section.get("fields", []))


def sample_show(request, draft, source):
    section = draft.section("sample")
    if source:
        form = forms.SampleForm(initial=initial_from(source, forms.SampleForm))
        rows = parse_field_rows(source, _known_fields(section))
    else:
        form = forms.SampleForm(initial={k: section[k] for k in ("count", "position") if k in section})
        rows = field_rows_from(section.get("fields", []))
    return _sample_context(draft, form, rows)


def _sample_context(draft: WizardDraft, form: forms.SampleForm, rows: list[dict[str, Any]]) -> dict[str, Any]:
    section = draft.section("sample")
    return {
        "form": form,
        "rows": rows,
        "events": section.get("events", []),
        "field_types": FIELD_TYPES,
        "fetched_at": section.get("fetched_at"),
        "topics": draft.section("topics").get("topics", []),
    }


def sample_submit(request, draft):
    section = draft.section("sample")
    form = forms.SampleForm(request.POST)
    rows = parse_field_rows(request.POST, _known_fields(section))
    context = _sample_context(draft, form, rows)
    valid = form.is_valid()
    if not rows:
        context["rows_error"] = "Add at least one field: fetch a sample, or add the fields by hand."
        valid = False
    if not validate_field_rows(rows) or not valid:
        return context
    fields = [
        {
            "path": r["path"],
            "type": r["type"],
            "nullable": r["nullable"],
            "manual": r["manual"],
            "examples": r["examples"],
        }
        for r in rows
    ]
    values = {
        **section,
        "count": form.cleaned_data["count"],
        "position": form.cleaned_data["position"],
        "fields": fields,
    }
    draft_save_step(draft=draft, step="sample", values=values, advance=True)
    return None


MAX_STORED_SAMPLE_BYTES = 1_000_000


def events_to_store(events: list[Any]) -> tuple[list[dict[str, Any]], bool]:
    """The sampled events as draft data, up to about 1 MB of event values; and whether some were left out."""
    stored, total = [], 0
    for event in events:
        total += event.size
        if stored and total > MAX_STORED_SAMPLE_BYTES:
            return stored, True
        stored.append(event_to_json(event))
    return stored, False


def event_to_json(event: Any) -> dict[str, Any]:
    """A sampled event as JSON-able draft data."""
    return {
        "topic": event.topic,
        "partition": event.partition,
        "offset": event.offset,
        "timestamp": event.timestamp.isoformat() if event.timestamp else None,
        "key": event.key,
        "value": event.value,
        "is_json": event.is_json,
        "size": event.size,
    }


def inferred_rows(values: list[Any], keep: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Schema rows from a fresh sample; fields added by hand (and their types) are kept."""
    inferred = conn_selectors.schema_infer(values=values)
    fields = [
        {
            "path": f.path,
            "type": f.type,
            "nullable": f.nullable,
            "manual": False,
            "examples": [_example(e) for e in f.examples],
        }
        for f in inferred
    ]
    known = {f["path"] for f in fields}
    for row in keep:
        if row.get("manual") and row.get("path") and row["path"] not in known:
            fields.append(
                {
                    "path": row["path"],
                    "type": row["type"],
                    "nullable": row.get("nullable", True),
                    "manual": True,
                    "examples": [],
                }
            )
    return field_rows_from(fields)


def _example(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


# -- 4. Dedup -------------------------------------------------------------------------------------------


def _dedup_form(draft, data=None, initial=None, window_chosen=True):
    fields = schema_fields(draft)
    paths = [f["path"] for f in fields if f.get("type") != "json"]
    time_paths = [f["path"] for f in fields if f.get("type") == "datetime"]
    form = forms.DedupForm(data, initial=initial, field_paths=paths, time_paths=time_paths)
    if window_chosen:  # the page preselects the advisor's window only when the user has not chosen one
        form.fields["window"].widget.attrs["data-user-chosen"] = "1"
        form.fields["state_store"].widget.attrs["data-user-chosen"] = "1"
    return form


def dedup_initial(section: dict[str, Any]) -> dict[str, Any]:
    if not section:
        return {}
    window = section.get("window", "1h")
    presets = {value for value, _ in forms.WINDOW_PRESETS}
    return {
        "enabled": "on" if section.get("enabled", True) else "off",
        "keys": section.get("keys", []),
        "window": window if window in presets else "custom",
        "custom_window": "" if window in presets else window,
        "time_basis": section.get("time_basis", "ingestion"),
        "event_time_field": section.get("event_time_field", ""),
        "state_store": section.get("state_store", "auto"),
    }


def dedup_show(request, draft, source):
    initial = initial_from(source, forms.DedupForm) if source else dedup_initial(draft.section("dedup"))
    chosen = bool(initial)
    if not initial:
        initial = {"enabled": "on", "window": "1h", "time_basis": "ingestion"}
    # The figures come from the dedup advisor, loaded by the page (webapp/wizard/dedup_views.py).
    return {"form": _dedup_form(draft, initial=initial, window_chosen=chosen)}


def dedup_submit(request, draft):
    form = _dedup_form(draft, data=request.POST)
    context = {"form": form}
    if not form.is_valid():
        return context
    data = form.cleaned_data
    if data["enabled"] == "off":
        values = {"enabled": False}
    else:
        window = data["custom_window"].strip() if data["window"] == "custom" else data["window"]
        try:
            specmod.parse_window(window)
        except ValueError as exc:
            form.add_error("custom_window" if data["window"] == "custom" else "window", str(exc))
            return context
        values = {
            "enabled": True,
            "keys": data["keys"],
            "window": window,
            "time_basis": data["time_basis"] or "ingestion",
            "event_time_field": data["event_time_field"] if data["time_basis"] == "event_time" else "",
            "state_store": data["state_store"] or "auto",
        }
    draft_save_step(draft=draft, step="dedup", values=values, advance=True)
    return None


# -- 5. Filter and computed fields ----------------------------------------------------------------------


def expression_names(draft: WizardDraft) -> list[str]:
    return [f["path"] for f in schema_fields(draft)] + list(specmod.KAFKA_METADATA_FIELDS)


def _position(message: str, expression: str) -> dict[str, Any] | None:
    """Line and column from a spec error such as 'syntax error at line 1, column 7 ...' for a caret."""
    match = re.search(r"line (\d+), column (\d+)", message)
    if not match:
        return None
    line, column = int(match.group(1)), int(match.group(2))
    lines = expression.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    column = max(1, min(column, len(text) + 1))
    return {"line": line, "column": column, "text": text, "caret": " " * (column - 1) + "^"}


def check_transform(draft: WizardDraft, post: Any) -> dict[str, Any]:
    """Parse and check the filter and the computed fields; errors carry their position when known."""
    form = forms.TransformForm(post)
    rows = _rows(post, "c", ("name", "expression", "type"))
    names = expression_names(draft)
    ok = form.is_valid()
    if ok and form.cleaned_data["filter"].strip():
        error = specmod.expression_error(form.cleaned_data["filter"], names)
        if error:
            form.add_error("filter", error)
            ok = False
    filter_position = None
    if form.errors.get("filter"):
        filter_position = _position(form.errors["filter"][0], post.get("filter", ""))
    field_paths = {f["path"] for f in schema_fields(draft)}
    seen: list[str] = []
    for row in rows:
        row["errors"] = {}
        if not row["name"] and not row["expression"]:
            row["empty"] = True
            continue
        try:
            specmod.TransformSpec(name=row["name"], expression=row["expression"] or " ", type=row["type"])
        except PydanticValidationError as exc:
            for error in exc.errors():
                loc = error["loc"][0] if error["loc"] else "name"
                row["errors"].setdefault(loc, str(error["msg"]).removeprefix("Value error, "))
        if row["name"] in field_paths or row["name"] in seen:
            row["errors"].setdefault("name", f"The name {row['name']!r} is already used by another field.")
        error = specmod.expression_error(row["expression"], [*names, *seen])
        if error:
            row["errors"]["expression"] = error
            row["position"] = _position(error, row["expression"])
        seen.append(row["name"])
        if row["errors"]:
            ok = False
    rows = [r for r in rows if not r.get("empty")]
    return {
        "form": form,
        "rows": rows,
        "ok": ok,
        "filter_position": filter_position,
        "names": names,
        "field_types": FIELD_TYPES,
    }


def transform_show(request, draft, source):
    if source:
        context = check_transform(draft, source)
        context["checked"] = False
        return context
    section = draft.section("transform")
    form = forms.TransformForm(initial={"filter": section.get("filter", "")})
    rows = [{"index": str(i), **c, "errors": {}} for i, c in enumerate(section.get("computed", []))]
    return {"form": form, "rows": rows, "names": expression_names(draft), "field_types": FIELD_TYPES}


def transform_submit(request, draft):
    context = check_transform(draft, request.POST)
    context["checked"] = True
    if not context["ok"]:
        return context
    values = {
        "filter": context["form"].cleaned_data["filter"].strip(),
        "computed": [{"name": r["name"], "expression": r["expression"], "type": r["type"]} for r in context["rows"]],
    }
    draft_save_step(draft=draft, step="transform", values=values, advance=True)
    return None


# -- 6. ClickHouse --------------------------------------------------------------------------------------


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
        choice, new = _connection_step_forms(request, draft, source, CLICKHOUSE)
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
        connection, context = _submit_connection(request, draft, CLICKHOUSE)
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
            values["columns"] = _columns_to_store(columns)
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


def _columns_to_store(columns: list[Any]) -> list[dict[str, Any]]:
    """An existing table's columns (`ColumnInfo`s) as draft data, for the mapping step."""
    return [
        {"name": c.name, "type": c.type, "nullable": c.nullable, "required": c.required, "default_kind": c.default_kind}
        for c in columns
    ]


# -- 7. Mapping -----------------------------------------------------------------------------------------


def _column_name(path: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", path)
    return name if re.match(r"^[A-Za-z_]", name) else f"f_{name}"


def _proposed_type(field: dict[str, Any], order_by: list[str]) -> str:
    """The spec module's type for the field; Nullable when it may be missing (never for ORDER BY columns)."""
    base = specmod.default_clickhouse_type(field["type"])
    if field.get("nullable") and field["type"] != "json" and field["path"] not in order_by:
        return f"Nullable({base})"
    return base


@dataclass
class MappingRow:
    index: str
    field: str
    field_type: str
    column: str
    type: str
    include: bool = True
    error: str = ""
    note: str = ""


def mapping_rows(draft: WizardDraft, post: Any = None) -> tuple[list[MappingRow], list[dict[str, Any]], bool]:
    """The mapping rows (stored, posted or auto-mapped by name), the target columns, and whether it is new."""
    ch = draft.section("clickhouse")
    new_table = ch.get("table_mode") != "existing"
    order_by = ch.get("order_by") or []
    columns = ch.get("columns") or []
    fields = source_fields(draft) + [
        {"path": k, "type": v, "nullable": False, "meta": True} for k, v in specmod.KAFKA_METADATA_FIELDS.items()
    ]
    types = {f["path"]: f["type"] for f in fields}
    stored = draft.section("mapping").get("columns")
    rows: list[MappingRow] = []
    if post is not None:
        for raw in _rows(post, "m", ("field", "column", "type")):
            include = post.get(f"m{raw['index']}-include") == "on" if new_table else bool(raw["column"])
            rows.append(
                MappingRow(
                    raw["index"], raw["field"], types.get(raw["field"], "?"), raw["column"], raw["type"], include
                )
            )
    elif stored is not None:
        by_field = {m["field"]: m for m in stored}
        for i, f in enumerate(fields):
            m = by_field.get(f["path"])
            if new_table:
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        m["column"] if m else _column_name(f["path"]),
                        m["type"] if m else _proposed_type(f, order_by),
                        include=m is not None,
                    )
                )
            else:
                rows.append(MappingRow(str(i), f["path"], f["type"], m["column"] if m else "", m["type"] if m else ""))
    else:
        by_name = {c["name"].lower(): c for c in columns}
        for i, f in enumerate(fields):
            if new_table:
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        _column_name(f["path"]),
                        _proposed_type(f, order_by),
                        include=not f.get("meta"),
                    )
                )
            else:
                match = by_name.get(f["path"].lower()) or by_name.get(_column_name(f["path"]).lower())
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        match["name"] if match else "",
                        match["type"] if match else "",
                        include=match is not None,
                    )
                )
    if not new_table:
        column_types = {c["name"]: c["type"] for c in columns}
        for row in rows:
            row.type = column_types.get(row.column, "") if row.column else ""
    return rows, columns, new_table


def check_mapping(draft: WizardDraft, rows: list[MappingRow], columns: list[dict[str, Any]], new_table: bool):
    """Flag incompatible types, double-mapped columns and required columns left unmapped."""
    problems: list[str] = []
    used: dict[str, str] = {}
    for row in rows:
        if not row.include or not row.column:
            continue
        if new_table:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", row.column):
                row.error = "Use letters, digits and '_' for the column name, not starting with a digit."
                continue
            type_error = specmod.clickhouse_type_error(row.type)
            if type_error:
                row.error = type_error
                continue
        if row.column in used:
            row.error = f"The column {row.column!r} is already filled from {used[row.column]!r}."
            continue
        used[row.column] = row.field
        if not specmod.field_type_compatible(row.field_type, row.type):
            row.error = f"A {row.field_type} field cannot be written to {row.type}."
    unmapped_required = [c["name"] for c in columns if c.get("required") and c["name"] not in used]
    if unmapped_required:
        problems.append(
            "These columns need a value (not Nullable, no default) but no field is mapped to them: "
            + ", ".join(unmapped_required)
        )
    if not used:
        problems.append("Map at least one field to a column.")
    if new_table:
        order_by = draft.section("clickhouse").get("order_by", [])
        mapped_fields = {r.field: r for r in rows if r.include and r.column}
        for path in order_by:
            row = mapped_fields.get(path)
            if row is None:
                problems.append(f"ORDER BY field {path!r} must be mapped to a column.")
            elif row.type.startswith("Nullable("):
                row.error = row.error or "This column is in ORDER BY and cannot be Nullable."
    ok = not problems and not any(r.error for r in rows)
    return ok, problems, unmapped_required


def mapping_show(request, draft, source):
    columns_error = ensure_columns(request, draft)
    rows, columns, new_table = mapping_rows(draft, source)
    _ok, problems, unmapped = check_mapping(draft, rows, columns, new_table)
    if columns_error:
        problems.insert(0, f"Could not read the table's columns: {columns_error}")
    return _mapping_context(rows, columns, new_table, problems, unmapped)


def _mapping_context(rows, columns, new_table, problems, unmapped) -> dict[str, Any]:
    return {
        "rows": rows,
        "columns": columns,
        "new_table": new_table,
        "problems": problems,
        "unmapped_required": unmapped,
        "type_choices": NEW_TABLE_TYPES,
        "checked": True,
        "metadata_fields": specmod.KAFKA_METADATA_FIELDS,
    }


def mapping_submit(request, draft):
    rows, columns, new_table = mapping_rows(draft, request.POST)
    ok, problems, unmapped = check_mapping(draft, rows, columns, new_table)
    context = _mapping_context(rows, columns, new_table, problems, unmapped)
    if not ok:
        return context
    values = {
        "columns": [{"field": r.field, "column": r.column, "type": r.type} for r in rows if r.include and r.column]
    }
    advance = request.POST.get("action") != "check"
    draft_save_step(draft=draft, step="mapping", values=values, advance=advance)
    if not advance:
        return {**context, "mapping_ok": True, "status": 200}
    return None


# -- 8. Review ------------------------------------------------------------------------------------------


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
    draft_update_section(draft=draft, step="clickhouse", changes={"columns": _columns_to_store(columns)})
    return None


def _default_name(draft: WizardDraft) -> str:
    if draft.pipeline_id:
        return draft.pipeline.name
    topics = draft.section("topics").get("topics", [])
    ch = draft.section("clickhouse")
    table = ch.get("new_table") or ch.get("table") or "clickhouse"
    base = f"{topics[0] if topics else 'events'}-to-{table}"
    return re.sub(r"[^A-Za-z0-9_.-]", "-", base)[:100]


def _spec_issues(error: specmod.SpecError) -> list[dict[str, str]]:
    """Each problem of the spec with the step that fixes it."""
    return [{"path": i.path, "message": i.message, "step": spec_builder.step_for_path(i.path)} for i in error.errors]


def review_context(
    request: HttpRequest, draft: WizardDraft, name: str, starting_offsets: str, live: bool
) -> dict[str, Any]:
    """The spec built from the draft, checked by the pipelines service, with each problem's step."""
    kafka = kafka_connection_of(request, draft)
    clickhouse = clickhouse_connection_of(request, draft)
    spec = spec_builder.draft_spec(draft.data, name=name or "unnamed", starting_offsets=starting_offsets)
    issues: list[dict[str, str]] = []
    warning = ""
    parsed = None
    if kafka is None or clickhouse is None:
        issues.append(
            {
                "path": "",
                "message": "Both connections are needed (steps 1 and 6).",
                "step": "kafka" if kafka is None else "clickhouse",
            }
        )
    else:
        try:
            parsed = pipeline_services.pipeline_validate(
                spec=spec,
                name=name or "unnamed",
                kafka_connection=kafka,
                clickhouse_connection=clickhouse,
                check_live=live,
            )
        except specmod.SpecError as exc:
            issues = _spec_issues(exc)
        except ApplicationError as exc:
            warning = f"Could not check against the live systems: {exc.message}"
    shown = (
        pipeline_specs.to_stored(parsed)
        if parsed is not None
        else pipeline_specs.merge_connections(
            spec, name=name or "unnamed", kafka_connection=kafka, clickhouse_connection=clickhouse
        )
    )
    if not name:
        shown = {**shown, "name": ""}
    steps_by_slug = {s.slug: s for s in STEPS}
    for issue in issues:
        issue["step_title"] = steps_by_slug[issue["step"]].title
        issue["step_number"] = SLUGS.index(issue["step"]) + 1
    return {
        "spec": spec,
        "spec_json": json.dumps(shown, indent=2),
        "issues": [i for i in issues if i["path"] != "name"],
        "name_issues": [i["message"] for i in issues if i["path"] == "name"],
        "live_warning": warning,
        "kafka_connection": kafka,
        "clickhouse_connection": clickhouse,
        "summary": review_summary(draft),
    }


def review_summary(draft: WizardDraft) -> dict[str, Any]:
    dedup = draft.section("dedup")
    ch = draft.section("clickhouse")
    transform = draft.section("transform")
    return {
        "topics": draft.section("topics").get("topics", []),
        "field_count": len(schema_fields(draft)),
        "dedup": dedup,
        "filter": transform.get("filter", ""),
        "computed": transform.get("computed", []),
        "database": ch.get("database"),
        "table": ch.get("new_table") if ch.get("table_mode") != "existing" else ch.get("table"),
        "table_mode": ch.get("table_mode"),
        "engine": ch.get("engine"),
        "order_by": ch.get("order_by", []),
        "columns": draft.section("mapping").get("columns", []),
    }


def review_show(request, draft, source):
    stored = draft.section("review")
    initial = initial_from(source, forms.ReviewForm) if source else {}
    initial.setdefault("name", stored.get("name") or _default_name(draft))
    initial.setdefault("starting_offsets", stored.get("starting_offsets") or "earliest")
    form = forms.ReviewForm(initial=initial)
    context = review_context(request, draft, initial["name"], initial["starting_offsets"], live=True)
    return {"form": form, **context}


def review_submit(request, draft):
    form = forms.ReviewForm(request.POST)
    action = request.POST.get("action", "deploy")
    if not form.is_valid():
        return {
            "form": form,
            **review_context(
                request,
                draft,
                request.POST.get("name", ""),
                request.POST.get("starting_offsets", "earliest"),
                live=False,
            ),
        }
    name = form.cleaned_data["name"].strip()
    starting = form.cleaned_data["starting_offsets"]
    draft_update_section(draft=draft, step="review", changes={"name": name, "starting_offsets": starting})
    context = review_context(request, draft, name, starting, live=True)
    context["form"] = form
    for message in context["name_issues"]:
        form.add_error("name", message)
    if context["issues"] or context["name_issues"]:
        return context
    kafka, clickhouse = context["kafka_connection"], context["clickhouse_connection"]
    # Asked for when an edit cannot continue from a running pipeline's checkpoint (see pipeline_deploy).
    checkpoint = request.POST.get("checkpoint") if request.POST.get("checkpoint") in ("keep", "fresh") else None
    try:
        with transaction.atomic():
            if draft.pipeline_id:
                pipeline = pipeline_services.pipeline_update(
                    pipeline=draft.pipeline,
                    user=request.user,
                    name=name,
                    spec=context["spec"],
                    kafka_connection=kafka,
                    clickhouse_connection=clickhouse,
                    note="edited in the wizard",
                    checkpoint=checkpoint,
                )
            else:
                pipeline = pipeline_services.pipeline_create(
                    owner=request.user,
                    name=name,
                    kafka_connection=kafka,
                    clickhouse_connection=clickhouse,
                    spec=context["spec"],
                    note="created in the wizard",
                )
            if action == "deploy" and pipeline.status != "deploy_requested":  # an edit may have redeployed it
                pipeline = pipeline_services.pipeline_deploy(
                    pipeline=pipeline, user=request.user, checkpoint=checkpoint
                )
            draft_discard(draft=draft)
    except ValidationError as exc:
        add_validation_errors(form, exc)
        return context
    except specmod.SpecError as exc:
        context["issues"] = _spec_issues(exc)
        return context
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        context["checkpoint_problems"] = exc.extra.get("checkpoint_problems", [])
        return context
    if action == "deploy":
        messages.success(request, f"Pipeline {pipeline.name} saved; deploy requested.")
    else:
        messages.success(request, f"Pipeline {pipeline.name} saved (not deployed).")
    return redirect("wizard:pipeline_detail", pk=pipeline.pk)


# -- dispatch -------------------------------------------------------------------------------------------

ShowFn = Callable[[HttpRequest, WizardDraft, MultiValueDict | None], dict[str, Any]]
SubmitFn = Callable[[HttpRequest, WizardDraft], dict[str, Any] | None]

HANDLERS: dict[str, tuple[ShowFn, SubmitFn]] = {
    "kafka": (kafka_show, kafka_submit),
    "topics": (topics_show, topics_submit),
    "sample": (sample_show, sample_submit),
    "dedup": (dedup_show, dedup_submit),
    "transform": (transform_show, transform_submit),
    "clickhouse": (clickhouse_show, clickhouse_submit),
    "mapping": (mapping_show, mapping_submit),
    "review": (review_show, review_submit),
}
